"""Issue 11: ``elizon-eval import promptfoo`` — the mapping directly, the command in process,
and one pytester run of an imported package."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import yaml

from pytest_elizon_eval import cli
from pytest_elizon_eval.importers.promptfoo import ImportFailed, case_id, convert

from .conftest import Packages

CONFIG = """
description: Support bot
prompts: ["Answer: {{question}}"]
providers: [openai:gpt-4o-mini]
defaultTest:
  vars: {tone: calm}
  assert:
    - type: latency
      threshold: 5000
tests:
  - description: Refund question
    vars: {question: Where is my refund?}
    assert:
      - type: contains
        value: Refund
      - type: icontains
        value: refund
      - type: contains-any
        value: [days, weeks]
      - type: icontains-any
        value: [DAYS]
      - type: not-contains
        value: sorry
      - type: starts-with
        value: Your
      - type: regex
        value: "\\\\d+ days"
      - type: cost
        threshold: 0.01
  - description: Refund question
    vars: {question: Give me JSON}
    assert:
      - type: is-json
        value: {type: object, required: [status]}
      - type: contains-json
      - type: equals
        value: '{"status": "ok"}'
  - description: "Tone — rubric & python!"
    vars: {question: hello}
    threshold: 0.5
    assert:
      - type: llm-rubric
        value: Is polite
        threshold: 0.8
      - type: python
        value: file://asserts/polite.py:check_polite
      - type: similar
        value: Hello there
      - type: python
        value: output.startswith("x")
      - type: contains
        value: hi
        transform: output.lower()
  - file://more_tests.csv
  - file://cases/*.jsonl
"""

CSV = """question,__expected,__description
What are your hours?,contains: 9am,Opening hours
Say ok,ok,
"""


def _write_config(folder: Path) -> Path:
    (folder / "asserts").mkdir(parents=True)
    (folder / "cases").mkdir()
    (folder / "asserts" / "polite.py").write_text(
        "def check_polite(output, context):\n"
        "    return {'pass': 'please' in output, 'score': 1.0, 'reason': 'said please'}\n")
    (folder / "more_tests.csv").write_text(CSV)
    (folder / "cases" / "a.jsonl").write_text(
        '{"description": "From JSONL", "vars": {"question": "q1"}, '
        '"assert": [{"type": "icontains", "value": "q1"}]}\n')
    config = folder / "promptfooconfig.yaml"
    config.write_text(textwrap.dedent(CONFIG))
    return config


def test_every_mapped_type_default_test_files_and_what_is_not_converted(
    tmp_path: Path
) -> None:
    config = _write_config(tmp_path / "pf")
    conversion = convert(config, tmp_path / "out")
    suite = yaml.safe_load(conversion.suite)["cases"]
    assert [c["id"] for c in suite] == ["refund-question", "refund-question-2",
                                        "tone-rubric-python", "opening-hours", "case-5",
                                        "from-jsonl"]
    first, second, tone, hours, ok, jsonl = suite
    assert first["input"] == {"tone": "calm", "question": "Where is my refund?"}
    assert first["expect"] == {
        "containsExact": ["Refund"], "contains": ["refund"], "containsAny": ["days", "weeks",
                                                                            "DAYS"],
        "notContains": ["sorry"], "startsWith": "Your", "matches": ["\\d+ days"],
        "maxCostUsd": 0.01, "maxLatencyMs": 5000}
    assert second["expect"] == {"isJson": True, "jsonSchema": {"type": "object",
                                                               "required": ["status"]},
                                "equals": '{"status": "ok"}', "maxLatencyMs": 5000}
    assert tone["expect"] == {"judge": {"rubric": "Is polite", "threshold": 0.8},
                              "checks": ["promptfoo_checks:check_1"],
                              "containsExact": ["hi"], "maxLatencyMs": 5000}
    assert hours["expect"] == {"containsExact": ["9am"], "maxLatencyMs": 5000}
    assert ok["expect"] == {"equals": "ok", "maxLatencyMs": 5000}
    assert jsonl["expect"] == {"contains": ["q1"], "maxLatencyMs": 5000}
    assert conversion.unconverted == [
        "tone-rubric-python: similar 'Hello there': no Elizon equivalent",
        "tone-rubric-python: python 'output.startswith(\"x\")': inline Python code is not "
        "converted; move it into a file (file://checks.py:function) or write a check",
        "tone-rubric-python: contains: transform='output.lower()' not converted (the "
        "assertion itself is)",
        "tone-rubric-python: threshold 0.5 (a weighted score over the assertions): not "
        "converted; in Elizon every assertion must pass",
    ]
    # each one is also a comment on its case
    assert "    # promptfoo, not converted: similar 'Hello there': no Elizon equivalent" \
        in conversion.suite.splitlines()
    assert conversion.mapped["latency"] == 6
    assert conversion.mapped["python"] == 1
    assert "entry: app:answer" in conversion.manifest
    assert "openai:gpt-4o-mini" in conversion.manifest
    assert conversion.checks is not None
    assert "'../pf/asserts/polite.py'" in conversion.checks


def test_case_ids_are_valid_and_unique() -> None:
    taken: set[str] = set()
    assert [case_id(d, i, taken) for i, d in enumerate(
        ["Hello, World!", "hello world", None, "   ", "ÄÖ only", "x" * 80])] == [
        "hello-world", "hello-world-2", "case-3", "case-4", "only", "x" * 60]


@pytest.mark.parametrize(("config", "files", "message"), [
    ("[1, 2]", {}, "not a promptfoo config"),
    ("tests: []", {}, "no tests to import"),
    ("tests: [file://../outside.csv]", {}, "is outside the config's folder"),
    ("tests: [file://t.txt]", {"t.txt": "x"}, "unsupported type .txt"),
    ("tests: [file://t.csv]", {"t.csv": 'q\n"unclosed\n'}, "t.csv:2: not CSV"),
    ("tests: [file://t.jsonl]", {"t.jsonl": "{bad\n"}, "t.jsonl:1: not JSON"),
    ("tests: [3]", {}, "tests[0]: a test must be a mapping"),
    ("tests: [{vars: [1]}]", {}, "tests[0].vars: expected a mapping"),
    ("tests: nope", {}, "is neither a test nor a file:// reference"),
    ("a: &a [*a]", {}, "config"),
    ("tests: [{assert: x}]", {}, "tests[0].assert: expected a list"),
])
def test_bad_configs_are_clear_errors(tmp_path: Path, config: str, files: dict[str, str],
                                      message: str) -> None:
    (tmp_path / "promptfooconfig.yaml").write_text(config)
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    with pytest.raises(ImportFailed, match=message.replace(".", "\\.").replace("[", "\\[")):
        convert(tmp_path / "promptfooconfig.yaml", tmp_path / "out")


def test_the_command_writes_a_package_that_runs_under_pytest(
    packages: Packages, pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _write_config(pytester.path / "pf")
    out = pytester.path / "pkg"
    assert cli.main(["import", "promptfoo", str(config), "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    assert f"imported 6 cases from {config} into {out}" in printed
    assert "  tone-rubric-python: similar 'Hello there': no Elizon equivalent" in printed
    assert cli.main(["import", "promptfoo", str(config), "-o", str(out)]) == 2
    assert "elizon.yaml exists; use --force to overwrite" in capsys.readouterr().err
    packages.write("pkg/app.py", """
        def answer(question, tone):
            if question == "Give me JSON":
                return '{"status": "ok"}'
            return f"Your refund for {question} takes 3 days, please. 9am. ok Refund q1 hi"
    """)
    packages.write("pkg/conftest.py", """
        import pytest

        @pytest.fixture(scope="session")
        def elizon_judge():
            return lambda rubric, input, output: 0.9
    """)
    manifest = out / "elizon.yaml"
    manifest.write_text("entry: app:answer\n" + manifest.read_text())
    result = pytester.runpytest("-p", "no:cacheprovider", "-rA", "pkg")
    result.assert_outcomes(passed=4, failed=2)
    result.stdout.fnmatch_lines_random([
        "PASSED pkg/suite.yaml::opening-hours", "PASSED pkg/suite.yaml::refund-question-2",
        "PASSED pkg/suite.yaml::tone-rubric-python", "PASSED pkg/suite.yaml::from-jsonl",
        "FAILED pkg/suite.yaml::case-5 - ✗ equals*",  # the CSV's plain value: equals 'ok'
        # every mapped assertion is checked: this app reports no usage for maxCostUsd
        "FAILED pkg/suite.yaml::refund-question - ✗ maxCostUsd: cost unknown*"])


def _config(folder: Path, text: str, **files: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(textwrap.dedent(content))
    config = folder / "promptfooconfig.yaml"
    config.write_text(textwrap.dedent(text))
    return config


# promptfoo's documented example reads the prompt and a var; this one also reads the test,
# the assertion's config and the provider's response, each of which promptfoo passes.
CONTEXT_ASSERT = """
def get_assert(output, context):
    print('Prompt:', context['prompt'])
    wanted = context['config']['wanted']
    checks = {
        'prompt': context['prompt'] == 'Summarise ' + context['vars']['topic'],
        'test': context['test']['description'].startswith('About'),
        'vars': context['test']['vars'] == context['vars'],
        'response': context['providerResponse']['output'] == output,
        'provider': isinstance(context['provider']['id'], str),
        'wanted': wanted in output,
    }
    failed = [name for name, ok in checks.items() if not ok]
    return {'pass': not failed, 'score': 1.0, 'reason': 'failed: ' + ', '.join(failed)}
"""


def test_python_asserts_get_the_context_promptfoo_passes(
    packages: Packages, pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _config(pytester.path / "pf", """
        prompts: ["Summarise {{topic}}"]
        defaultTest:
          assert:
            - type: python
              value: file://check.py
              config: {wanted: cats}
        tests:
          - description: About cats
            vars: {topic: cats}
          - description: About dogs
            vars: {topic: dogs}
        """, **{"check.py": CONTEXT_ASSERT})
    assert cli.main(["import", "promptfoo", str(config), "-o", str(pytester.path / "pkg")]) == 0
    assert "not converted: nothing" in capsys.readouterr().out  # config went to the function
    packages.write("pkg/app.py", "def answer(topic):\n    return f'All about {topic}'\n")
    manifest = pytester.path / "pkg" / "elizon.yaml"
    manifest.write_text("entry: app:answer\n" + manifest.read_text())
    result = pytester.runpytest("-p", "no:cacheprovider", "-rA", "pkg")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines_random([
        "PASSED pkg/suite.yaml::about-cats", "FAILED pkg/suite.yaml::about-dogs - ✗ checks*",
        "*found:    returned False — failed: wanted"])  # only what this output lacks


def test_templates_in_assertion_values_are_rendered_per_test(tmp_path: Path) -> None:
    config = _config(tmp_path, """
        defaultTest:
          assert:
            - type: icontains
              value: '{{ topic }}'
        tests:
          - description: Cats
            vars: {topic: cats, expected: Cats are mammals., user: {name: Ann}, n: 2.0}
            assert:
              - type: llm-rubric
                value: 'Describes {{topic}} accurately for {{ user.name }}'
              - type: equals
                value: '{{expected}}'
              - type: contains-any
                value: ['{{user.name}}', '{{ n }} facts', plain]
              - type: contains
                value: '{{ topic | upper }}'
              - type: not-contains
                value: '{% if topic %}dogs{% endif %}'
              - type: starts-with
                value: '{{ missing }}'
          - description: Dogs
            vars: {topic: dogs}
        """)
    conversion = convert(config, tmp_path / "out")
    cats, dogs = yaml.safe_load(conversion.suite)["cases"]
    assert cats["expect"] == {
        "judge": {"rubric": "Describes cats accurately for Ann", "threshold": 0.5},
        "equals": "Cats are mammals.", "containsAny": ["Ann", "2 facts", "plain"],
        "contains": ["cats"]}
    assert dogs["expect"] == {"contains": ["dogs"]}  # defaultTest's, with this test's vars
    assert conversion.unconverted == [
        "cats: contains '{{ topic | upper }}': the template '{{ topic | upper }}' is nunjucks "
        "the importer does not render (a filter, tag, comment or expression; it renders "
        "{{ var }} and {{ var.field }}); not converted",
        "cats: not-contains '{% if topic %}dogs{% endif %}': the template '{% if topic %}' is "
        "nunjucks the importer does not render (a filter, tag, comment or expression; it "
        "renders {{ var }} and {{ var.field }}); not converted",
        "cats: starts-with '{{ missing }}': the template '{{ missing }}' names a var the test "
        "does not have; not converted"]


def test_configs_are_read_as_yaml_1_2(tmp_path: Path) -> None:
    config = _config(tmp_path, """
        tests:
          - vars: {body: Yes, answer: no, flag: On, real: true, n: 0123, octal: 0o17,
                   t: 1:30, day: 2024-01-02, nothing: ~}
            assert:
              - type: equals
                value: Yes
        """)
    case = yaml.safe_load(convert(config, tmp_path / "out").suite)["cases"][0]
    assert case["input"] == {"body": "Yes", "answer": "no", "flag": "On", "real": True,
                             "n": 123, "octal": 15, "t": "1:30", "day": "2024-01-02",
                             "nothing": None}
    assert case["expect"] == {"equals": "Yes"}


def test_options_are_converted_or_named_with_the_tests_they_affect(tmp_path: Path) -> None:
    config = _config(tmp_path, """
        defaultTest:
          options:
            provider: openai:chat:gpt-4o-mini
            transform: output.trim()
        tests:
          - description: Graded
            vars: {topics: [a, b]}
            options: {disableVarExpansion: true, runSerially: true}
            assert:
              - type: llm-rubric
                value: Is polite
          - description: Listed
            vars: {topics: [c, d]}
            options: {transform: JSON.parse(output).answer, prefix: 'Q: '}
        """)
    conversion = convert(config, tmp_path / "out")
    assert conversion.unconverted == [
        "graded: options.transform 'output.trim()' (from defaultTest): not converted: the "
        "assertions see the output untransformed; transform it in the entry point (or read "
        "a JSON field with expect.path)",
        "graded: options.runSerially true (from the test): not converted: cases share "
        "--elizon-concurrency; give --elizon-concurrency=1 to run one at a time",
        "listed: var topics is a list: promptfoo makes one test per item; here it is one "
        "input",
        "listed: options.transform 'JSON.parse(output).answer' (from the test): not "
        "converted: the assertions see the output untransformed; transform it in the entry "
        "point (or read a JSON field with expect.path)",
        # prompts are converted now (issue 40): what is lost is the prefix on them
        "listed: options.prefix 'Q: ' (from the test): not converted: promptfoo adds it to "
        "the prompt, and the prompt versions are written without it; add it in the entry "
        "point"]
    assert conversion.mapped == {"llm-rubric": 1, "options.disableVarExpansion": 1,
                                 "options.provider": 1}
    assert yaml.safe_load(conversion.manifest)["judge"] == {
        "url": "https://api.openai.com/v1", "model": "gpt-4o-mini",
        "apiKeyEnv": "OPENAI_API_KEY"}
    # a grading provider that is no endpoint judge: named on the judged tests, no judge
    config.write_text(config.read_text().replace("openai:chat:gpt-4o-mini",
                                                 "anthropic:messages:claude"))
    conversion = convert(config, tmp_path / "out")
    assert "judge" not in yaml.safe_load(conversion.manifest)
    assert ("graded: options.provider 'anthropic:messages:claude' (from defaultTest; grades "
            "llm-rubric): not converted: only OpenAI chat models (openai:<model>) map onto an "
            "endpoint judge; bind a judge (elizon.yaml judge: or an elizon_judge fixture)"
            ) in conversion.unconverted


def test_local_refs_are_resolved(tmp_path: Path) -> None:
    config = _config(tmp_path, """
        assertionTemplates:
          polite: {type: llm-rubric, value: 'Polite about {{topic}}'}
          short: {type: not-contains, value: [sorry]}
        defaultTest:
          assert:
            - $ref: '#/assertionTemplates/short'
        tests:
          - vars: {topic: cats}
            assert:
              - $ref: '#/assertionTemplates/polite'
                threshold: 0.8
              - $ref: 'shared.yaml#/assertions/0'
          - file://more.yaml
        """, **{"more.yaml": """
        - vars: {topic: dogs}
          assert: [{$ref: '#/1/assert/0'}]  # a pointer into the test file itself
        - vars: {topic: birds}
          assert: [{type: icontains, value: '{{topic}}'}]
        """})
    conversion = convert(config, tmp_path / "out")
    cats, dogs, birds = yaml.safe_load(conversion.suite)["cases"]
    assert cats["expect"] == {"judge": {"rubric": "Polite about cats", "threshold": 0.8},
                              "notContains": ["sorry"]}
    assert dogs["expect"] == {"contains": ["dogs"], "notContains": ["sorry"]}
    assert birds["expect"] == {"contains": ["birds"], "notContains": ["sorry"]}
    assert conversion.unconverted == [
        "case-1: assertion $ref 'shared.yaml#/assertions/0': not resolved (only '#/…' "
        "pointers into the same file are); copy the assertion in"]


@pytest.mark.parametrize(("config", "message"), [
    ("tests: [{assert: [{$ref: '#/a'}]}]\na: {$ref: '#/b'}\nb: [{$ref: '#/a'}]",
     "$ref '#/a' refers to itself (through #/a -> #/b)"),
    ("tests: [{assert: [{$ref: '#/nope/0'}]}]", "$ref '#/nope/0' points at nothing"),
    ("tests: [{assert: [{$ref: '#polite'}]}]", "$ref '#polite' is not a JSON pointer"),
    ("tests: [{vars: {a: 1, a: 2}}]", "duplicate key 'a' (first at line 1); promptfoo "
                                      "refuses it too"),
    ("tests: [{options: [transform]}]", "tests[0].options: expected a mapping"),
])
def test_bad_refs_and_keys_are_clear_errors(tmp_path: Path, config: str, message: str) -> None:
    (tmp_path / "promptfooconfig.yaml").write_text(config)
    with pytest.raises(ImportFailed) as failed:
        convert(tmp_path / "promptfooconfig.yaml", tmp_path / "out")
    assert message in str(failed.value)


def test_a_package_that_would_not_load_is_an_error_and_nothing_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _config(tmp_path, "tests: [file://tests.csv]\n", **{
        "tests.csv": "question,__expected\nhours?,contains: 9am\nbroken?,regex: (unclosed\n"})
    out = tmp_path / "out"
    assert cli.main(["import", "promptfoo", str(config), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("elizon-eval import: the converted package would not load, so "
                          "nothing was written: suite.yaml:")
    assert ("(case case-2, from tests.csv:3): cases[1].expect.matches[0]: invalid regex "
            "'(unclosed'") in err
    assert not out.exists()


def test_a_test_file_that_is_a_symlink_loop_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _config(tmp_path, "tests: [file://loop.yaml]\n")
    (tmp_path / "loop.yaml").symlink_to("loop.yaml")
    assert cli.main(["import", "promptfoo", str(config), "-o", str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err == ("elizon-eval import: tests[0]: 'file://loop.yaml' is a "
                                       "symlink loop\n")


@pytest.mark.parametrize("threshold", [".inf", "-.inf", ".nan", "1.0e+999"])
def test_a_latency_or_cost_threshold_that_is_not_finite_is_named_not_converted(
        tmp_path: Path, threshold: str) -> None:
    config = tmp_path / "promptfooconfig.yaml"
    config.write_text(textwrap.dedent(f"""
        prompts: ["{{{{q}}}}"]
        tests:
          - vars: {{q: hi}}
            assert:
              - {{type: latency, threshold: {threshold}}}
              - {{type: cost, threshold: {threshold}}}
              - {{type: contains, value: hi}}
    """))
    conversion = convert(config, tmp_path / "out")
    notes = "\n".join(conversion.unconverted)
    assert notes.count("needs a finite numeric threshold") == 2
    expect = yaml.safe_load(conversion.suite)["cases"][0]["expect"]
    assert expect == {"containsExact": ["hi"]}


def test_every_llm_rubric_of_a_test_is_kept(tmp_path: Path) -> None:
    config = _config(tmp_path, """
        defaultTest:
          assert:
            - type: llm-rubric
              value: Is polite
        tests:
          - description: Tone
            vars: {q: hi}
            assert:
              - type: llm-rubric
                value: Is concise
                threshold: 0.8
              - type: llm-rubric
                value: Gives no legal advice
                metric: no-advice
              - type: llm-rubric
                value: Cites sources
                metric: not a name!
              - type: llm-rubric
                value: Is polite
          - description: One
            vars: {q: hi}
        """)
    conversion = convert(config, tmp_path / "out")
    tone, one = yaml.safe_load(conversion.suite)["cases"]
    assert tone["expect"]["judge"] == [
        {"name": "rubric-1", "rubric": "Is concise", "threshold": 0.8},
        {"name": "no-advice", "rubric": "Gives no legal advice", "threshold": 0.5},
        {"name": "rubric-3", "rubric": "Cites sources", "threshold": 0.5},
        {"name": "rubric-4", "rubric": "Is polite", "threshold": 0.5}]
    assert one["expect"]["judge"] == {"rubric": "Is polite", "threshold": 0.5}
    assert not [u for u in conversion.unconverted if "judge" in u]
