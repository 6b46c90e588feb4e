"""Issue 40: ``elizon-eval import promptfoo`` maps ``providers:`` × ``prompts:`` to the
manifest's ``variants:`` and the prompts to versions of one registry prompt
(``prompts/prompt.yaml``) — the written files directly, the command in process, and one
pytester run that collects ``case[variant]`` ids from an imported package."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest
import yaml

from pytest_elizon_eval import cli
from pytest_elizon_eval.importers.promptfoo import ImportFailed, convert, write

from .conftest import Packages

VARIANT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


def _config(folder: Path, text: str, **files: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(textwrap.dedent(content).lstrip("\n"))
    config = folder / "promptfooconfig.yaml"
    config.write_text(textwrap.dedent(text))
    return config


MATRIX = """
description: Support bot
prompts:
  - id: concise
    label: Concise
    raw: "Answer briefly: {{ question }}"
    config: {response_format: {type: text}}
  - file://prompts/long.txt
providers:
  - id: openai:gpt-4o-mini
    label: small
    config:
      temperature: 0
      max_tokens: 100
      apiKey: sk-live-SECRET1
      headers: {Authorization: Bearer SECRET2, X-Team: support}
  - openai:chat:gpt-4o
tests:
  - description: Refund
    vars: {question: Where is my refund?, tone: calm}
    assert: [{type: icontains, value: refund}]
"""

LONG = """
You are ACME support.
Answer: {{question}}
---
Short answer to {{ question }}
"""


def test_providers_times_prompts_become_variants_and_prompt_versions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _config(tmp_path / "pf", MATRIX, **{"prompts/long.txt": LONG})
    out = tmp_path / "out"
    assert cli.main(["import", "promptfoo", str(config), "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    manifest = yaml.safe_load((out / "elizon.yaml").read_text())
    small = {"model": "gpt-4o-mini", "temperature": 0, "max_tokens": 100,
             "headers": {"X-Team": "support"}}
    assert manifest["variants"] == [
        # the prompt's config goes over the provider's, as promptfoo merges them
        {"name": "small_Concise", "reference": True,
         "params": {**small, "response_format": {"type": "text"}},
         "prompts": {"prompt": "1"}},
        {"name": "small_long-1", "params": small, "prompts": {"prompt": "2"}},
        {"name": "small_long-2", "params": small, "prompts": {"prompt": "3"}},
        {"name": "openai-chat-gpt-4o_Concise",
         "params": {"model": "gpt-4o", "response_format": {"type": "text"}},
         "prompts": {"prompt": "1"}},
        {"name": "openai-chat-gpt-4o_long-1", "params": {"model": "gpt-4o"},
         "prompts": {"prompt": "2"}},
        {"name": "openai-chat-gpt-4o_long-2", "params": {"model": "gpt-4o"},
         "prompts": {"prompt": "3"}}]
    registry = yaml.safe_load((out / "prompts" / "prompt.yaml").read_text())
    # the vars of the tests are declared too, so the entry may pass every var it is given
    assert registry == {"variables": ["question", "tone"], "versions": {
        "1": "Answer briefly: {{ question }}",
        "2": "You are ACME support.\nAnswer: {{question}}",
        "3": "Short answer to {{ question }}"}}
    # the manifest says how the entry gets params and the prompt, and which pair each is
    text = (out / "elizon.yaml").read_text()
    assert "# receives a variant's params as keyword arguments beside the vars" in text
    assert "# renders the version a variant pins with the case's vars " \
        "(docs/format.md#prompts)," in text
    # the example entry takes every variant's params by name, so none reaches the prompt
    assert "#       def answer(model=None, temperature=None, max_tokens=None, " \
        "headers=None, response_format=None, **vars):" in text.splitlines()
    assert ("#   small_long-2               = providers[0] 'small' × prompts[1] "
            "(prompts/long.txt), prompt 2 (version 3)") in text.splitlines()
    assert "providers × prompts: 2 providers × 3 prompts → 6 variants in elizon.yaml " \
        "(reference: small_Concise); 3 prompt versions in prompts/prompt.yaml" in printed
    assert "imported 1 cases from" in printed
    assert "(elizon.yaml, suite.yaml, prompts/prompt.yaml)" in printed
    # credentials are named, never written or printed
    assert "  providers[0].config.apiKey: a credential, not written; the entry point reads " \
        "it from its environment" in printed
    assert "providers[0].config.headers.Authorization: a credential" in printed
    for path in out.rglob("*"):
        if path.is_file():
            assert "SECRET" not in path.read_text(), path
    assert "SECRET" not in printed


def test_one_provider_and_one_prompt_make_no_variants_and_one_version(
    tmp_path: Path
) -> None:
    config = _config(tmp_path, """
        prompts: ["Answer: {{question}}"]
        providers:
          - id: openai:gpt-4o-mini
            config: {temperature: 0.2}
        tests:
          - vars: {question: hi}
        """)
    conversion = convert(config, tmp_path / "out")
    assert "variants" not in yaml.safe_load(conversion.manifest)
    assert "openai:gpt-4o-mini" in conversion.manifest
    assert conversion.prompt_registry is not None
    assert yaml.safe_load(conversion.prompt_registry) == {
        "variables": ["question"], "versions": {"1": "Answer: {{question}}"}}
    assert "# The prompt is a version of `prompt` in prompts/prompt.yaml: the elizon_prompt " \
        "fixture" in conversion.manifest
    assert '#           return call_your_model(elizon_prompt("prompt", **vars))' \
        in conversion.manifest
    # the provider's config has nowhere to go without variants: said, not dropped silently
    assert conversion.setup_unconverted == [
        "providers[0].config {\"temperature\": 0.2}: one provider and one prompt make no "
        "variants; pass it to the model in the entry point"]
    lines = conversion.report("c.yaml", "out")
    assert "providers × prompts: 1 provider × 1 prompt → no variants; 1 prompt version in " \
        "prompts/prompt.yaml" in lines
    written = write(conversion, tmp_path / "out")
    assert [p.relative_to(tmp_path / "out").as_posix() for p in written] == [
        "elizon.yaml", "suite.yaml", "prompts/prompt.yaml"]


def test_prompt_forms_and_what_is_not_converted(tmp_path: Path) -> None:
    config = _config(tmp_path, """
        prompts:
          - prompts/plain.txt                 # a file name without file:// (read by promptfoo)
          - file://prompts/*.md
          - {raw: "file://prompts/chat.json", label: Chat}
          - file://build_prompt.py:make
          - "exec: ./make_prompt.sh"
          - "Hi {{ user.name }}"
          - "{% for m in history %}{{ m }}{% endfor %}"
          - "{{ q | upper }}"
          - "Plain {{q}} and {{ q }}"
        providers: [echo, openai:o4-mini]
        tests:
          - vars: {q: x}
        """, **{"prompts/plain.txt": "Plain file {{q}}\n", "prompts/a.md": "# A\n{{q}}\n",
                "prompts/b.md": "B {{q}}", "prompts/chat.json": '[{"role": "user"}]',
                "build_prompt.py": "def make(context): return 'x'\n"})
    conversion = convert(config, tmp_path / "out")
    assert conversion.prompt_registry is not None
    registry = yaml.safe_load(conversion.prompt_registry)
    assert registry["versions"] == {"1": "Plain file {{q}}", "2": "# A\n{{q}}\n", "3": "B {{q}}",
                                    "4": "Plain {{q}} and {{ q }}"}
    names = [v["name"] for v in yaml.safe_load(conversion.manifest)["variants"]]
    assert names == ["echo_plain", "echo_a", "echo_b", "echo_prompt-4", "openai-o4-mini_plain",
                     "openai-o4-mini_a", "openai-o4-mini_b", "openai-o4-mini_prompt-4"]
    notes = conversion.setup_unconverted
    assert notes[0] == ("providers[0] 'echo': names no model (promptfoo calls it as code, a "
                        "command, a URL or a built-in); bind the entry point (or the variant's "
                        "entry:) to what it does")
    assert notes[1:] == [
        "prompts[2] (prompts/chat.json) 'file://prompts/chat.json': a chat-format prompt "
        "(messages); a registry prompt is one text template: build the messages in the entry "
        "point",
        "prompts[3] (build_prompt.py) 'file://build_prompt.py:make': a prompt function "
        "(build_prompt.py:make) builds the prompt in code; call it from the entry point",
        "prompts[4] 'exec: ./make_prompt.sh': a command builds this prompt; run it from the "
        "entry point",
        "prompts[5] 'Hi {{ user.name }}': its template '{{ user.name }}' is nunjucks the prompt "
        "registry does not have (a filter, tag, comment, expression or var.field; it has {{ "
        "name }} variables only); render it in the entry point",
        "prompts[6] '{% for m in history %}{{ m }}{% endfor %}': its template '{% for m in "
        "history %}' is nunjucks the prompt registry does not have (a filter, tag, comment, "
        "expression or var.field; it has {{ name }} variables only); render it in the entry "
        "point",
        "prompts[7] '{{ q | upper }}': its template '{{ q | upper }}' is nunjucks the prompt "
        "registry does not have (a filter, tag, comment, expression or var.field; it has {{ "
        "name }} variables only); render it in the entry point"]
    assert (conversion.prompts, conversion.versions, conversion.variants) == (10, 4, 8)
    # each is in the manifest too, as a comment
    assert "# promptfoo, not converted: prompts[7] '{{ q | upper }}': its template" \
        in conversion.manifest


def test_templates_the_registry_would_refuse_are_not_converted(tmp_path: Path) -> None:
    config = _config(tmp_path, """
        prompts:
          - "{{{q}}}"
          - "{{\\nq}}"
          - "  "
          - "{{\\tq\\t}} {# a comment #}"
          - "{{\\tq\\t}} ok"
        tests:
          - vars: {q: x}
        """)
    conversion = convert(config, tmp_path / "out")  # the registry's own reader accepts it
    assert conversion.prompt_registry is not None
    assert yaml.safe_load(conversion.prompt_registry)["versions"] == {"1": "{{\tq\t}} ok"}
    assert [n.split(": ", 1)[1] for n in conversion.setup_unconverted] == [
        "its template '{{{q}}}' is nunjucks the prompt registry does not have (a filter, tag, "
        "comment, expression or var.field; it has {{ name }} variables only); render it in the "
        "entry point",
        "its template '{{\\nq}}' is nunjucks the prompt registry does not have (a filter, tag, "
        "comment, expression or var.field; it has {{ name }} variables only); render it in the "
        "entry point",
        "the prompt is empty; a registry version is non-empty text",
        "its template '{# a comment #}' is nunjucks the prompt registry does not have (a "
        "filter, tag, comment, expression or var.field; it has {{ name }} variables only); "
        "render it in the entry point"]


def test_provider_forms(tmp_path: Path) -> None:
    config = _config(tmp_path, """
        targets:
          - file://providers.yaml
          - {"anthropic:messages:claude-3-5-haiku": {label: haiku, config: {top_p: 0.9}}}
          - id: "https://user:pw@llm.example/v1/chat?key=SECRET"
            transform: output.trim()
            delay: 100
            env: {TOKEN_VALUE: SECRET}
            api_key: SECRET
            metadata: {owner: me, password: SECRET}
            config: {"max-tokens": 5, seed: 1}
          - id: openai:gpt-4o
            config: {temperature: 0}
          - id: openai:gpt-4o
            config: {temperature: 1}
        prompts: ["{{q}}"]
        tests:
          - vars: {q: x}
        """, **{"providers.yaml": """
        - id: bedrock:us.meta.llama3-2-90b-instruct-v1:0
          label: llama
        - ollama:chat:llama3.3
        """})
    conversion = convert(config, tmp_path / "out")
    variants = yaml.safe_load(conversion.manifest)["variants"]
    assert variants == [
        {"name": "llama", "reference": True,
         "params": {"model": "us.meta.llama3-2-90b-instruct-v1:0"}, "prompts": {"prompt": "1"}},
        {"name": "ollama-chat-llama3.3", "params": {"model": "llama3.3"},
         "prompts": {"prompt": "1"}},
        {"name": "haiku", "params": {"model": "claude-3-5-haiku", "top_p": 0.9},
         "prompts": {"prompt": "1"}},
        # a URL is shown (and named) without its user, password and query
        {"name": "https-llm.example-v1-chat", "params": {"seed": 1},
         "prompts": {"prompt": "1"}},
        {"name": "openai-gpt-4o", "params": {"model": "gpt-4o", "temperature": 0},
         "prompts": {"prompt": "1"}},
        {"name": "openai-gpt-4o-2", "params": {"model": "gpt-4o", "temperature": 1},
         "prompts": {"prompt": "1"}}]
    assert conversion.setup_unconverted == [
        "targets[2] 'https://llm.example/v1/chat': names no model (promptfoo calls it as "
        "code, a command, a URL or a built-in); bind the entry point (or the variant's entry:) "
        "to what it does",
        "targets[2].config.max-tokens: not a Python identifier, so no keyword argument can "
        "carry it",
        "targets[2].api_key: a credential, not written; the entry point reads it from its "
        "environment (e.g. $API_KEY)",
        "targets[2].metadata.password: a credential, not written; the entry point reads it "
        "from its environment (e.g. $PASSWORD)",
        "targets[2].delay 100: no Elizon equivalent (--elizon-concurrency limits the calls in "
        "flight)",
        "targets[2].env: the entry point reads its own environment (values not shown)",
        "targets[2].metadata {\"owner\": \"me\"}: no Elizon equivalent",
        "targets[2].transform 'output.trim()': the assertions see the output untransformed; "
        "transform it in the entry point"]
    assert "# promptfoo targets: llama, ollama:chat:llama3.3, haiku, " \
        "https://llm.example/v1/chat, openai:gpt-4o, openai:gpt-4o" in conversion.manifest
    assert "SECRET" not in conversion.manifest + "\n".join(conversion.setup_unconverted)


def test_a_providers_prompts_list_limits_its_variants(tmp_path: Path) -> None:
    config = _config(tmp_path, """
        prompts:
          - {raw: "Short: {{q}}", label: short}
          - {raw: "Long: {{q}}", label: long}
          - {raw: "{{ q | trim }}", label: trimmed}
          - "{{ q | lower }}"
        providers:
          - id: openai:gpt-4o
            prompts: [long]
          - id: openai:gpt-4o-mini
          - id: openai:o4-mini
            prompts: [trimmed, "{{ q | lower }}"]
        tests:
          - vars: {q: x}
        """)
    conversion = convert(config, tmp_path / "out")
    names = [v["name"] for v in yaml.safe_load(conversion.manifest)["variants"]]
    assert names == ["openai-gpt-4o_long", "openai-gpt-4o-mini_short",
                     "openai-gpt-4o-mini_long"]
    assert "providers[2] 'openai:o4-mini': its prompts were not converted, so it has no " \
        "variant" in conversion.setup_unconverted


def test_variant_names_are_valid_unique_and_short(tmp_path: Path) -> None:
    long_label = "Ä" + "very long label " * 8
    config = _config(tmp_path, f"""
        prompts: ["{{{{q}}}}"]
        providers:
          - {{id: openai:a, label: "gpt 4 / fast!!"}}
          - {{id: openai:b, label: "gpt-4-fast"}}
          - {{id: openai:c, label: "{long_label}"}}
          - {{id: openai:d, label: "{long_label} 2"}}
          - {{id: openai:e, label: "---"}}
        tests:
          - vars: {{q: x}}
        """)
    names = [v["name"] for v in
             yaml.safe_load(convert(config, tmp_path / "out").manifest)["variants"]]
    assert all(VARIANT_NAME.fullmatch(n) for n in names), names
    assert len(set(names)) == len(names) == 5
    assert names[:2] == ["gpt-4-fast", "gpt-4-fast-2"]
    assert names[2] == ("very-long-label-very-long-label-very-long-label-very-long-label"[:64])
    assert names[3] == names[2][:62] + "-2"
    assert names[4] == "variant"


def test_a_test_without_a_var_a_prompt_uses_is_noted_on_its_case(tmp_path: Path) -> None:
    config = _config(tmp_path, """
        prompts: ["Hello {{name}}: {{question}}", "Q: {{question}}"]
        tests:
          - description: Both
            vars: {name: Ann, question: hi}
          - description: No name
            vars: {question: hi}
        """)
    conversion = convert(config, tmp_path / "out")
    assert conversion.unconverted == [
        "no-name: var name (in prompt version 1) is not among this test's vars: elizon_prompt "
        "refuses to render without it, where promptfoo renders it empty"]
    # no provider: one variant per prompt, named after it
    assert [v["name"] for v in yaml.safe_load(conversion.manifest)["variants"]] == [
        "prompt-1", "prompt-2"]


@pytest.mark.parametrize(("config", "files", "message"), [
    ("providers: 3", {}, "providers: expected a provider id, a list of providers or a mapping "
                         "(id, label, config); found int"),
    ("providers: [3]", {}, "providers[0]: expected a provider id or a mapping (id, label, "
                           "config); found int"),
    ("providers: [{label: x}]", {}, "providers[0]: a provider mapping needs an 'id'"),
    ("providers: [{id: 5}]", {}, "providers[0].id: expected a provider id (text), found 5"),
    ("providers: [{id: a:b, config: [1]}]", {}, "providers[0].config: expected a mapping, "
                                                "found list"),
    ("providers: [{id: a:b, label: x}, {id: a:c, label: x}]", {},
     "providers[1].label 'x' is also providers[0]'s: each provider needs its own label"),
    ("providers: [{id: a:b, prompts: [nope]}]\nprompts: [{raw: hi, label: yes}]", {},
     "providers[0].prompts[0]: 'nope' is no prompt's label"),
    ("providers: [file://providers.yaml]", {}, "providers[0]: 'file://providers.yaml' names "
                                               "no file"),
    ("prompts: 5", {}, "prompts: expected a prompt text, a list of prompts or a mapping of "
                       "prompts to labels; found int"),
    ("prompts: [[1]]", {}, "prompts[0]: expected a prompt text, a file:// reference or a "
                           "mapping (raw, label); found list"),
    ("prompts: [{label: x}]", {}, "prompts[0]: a prompt mapping needs 'raw'"),
    ("prompts: [file://missing.txt]", {}, "prompts[0]: 'file://missing.txt' names no file"),
    # promptfoo reads a prompt ending in a prompt file's name as that file, file:// or not
    ("prompts: [missing.md]", {}, "prompts[0]: 'file://missing.md' names no file"),
    ("prompts: [file://../outside.txt]", {}, "prompts[0]: 'file://../outside.txt' is outside "
                                             "the config's folder"),
    ("prompts: [file://none*.txt]", {}, "prompts[0]: 'file://none*.txt' matches no file"),
    ("prompts: [file://empty.txt]", {"empty.txt": "---\n"}, "prompts[0] (empty.txt): "
                                                           "empty.txt holds no prompt"),
    ("prompts: [{raw: a, label: same}, {raw: b, label: same}]", {},
     "prompts[1].label 'same' is also prompts[0]'s: promptfoo refuses two prompts with one "
     "label"),
    ("prompts: {file://a.txt: [1]}", {}, "prompts['file://a.txt']: expected a label (text)"),
])
def test_bad_providers_and_prompts_are_clear_errors(tmp_path: Path, config: str,
                                                    files: dict[str, str], message: str) -> None:
    (tmp_path / "outside.txt").write_text("x")
    path = _config(tmp_path / "pf", config + "\ntests: [{vars: {q: x}}]\n", **files)
    with pytest.raises(ImportFailed) as failed:
        convert(path, tmp_path / "out")
    assert message in str(failed.value)


def test_writing_keeps_an_existing_registry_and_never_writes_through_a_link(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _config(tmp_path, """
        prompts: {"file://p.txt": Only}
        tests: [{vars: {q: x}}]
        """, **{"p.txt": "Q {{q}}"})
    out = tmp_path / "out"
    (out / "prompts").mkdir(parents=True)
    (out / "prompts" / "prompt.yaml").write_text("mine\n")
    assert cli.main(["import", "promptfoo", str(config), "-o", str(out)]) == 2
    assert "prompts/prompt.yaml exists; use --force to overwrite" in capsys.readouterr().err
    assert (out / "prompts" / "prompt.yaml").read_text() == "mine\n"
    assert not (out / "elizon.yaml").exists()
    assert cli.main(["import", "promptfoo", str(config), "-o", str(out), "--force"]) == 0
    assert yaml.safe_load((out / "prompts" / "prompt.yaml").read_text())["versions"] == {
        "1": "Q {{q}}"}
    # a prompts folder that is a link: refused even with --force (its files would land
    # wherever it points)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / "prompts").symlink_to(elsewhere)
    assert cli.main(["import", "promptfoo", str(config), "-o", str(linked), "--force"]) == 2
    assert "prompts is a symbolic link" in capsys.readouterr().err
    assert list(elsewhere.iterdir()) == []


PAIRS = """
prompts:
  - "Answer: {{question}}"
  - {raw: "Kindly answer: {{ question }}", label: kind}
providers:
  - openai:gpt-4o-mini
  - {id: openai:gpt-4o, label: large, config: {temperature: 0}}
tests:
  - description: Refund
    vars: {question: Where is my refund?}
    assert: [{type: icontains, value: "{{question}}"}]
  - description: Delay
    vars: {question: Why so slow?}
    assert: [{type: icontains, value: "{{question}}"}]
"""
VARIANTS = ("openai-gpt-4o-mini_prompt-1", "openai-gpt-4o-mini_kind", "large_prompt-1",
            "large_kind")


def _run_imported(packages: Packages, pytester: pytest.Pytester,
                  capsys: pytest.CaptureFixture[str], file: str, code: str
                  ) -> dict[tuple[str, str], tuple[list[str], str]]:
    """Import PAIRS, add ``file``, run pytest on the package: each (case, variant)'s
    rendered prompt versions and output, from the results JSON."""
    config = _config(pytester.path / "pf", PAIRS)
    assert cli.main(["import", "promptfoo", str(config), "-o",
                     str(pytester.path / "pkg")]) == 0
    capsys.readouterr()
    packages.write(f"pkg/{file}", code)
    if file == "app.py":
        manifest = pytester.path / "pkg" / "elizon.yaml"
        manifest.write_text("entry: app:answer\n" + manifest.read_text())
    result = pytester.runpytest("-p", "no:cacheprovider", "-rA", "pkg",
                                "--elizon-results=results.json")
    result.assert_outcomes(passed=8)
    result.stdout.fnmatch_lines_random([
        f"PASSED pkg/suite.yaml::{case}[{variant}]" for case in ("refund", "delay")
        for variant in VARIANTS])
    results = json.loads((pytester.path / "results.json").read_text())
    return {(c["id"], c["variant"]): ([p["version"] for p in c.get("prompts", [])],
                                      c["output"])
            for s in results["suites"] for c in s["cases"]}


def test_imported_variants_collect_as_case_variant_ids(
    packages: Packages, pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    """End to end: ``case[variant]`` ids and each variant's params as keyword arguments
    (the lead's ``variants:`` support in load/, collect/ and bind/, issue 40)."""
    outputs = _run_imported(packages, pytester, capsys, "app.py", """
        def answer(question, model, temperature=None):
            # every variant passes its model: a missing one fails the case (TypeError)
            return f"{model} at {temperature} was asked: {question}"
        """)
    assert outputs[("refund", "large_kind")] == (
        [], "gpt-4o at 0 was asked: Where is my refund?")
    assert outputs[("delay", "openai-gpt-4o-mini_prompt-1")] == (
        [], "gpt-4o-mini at None was asked: Why so slow?")


CONFTEST = """
import pytest

def call_your_model(model, prompt):
    return f"{model} was asked: {prompt}"

# as the imported elizon.yaml's comment shows it
@pytest.fixture
def elizon_entry(elizon_prompt):
    def answer(model=None, temperature=None, **vars):
        return call_your_model(model, elizon_prompt("prompt", **vars))
    return answer
"""


def test_imported_prompts_render_per_variant_through_elizon_prompt(
    packages: Packages, pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    """End to end: the manifest comment's ``elizon_entry`` renders the version each variant
    pins (needs the ``elizon_prompt`` fixture registered by the plugin, issue 40)."""
    outputs = _run_imported(packages, pytester, capsys, "conftest.py", CONFTEST)
    assert outputs[("refund", "large_kind")] == (
        ["2"], "gpt-4o was asked: Kindly answer: Where is my refund?")
    assert outputs[("delay", "openai-gpt-4o-mini_prompt-1")] == (
        ["1"], "gpt-4o-mini was asked: Answer: Why so slow?")


# The review's provider config (issue 40): a credential under a key the importer did not
# know, and a URL with a login and a token in its query.
REVIEWED_CONFIG = ('{basicAuth: "user:PWPWPWPW", '
                   'base_url: "https://u:p4ssw0rd@h.example/v1?token=QUERYSECRET"}')
REVIEWED_SECRETS = ("PWPWPWPW", "p4ssw0rd", "QUERYSECRET")


@pytest.mark.parametrize("matrix", [True, False], ids=["variants", "one-pair"])
def test_credentials_and_url_logins_in_a_providers_config_are_never_written_or_printed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], matrix: bool
) -> None:
    prompts = '["Answer: {{question}}", "Briefly: {{question}}"]' if matrix \
        else '["Answer: {{question}}"]'
    config = _config(tmp_path / "pf", f"""
        prompts: {prompts}
        providers:
          - id: openai:gpt-4o-mini
            config: {REVIEWED_CONFIG}
        tests:
          - vars: {{question: hi}}
        """)
    out = tmp_path / "out"
    assert cli.main(["import", "promptfoo", str(config), "-o", str(out)]) == 0
    captured = capsys.readouterr()
    printed = captured.out + captured.err
    written = {p.relative_to(out).as_posix(): p.read_text() for p in out.rglob("*")
               if p.is_file()}
    assert set(written) == {"elizon.yaml", "suite.yaml", "prompts/prompt.yaml"}
    for secret in REVIEWED_SECRETS:
        assert secret not in printed, secret
        for name, text in written.items():
            assert secret not in text, (secret, name)
    # the credential is named (its key only), with how to supply it, in the report and
    # as a comment in elizon.yaml; the URL is written without its login and query, and said
    credential = ("providers[0].config.basicAuth: a credential, not written; the entry "
                  "point reads it from its environment (e.g. $BASIC_AUTH)")
    url = ("providers[0].config.base_url: a URL: its user, password, query and fragment "
           "are left out ('https://h.example/v1')")
    assert f"  {credential}" in printed.splitlines()
    assert f"  {url}" in printed.splitlines()
    manifest = written["elizon.yaml"]
    assert f"# promptfoo, not converted: {credential}" in manifest.splitlines()
    assert f"# promptfoo, not converted: {url}" in manifest.splitlines()
    if matrix:
        params = [v["params"] for v in yaml.safe_load(manifest)["variants"]]
        assert params == [{"model": "gpt-4o-mini", "base_url": "https://h.example/v1"}] * 2
    else:  # no variants: the config is only listed, as written would be
        assert ("  providers[0].config {\"base_url\": \"https://h.example/v1\"}: one provider "
                "and one prompt make no variants; pass it to the model in the entry point"
                ) in printed.splitlines()


def test_urls_anywhere_in_params_and_provider_ids_lose_their_login_and_query(
    tmp_path: Path
) -> None:
    config = _config(tmp_path, """
        prompts: ["{{q}}"]
        providers:
          - id: openai:gpt-4o
            config:
              endpoints: [{url: "wss://a:S1@[::1]:8443/Stream?k=S2#S3"}]
              system: "Docs: https://u:S4@Docs.example/p?k=S5 and more"
              plain: https://h.example/v1
          # a password holding '/' (no port to parse) is still a login
          - "https://user:pa/S6@llm.example/v1?key=S7"
        tests:
          - vars: {q: x}
        """)
    conversion = convert(config, tmp_path / "out")
    variants = yaml.safe_load(conversion.manifest)["variants"]
    assert variants[0]["params"] == {
        "model": "gpt-4o", "endpoints": [{"url": "wss://[::1]:8443/Stream"}],
        "system": "Docs: https://Docs.example/p and more", "plain": "https://h.example/v1"}
    assert variants[1]["name"] == "https-llm.example-v1"
    assert conversion.setup_unconverted == [
        "providers[0].config.endpoints[0].url: a URL: its user, password, query and fragment "
        "are left out ('wss://[::1]:8443/Stream')",
        "providers[0].config.system: a URL: its user, password, query and fragment are left "
        "out ('Docs: https://Docs.example/p and more')",
        "providers[1] 'https://llm.example/v1': names no model (promptfoo calls it as code, a "
        "command, a URL or a built-in); bind the entry point (or the variant's entry:) to "
        "what it does"]
    everything = conversion.manifest + "\n".join(conversion.report("c.yaml", "out"))
    assert not re.search(r"S[1-7]\b", everything)


def test_a_grading_providers_credentials_are_not_shown(tmp_path: Path) -> None:
    config = _config(tmp_path, """
        defaultTest:
          options:
            provider: {id: openai:gpt-4o, config: {apiKey: sk-GRADER}}
        tests:
          - vars: {q: x}
            assert: [{type: llm-rubric, value: polite}]
        """)
    conversion = convert(config, tmp_path / "out")
    assert conversion.unconverted == [
        "case-1: options.provider {\"id\": \"openai:gpt-4o\", \"config\": {\"apiKey\": \"…\"}} "
        "(from defaultTest; grades llm-rubric): not converted: its config cannot be carried "
        "by an endpoint judge; bind a judge (elizon.yaml judge: or an elizon_judge fixture)"]
    assert "GRADER" not in conversion.suite


def test_a_python_asserts_context_holds_no_credential(tmp_path: Path) -> None:
    config = _config(tmp_path / "pf", """
        defaultTest:
          options:
            provider: {id: openai:gpt-4o, config: {apiKey: sk-GRADER}}
        tests:
          - vars: {q: x, url: "https://a.example/?page=2"}
            assert: [{type: python, value: file://c.py, config: {token: TOKEN1, n: 1}}]
        """, **{"c.py": "def get_assert(output, context):\n    return True\n"})
    conversion = convert(config, tmp_path / "out")
    assert conversion.checks is not None
    assert "sk-GRADER" not in conversion.checks
    assert "TOKEN1" not in conversion.checks
    # the vars are the case's input (written in the suite too): as they are
    assert '"url": "https://a.example/?page=2"' in conversion.checks
    assert conversion.unconverted == [
        f"case-1: python assert context, {where}: a credential, not written; the check "
        f"reads it from its environment (e.g. ${env})"
        for where, env in (("test.assert[0].config.token", "TOKEN"),
                           ("test.options.provider.config.apiKey", "API_KEY"),
                           ("config.token", "TOKEN"))]


def test_which_config_keys_are_credentials(tmp_path: Path) -> None:
    config = _config(tmp_path, """
        prompts: ["{{q}}"]
        providers:
          - id: openai:a
            config:
              headers: {Cookie: c, X-Auth: a, Proxy-Authorization: p, X-Api-Key: k, X-Team: t}
              tokenUrl: u
              oauth: {client_id: i}
              passwd: p
              max_tokens: 1
              maxNewTokens: 2
              author: me
              authority: x
          - openai:b
        tests:
          - vars: {q: x}
        """)
    conversion = convert(config, tmp_path / "out")
    assert yaml.safe_load(conversion.manifest)["variants"][0]["params"] == {
        "model": "a", "headers": {"X-Team": "t"}, "max_tokens": 1, "maxNewTokens": 2,
        "author": "me", "authority": "x"}
    assert [n.split(":")[0] for n in conversion.setup_unconverted] == [
        f"providers[0].config.{key}" for key in (
            "headers.Cookie", "headers.X-Auth", "headers.Proxy-Authorization",
            "headers.X-Api-Key", "tokenUrl", "oauth", "passwd")]


def test_the_suggested_entry_compiles_when_a_param_is_a_python_keyword(
    tmp_path: Path
) -> None:
    config = _config(tmp_path, """
        prompts: ["Answer: {{question}}"]
        providers:
          - {id: openai:a, config: {class: 5, vars: 1, match: x, temperature: 0}}
          - {id: openai:b, config: {None: 2}}
        tests:
          - vars: {question: hi}
        """)
    manifest = convert(config, tmp_path / "out").manifest
    lines = manifest.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("#       def answer("))
    end = lines.index("#       return answer")
    source = "\n".join(line[len("#       "):] for line in lines[start:end])
    code = compile(source, "elizon.yaml", "exec")  # a keyword parameter: SyntaxError
    # soft keywords (match, type, case) may name a parameter
    assert source.splitlines()[0] == "def answer(model=None, match=None, temperature=None, " \
        "**vars):"
    # as the plugin calls it: a variant's params as keyword arguments beside the vars;
    # the prompt gets only the vars (it refuses an undeclared one)
    rendered: list[dict[str, object]] = []
    scope = {"elizon_prompt": lambda name, **vars: rendered.append(vars) or "prompt",
             "call_your_model": lambda model, prompt: f"{model}: {prompt}"}
    exec(code, scope)
    answer = scope["answer"]
    assert answer(model="a", temperature=0, match="x", question="hi",  # type: ignore[operator]
                  **{"class": 5, "vars": 1, "None": 2}) == "a: prompt"
    assert rendered == [{"question": "hi"}]
    # the comment says where such a param arrives
    assert "#           # None, class, vars: no parameter can be named so; they arrive in " \
        "**vars (and the elizon_variant fixture's params)" in lines
