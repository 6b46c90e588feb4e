"""The versioned prompt registry (docs/format.md#prompts): prompts/NAME.yaml read and checked,
rendered by the elizon_prompt fixture into what a case's application sees and its result
records, and the elizon-eval prompts verbs (docs/cli.md#prompts)."""

from __future__ import annotations

import hashlib
import json
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_elizon_eval.collect.prompt_fixture import PromptRenderer
from pytest_elizon_eval.decide.results_data import PromptRecord
from pytest_elizon_eval.errors import ElizonError
from pytest_elizon_eval.load.prompts import PromptRegistry, load_registry

from .conftest import Packages, elizon_eval, validate_results

SUPPORT = """
variables: [question, name]
versions:
  1: "Answer the customer: {{question}}"
  "2": |
    You are the helpdesk of ACME. Greet {{ name }} and answer: {{question}}
"""
V1 = "Answer the customer: {{question}}"
V2 = "You are the helpdesk of ACME. Greet {{ name }} and answer: {{question}}\n"


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _write(folder: Path, relative: str, text: str) -> Path:
    path = folder / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def _registry(folder: Path) -> PromptRegistry:
    return load_registry(folder, lambda path: path.relative_to(folder.parent).as_posix())


def _problems(folder: Path) -> list[str]:
    with pytest.raises(ElizonError) as caught:
        _registry(folder)
    return caught.value.lines


@pytest.fixture
def pkg(tmp_path: Path) -> Path:
    """A package folder with prompts/support.yaml."""
    folder = tmp_path / "pkg"
    _write(folder, "elizon.yaml", "name: pkg\n")
    _write(folder, "prompts/support.yaml", SUPPORT)
    return folder


# -- the registry ----------------------------------------------------------------------------

def test_versions_in_file_order_the_last_the_default_each_hashed_as_its_text(pkg: Path) -> None:
    _write(pkg, "prompts/triage.yaml", 'versions:\n  v1: "Route this ticket."\n')
    _write(pkg, "prompts/dotted.yaml", 'versions:\n  1.10: "ten"\n')
    (pkg / "prompts/README.md").write_text("not a prompt", encoding="utf-8")
    (pkg / "prompts/.support.yaml").write_text("{{", encoding="utf-8")  # an editor's: hidden
    registry = _registry(pkg)
    assert registry.names() == ("dotted", "support", "triage")
    assert registry.versions("dotted") == ("1.10",)  # the key's text, never the number 1.1
    # `1:` is the version "1", as written (docs/format.md#yaml-reading: keys are text)
    assert registry.versions("support") == ("1", "2")
    assert registry.template("support") == V2
    assert registry.template("support", "1") == V1
    assert registry.record("support") == PromptRecord("support", "2", _sha(V2))
    assert registry.record("support", "1").sha256 == _sha(V1)
    assert registry.prompt("support").variables == ("question", "name")
    assert registry.prompt("triage").variables == ()


def test_a_package_without_prompts_has_an_empty_registry(tmp_path: Path) -> None:
    registry = _registry(tmp_path / "pkg")
    assert registry.names() == ()
    with pytest.raises(ElizonError) as caught:
        registry.render("support", None, {})
    assert caught.value.lines == [
        "ELIZON_PROMPT_INVALID: pkg/prompts: no prompt 'support'; the package has no prompts "
        "(files prompts/NAME.yaml)"]


def test_rendering_replaces_each_variable_once_with_the_value_as_is(pkg: Path) -> None:
    registry = _registry(pkg)
    rendered = registry.render("support", None, {"question": "Where is {{name}}?", "name": 7})
    # a value holding {{name}} is text, never a template read again; values are str()'d
    assert rendered.text == ("You are the helpdesk of ACME. Greet 7 and answer: "
                             "Where is {{name}}?\n")
    assert rendered.record == PromptRecord("support", "2", _sha(V2))
    # a declared variable the version does not use may be given (callers give them all)
    assert registry.render("support", "1", {"question": "q", "name": "Ann"}).text == \
        "Answer the customer: q"


@pytest.mark.parametrize(("call", "message"), [
    (("support", "2", {"question": "q"}),
     "pkg/prompts/support.yaml:4: prompt 'support' version '2': variable 'name' is used by the "
     "template and was not given; given: question"),
    (("support", "1", {"question": "q", "nme": "Ann"}),
     "pkg/prompts/support.yaml:1: prompt 'support' version '1': variable 'nme' is not declared "
     "(did you mean 'name'?); declared: question, name"),
    (("suport", None, {}),
     "pkg/prompts: no prompt 'suport' (did you mean 'support'?); known: support"),
    (("support", "3", {}),
     "pkg/prompts/support.yaml: prompt 'support' has no version '3'; its versions: 1, 2"),
])
def test_a_render_that_cannot_be_made_says_which_prompt_version_and_variable(
        pkg: Path, call: tuple[str, str | None, dict[str, object]], message: str) -> None:
    registry = _registry(pkg)
    with pytest.raises(ElizonError) as caught:
        registry.render(*call)
    assert caught.value.lines == [f"ELIZON_PROMPT_INVALID: {message}"]


def test_every_problem_of_a_prompt_file_at_its_line(pkg: Path) -> None:
    _write(pkg, "prompts/support.yaml", """
        variables: [question, question, 3x]
        versions:
          "1": "Hello {{nmae}} {{ name | upper }}"
          1: "the same version again"
          "2": 3
          "3": ""
          "4": "{{{question}}}"
          "bad label!": "x"
        extra: 1
        """)
    assert _problems(pkg) == [
        "ELIZON_PROMPT_INVALID: pkg/prompts/support.yaml:1: variables[1]: 'question' is "
        "declared twice",
        "ELIZON_PROMPT_INVALID: pkg/prompts/support.yaml:1: variables[2]: a variable is a name "
        "of letters, digits and '_' not starting with a digit, found the text '3x'",
        "ELIZON_PROMPT_INVALID: pkg/prompts/support.yaml:3: versions['1']: the template uses "
        "{{nmae}}, which is not declared in variables; declared: question",
        "ELIZON_PROMPT_INVALID: pkg/prompts/support.yaml:3: versions['1']: '{{ name | upper }}' "
        "is not a variable: a template holds {{name}} (spaces allowed inside the braces) and "
        "no other {{ syntax",
        "ELIZON_PROMPT_INVALID: pkg/prompts/support.yaml:4: duplicate key '1' (first at line 3)",
        "ELIZON_PROMPT_INVALID: pkg/prompts/support.yaml:5: versions['2']: expected the "
        "template as text, found the number 3",
        "ELIZON_PROMPT_INVALID: pkg/prompts/support.yaml:6: versions['3']: the template is "
        "empty",
        "ELIZON_PROMPT_INVALID: pkg/prompts/support.yaml:7: versions['4']: '{{{question}}}' is "
        "not a variable: a template holds {{name}} (spaces allowed inside the braces) and no "
        "other {{ syntax",
        "ELIZON_PROMPT_INVALID: pkg/prompts/support.yaml:8: versions['bad label!']: a version "
        "is letters, digits, '_', '.' or '-', starting with a letter or digit, at most 64 "
        "characters",
        "ELIZON_PROMPT_INVALID: pkg/prompts/support.yaml:9: unknown key 'extra'; allowed here: "
        "variables, versions",
    ]


@pytest.mark.parametrize(("text", "message"), [
    ("variables: [name]\nversions: {}\n",
     "support.yaml:2: versions: is empty; a prompt has at least one version"),
    ("variables: [name]\nversions:\n  - Hello {{name}}\n",
     "support.yaml:2: versions: expected a mapping of version to template, found a list"),
    ("variables: [name]\n",
     "support.yaml:1: missing required key 'versions'"),
    ("- Hello\n",
     "support.yaml: a prompt file must be a mapping with 'versions' (and 'variables'), "
     "found a list"),
    ("variables: name\nversions: {'1': hi}\n",
     "support.yaml:1: variables: expected a list of names, found the text 'name'"),
    ("versions:\n  '1': 'Hi {{name}}'\n",
     "support.yaml:2: versions['1']: the template uses {{name}}, which is not declared in "
     "variables; declared: none"),
    ("versions:\n  '1': [Hi]\n",
     "support.yaml:2: versions['1']: expected the template as text, found a list"),
    ("versions: {'1': no}\n",  # the file's reading problems come first, at their lines
     "support.yaml:1: unquoted 'no' is read by YAML 1.1 as boolean false; quote it ('no') if "
     "you mean the text"),
])
def test_a_prompt_file_of_the_wrong_shape(pkg: Path, text: str, message: str) -> None:
    _write(pkg, "prompts/support.yaml", text)
    assert _problems(pkg)[0] == f"ELIZON_PROMPT_INVALID: pkg/prompts/{message}"


def test_prompt_file_names(pkg: Path) -> None:
    _write(pkg, "prompts/-bad.yaml", "versions: {'1': x}\n")
    _write(pkg, "prompts/other.yml", "versions: {'1': x}\n")
    assert _problems(pkg) == [
        "ELIZON_PROMPT_INVALID: pkg/prompts/-bad.yaml: prompt name '-bad' (the file's name) "
        "must be letters, digits, '_', '.' or '-', starting with a letter or digit, at most 64 "
        "characters",
        "ELIZON_PROMPT_INVALID: pkg/prompts/other.yml: a prompt file is named NAME.yaml; "
        "rename it",
    ]


def test_a_prompt_that_resolves_outside_the_package_is_refused(pkg: Path, tmp_path: Path
                                                                ) -> None:
    outside = _write(tmp_path, "elsewhere/leak.yaml", "versions: {'1': 'secret'}\n")
    (pkg / "prompts/leak.yaml").symlink_to(outside)
    inside = _write(pkg, "shared/kept.yaml", "versions: {'1': 'kept'}\n")
    (pkg / "prompts/kept.yaml").symlink_to(inside)  # a link inside the package is a file
    assert _problems(pkg) == [
        "ELIZON_PROMPT_INVALID: pkg/prompts/leak.yaml: is a symbolic link that resolves "
        "outside the package folder; a package's prompts ship inside it"]
    (pkg / "prompts/leak.yaml").unlink()
    assert _registry(pkg).template("kept") == "kept"
    # the folder itself, too
    other = tmp_path / "other"
    _write(other, "elizon.yaml", "name: other\n")
    (other / "prompts").symlink_to(outside.parent, target_is_directory=True)
    assert _problems(other) == [
        "ELIZON_PROMPT_INVALID: other/prompts: is a symbolic link that resolves outside the "
        "package folder; a package's prompts ship inside it"]


def test_diff_is_a_unified_diff_between_two_versions(pkg: Path) -> None:
    registry = _registry(pkg)
    assert registry.diff("support", "1", "2") == (
        "--- support@1\n"
        "+++ support@2\n"
        "@@ -1 +1 @@\n"
        "-Answer the customer: {{question}}\n"
        "\\ No newline at end of file\n"
        "+You are the helpdesk of ACME. Greet {{ name }} and answer: {{question}}\n")
    assert registry.diff("support", "2", "2") == ""
    with pytest.raises(ElizonError, match="has no version '9'; its versions: 1, 2"):
        registry.diff("support", "1", "9")


# -- the renderer ----------------------------------------------------------------------------

def test_any_variable_name_is_a_keyword_and_a_pin_or_an_explicit_version_chooses(
        pkg: Path) -> None:
    _write(pkg, "prompts/odd.yaml", """
        variables: [prompt, self, version]
        versions: {"1": "{{prompt}} {{self}} {{version}}"}
        """)
    noted: list[PromptRecord] = []
    render = PromptRenderer(_registry(pkg), {"support": "1"}, "old", noted)
    assert render("odd", prompt="p", self="s", version="v") == "p s v"
    assert render("support", question="q", name="Ann") == "Answer the customer: q"  # pinned
    assert render("support@2", question="q", name="Ann").startswith("You are the helpdesk")
    assert render("support", question="again", name="Ann") == "Answer the customer: again"
    # each prompt version once, in the order first rendered
    assert [(r.name, r.version) for r in noted] == [("odd", "1"), ("support", "1"),
                                                   ("support", "2")]
    assert render.records == tuple(noted)
    with pytest.raises(ElizonError) as caught:
        PromptRenderer(_registry(pkg), {"support": "9"}, "old")("support", question="q")
    assert caught.value.lines == [
        "ELIZON_PROMPT_INVALID: pkg/prompts/support.yaml: prompt 'support' has no version "
        "'9', which variant 'old' pins; its versions: 1, 2"]


# -- the fixture, as a package uses it -------------------------------------------------------

#: Registers the fixture in the inner runs whether or not the plugin does already (pytest
#: skips a plugin module registered before).
PLUGIN = 'pytest_plugins = ["pytest_elizon_eval.collect.prompt_fixture"]\n'
ENTRY_CONFTEST = PLUGIN + """
import pytest

@pytest.fixture
def elizon_entry(elizon_prompt):
    # kept by the entry and called for each input, at the case's call
    def answer(text):
        said = elizon_prompt("support", question=text, name="Ann")
        elizon_prompt("support", question="again", name="Ann")  # recorded once
        return "MODEL SAW: " + said
    return answer
"""
SUITE = """
cases:
  - id: parcel
    input: where is my parcel
    expect:
      contains: ["MODEL SAW", "where is my parcel"]
"""


def _cases(results: Path) -> list[dict[str, object]]:
    data = json.loads(results.read_text(encoding="utf-8"))
    return [case for suite in data["suites"] for case in suite["cases"]]


def test_a_case_renders_through_its_entry_and_its_result_records_the_prompt(
        packages: Packages, pytester: pytest.Pytester) -> None:
    packages.package(suite=SUITE, entry=None)
    packages.write("pkg/prompts/support.yaml", SUPPORT)
    pytester.makeconftest(ENTRY_CONFTEST)
    result = pytester.runpytest("--elizon-results=results.json")
    result.assert_outcomes(passed=1)
    [case] = _cases(pytester.path / "results.json")
    assert case["output"] == ("MODEL SAW: You are the helpdesk of ACME. Greet Ann and answer: "
                              "where is my parcel\n")
    assert case["prompts"] == [{"name": "support", "version": "2", "sha256": _sha(V2)}]
    # the run's provenance names every prompt text its package's cases were scored with
    data = json.loads((pytester.path / "results.json").read_text(encoding="utf-8"))
    validate_results(data)
    [package] = data["provenance"]["packages"]
    assert package["prompts"] == case["prompts"]


def test_each_variant_renders_the_version_it_pins(packages: Packages,
                                                  pytester: pytest.Pytester) -> None:
    packages.package(suite=SUITE, entry=None)
    packages.write("pkg/elizon.yaml", """
        name: pkg
        variants:
          - name: new
          - name: old
            prompts: {support: "1"}
        evaluation:
          suite: ./eval/suite.yaml
        """)
    packages.write("pkg/prompts/support.yaml", SUPPORT)
    pytester.makeconftest(ENTRY_CONFTEST)
    pytester.runpytest("--elizon-results=results.json").assert_outcomes(passed=2)
    found = {case["variant"]: (case["prompts"], case["output"])
             for case in _cases(pytester.path / "results.json")}
    assert found == {
        "new": ([{"name": "support", "version": "2", "sha256": _sha(V2)}],
                "MODEL SAW: You are the helpdesk of ACME. Greet Ann and answer: "
                "where is my parcel\n"),
        "old": ([{"name": "support", "version": "1", "sha256": _sha(V1)}],
                "MODEL SAW: Answer the customer: where is my parcel"),
    }


def test_a_bad_prompt_file_is_the_case_error_and_a_bad_render_fails_it(
        packages: Packages, pytester: pytest.Pytester) -> None:
    packages.package(suite=SUITE, entry=None)
    packages.write("pkg/prompts/support.yaml", SUPPORT.replace("{{ name }}", "{{ nmae }}"))
    pytester.makeconftest(ENTRY_CONFTEST)
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([
        "ELIZON_PROMPT_INVALID: pkg/prompts/support.yaml:4: versions['2']: the template uses "
        "{{nmae}}, which is not declared in variables (did you mean 'name'?); declared: "
        "question, name"])
    assert "Traceback" not in result.stdout.str()
    # a render the entry asks for wrongly fails the case, saying why
    packages.write("pkg/prompts/support.yaml", SUPPORT)
    pytester.makeconftest(ENTRY_CONFTEST.replace(', name="Ann")', ")", 1))
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "*the entry point raised ElizonError: ELIZON_PROMPT_INVALID: pkg/prompts/support.yaml:"
        "4: prompt 'support' version '2': variable 'name' is used by the template and was not "
        "given; given: question"])


def test_a_python_test_renders_its_nearest_packages_prompts(pytester: pytest.Pytester) -> None:
    _write(pytester.path, "pkg/elizon.yaml", "name: pkg\n")
    _write(pytester.path, "pkg/prompts/support.yaml", SUPPORT)
    pytester.makeconftest(PLUGIN)
    _write(pytester.path, "pkg/tests/test_wording.py", """
        def test_greets(elizon_prompt):
            text = elizon_prompt("support", question="q", name="Ann")
            assert text.startswith("You are the helpdesk of ACME. Greet Ann")
            assert [r.version for r in elizon_prompt.records] == ["2"]
        """)
    _write(pytester.path, "loose/test_loose.py", """
        def test_nowhere(elizon_prompt):
            pass
        """)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines([
        "*ELIZON_PROMPT_INVALID: loose/test_loose.py: elizon_prompt renders a package's "
        "prompts, and there is no elizon.yaml in this test's folder or any folder above it"])


# -- elizon-eval prompts ---------------------------------------------------------------------

def _cli(pkg: Path) -> Callable[..., tuple[int, str, str]]:
    def run(*args: str) -> tuple[int, str, str]:
        done = elizon_eval("prompts", *args, cwd=pkg.parent)
        return done.returncode, done.stdout, done.stderr
    return run


def test_prompts_list_show_diff_render(pkg: Path) -> None:
    _write(pkg, "prompts/triage.yaml", 'versions:\n  v1: "Route this ticket."\n')
    run = _cli(pkg)
    assert run("list", "--package", "pkg") == (0, (
        "support  pkg/prompts/support.yaml  variables: question, name\n"
        f"  1  sha256:{_sha(V1)[:12]}\n"
        f"  2  sha256:{_sha(V2)[:12]}  default\n"
        "triage  pkg/prompts/triage.yaml  variables: none\n"
        f"  v1  sha256:{_sha('Route this ticket.')[:12]}  default\n"), "")
    assert run("show", "support@1", "--package", "pkg") == (0, (
        f"support@1  sha256:{_sha(V1)}  pkg/prompts/support.yaml:3\n"
        "uses: question\n\n"
        "Answer the customer: {{question}}\n"), "")
    assert run("show", "support", "--package", "pkg/elizon.yaml")[1].startswith(
        f"support@2 (default)  sha256:{_sha(V2)}  pkg/prompts/support.yaml:4\n"
        "uses: name, question\n\nYou are the helpdesk")
    assert run("diff", "support", "1", "2", "--package", "pkg") == (
        0, _registry(pkg).diff("support", "1", "2"), "")
    assert run("render", "support", "--var", "question=a=b", "--var", "name=Ann",
               "--package", "pkg") == (
        0, "You are the helpdesk of ACME. Greet Ann and answer: a=b\n", "")


@pytest.mark.parametrize(("args", "error"), [
    (("render", "support@1", "--package", "pkg"),
     "elizon-eval prompts: ELIZON_PROMPT_INVALID: pkg/prompts/support.yaml:3: prompt "
     "'support' version '1': variable 'question' is used by the template and was not given; "
     "given: none"),
    (("render", "support@1", "--var", "question=q", "--var", "nme=x", "--package", "pkg"),
     "elizon-eval prompts: ELIZON_PROMPT_INVALID: pkg/prompts/support.yaml:1: prompt "
     "'support' version '1': variable 'nme' is not declared (did you mean 'name'?); "
     "declared: question, name"),
    (("render", "support", "--var", "question=q", "--var", "question=r", "--package", "pkg"),
     "elizon-eval prompts: --var question is given twice"),
    (("render", "support", "--var", "question", "--package", "pkg"),
     "elizon-eval prompts render: error: argument --var: expected NAME=VALUE, found "
     "'question'"),
    (("show", "support@3", "--package", "pkg"),
     "elizon-eval prompts: ELIZON_PROMPT_INVALID: pkg/prompts/support.yaml: prompt 'support' "
     "has no version '3'; its versions: 1, 2"),
    (("list",),
     "elizon-eval prompts: the current folder is not a package (no elizon.yaml in it); name "
     "the package folder with --package DIR"),
])
def test_prompts_refuses_with_one_line_and_exit_2(pkg: Path, args: tuple[str, ...],
                                                  error: str) -> None:
    status, out, err = _cli(pkg)(*args)
    assert (status, out) == (2, "")
    assert err.splitlines()[-1] == error


def test_prompts_prints_each_problem_on_its_own_line(pkg: Path) -> None:
    _write(pkg, "prompts/support.yaml", """
        variables: [question, question]
        versions:
          "1": "Hi {{nmae}}"
        """)
    status, out, err = _cli(pkg)("list", "--package", "pkg")
    assert (status, out) == (2, "")
    # as docs/format.md#prompts shows them: one a line, each as the command's error line
    assert err.splitlines() == [
        "elizon-eval prompts: ELIZON_PROMPT_INVALID: pkg/prompts/support.yaml:1: "
        "variables[1]: 'question' is declared twice",
        "elizon-eval prompts: ELIZON_PROMPT_INVALID: pkg/prompts/support.yaml:3: "
        "versions['1']: the template uses {{nmae}}, which is not declared in variables; "
        "declared: question"]
    _write(pkg, "prompts/support.yaml", SUPPORT)
    status, out, err = _cli(pkg)("render", "support", "--var", "nme=x", "--package", "pkg")
    assert (status, out) == (2, "")
    assert err.splitlines() == [
        "elizon-eval prompts: ELIZON_PROMPT_INVALID: pkg/prompts/support.yaml:1: prompt "
        "'support' version '2': variable 'nme' is not declared (did you mean 'name'?); "
        "declared: question, name",
        "elizon-eval prompts: ELIZON_PROMPT_INVALID: pkg/prompts/support.yaml:4: prompt "
        "'support' version '2': variable 'name' is used by the template and was not given; "
        "given: nme",
        "elizon-eval prompts: ELIZON_PROMPT_INVALID: pkg/prompts/support.yaml:4: prompt "
        "'support' version '2': variable 'question' is used by the template and was not "
        "given; given: nme"]


def test_a_linked_prompts_folder_is_named_by_its_link_in_the_command_and_in_pytest(
        packages: Packages, pytester: pytest.Pytester) -> None:
    packages.package(suite=SUITE, entry=None)
    bad = SUPPORT.replace("{{ name }}", "{{ nmae }}")
    packages.write("pkg/ext/prompts/support.yaml", bad)
    folder = pytester.path / "pkg"
    (folder / "prompts").symlink_to(folder / "ext" / "prompts", target_is_directory=True)
    error = ("ELIZON_PROMPT_INVALID: pkg/prompts/support.yaml:4: versions['2']: the template "
             "uses {{nmae}}, which is not declared in variables (did you mean 'name'?); "
             "declared: question, name")
    pytester.makeconftest(ENTRY_CONFTEST)
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([error])
    run = _cli(folder)
    assert run("list", "--package", "pkg") == (2, "", f"elizon-eval prompts: {error}\n")
    packages.write("pkg/ext/prompts/support.yaml", SUPPORT)
    status, out, _ = run("list", "--package", "pkg")
    assert (status, out.splitlines()[0]) == (
        0, "support  pkg/prompts/support.yaml  variables: question, name")
    assert run("show", "support", "--package", "pkg")[1].startswith(
        f"support@2 (default)  sha256:{_sha(V2)}  pkg/prompts/support.yaml:4\n")
    # a package named by a path through a link, or absolutely, is shown from here too
    (pytester.path / "alias").symlink_to(folder, target_is_directory=True)
    assert run("list", "--package", "alias")[1].splitlines()[0] == \
        "support  pkg/prompts/support.yaml  variables: question, name"
    assert run("list", "--package", str(folder))[1].splitlines()[0] == \
        "support  pkg/prompts/support.yaml  variables: question, name"
