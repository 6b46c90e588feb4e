"""Package variants (docs/format.md#variants): each case once per variant, as pytest items
``case[variant]`` that -k, --lf, -n and the reports see; what differs reaches the entry
point; bad declarations are errors at their line."""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from .conftest import Packages, validate_results

SUITE = """
cases:
  - id: greets
    input: hello
    expect: {contains: [hello]}
  - id: knows-size
    input: size
    expect: {contains: [large]}
"""

APP = """
def answer(text, model="none"):
    return f"{text} from {model}"

def other(text):
    return "other answers " + text

def crashes(text):
    raise RuntimeError("this variant always breaks")
"""


def variant_package(packages: Packages, variants: str, *, entry: str = "app:answer",
                    app: str = APP) -> Path:
    packages.write("pkg/elizon.yaml", f"name: pkg\nentry: {entry}\nvariants:\n{variants}"
                   "evaluation:\n  suite: ./eval/suite.yaml\n")
    packages.write("pkg/eval/suite.yaml", SUITE)
    packages.write("pkg/app.py", app)
    return packages.root / "pkg"


TWO = """\
  - name: large
    params: {model: large}
  - name: small
    params: {model: small}
"""


def results_cases(pytester: pytest.Pytester, name: str = "results.json") -> list[dict[str, Any]]:
    data = json.loads((pytester.path / name).read_text("utf-8"))
    validate_results(data)
    return [case for suite in data["suites"] for case in suite["cases"]]


def test_each_case_runs_once_per_variant_with_its_params(
        packages: Packages, pytester: pytest.Pytester) -> None:
    variant_package(packages, TWO)
    result = pytester.runpytest("pkg", "-v", "--elizon-results=results.json",
                                "--elizon-junit=junit.xml")
    result.stdout.fnmatch_lines([
        "pkg/eval/suite.yaml::greets[[]large[]] PASSED*",
        "pkg/eval/suite.yaml::greets[[]small[]] PASSED*",
        "pkg/eval/suite.yaml::knows-size[[]large[]] PASSED*",
        "pkg/eval/suite.yaml::knows-size[[]small[]] FAILED*"])
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # a must-pass suite gates every variant
    cases = {(c["id"], c["variant"]): c for c in results_cases(pytester)}
    assert cases[("knows-size", "small")]["output"] == "size from small"
    assert cases[("knows-size", "large")]["output"] == "size from large"
    assert cases[("greets", "large")]["outcome"] == "passed"
    names = {case.get("name") for case in ET.parse(pytester.path / "junit.xml").iter("testcase")}
    assert {"greets[large]", "knows-size[small]"} <= names


def test_k_lf_and_xdist_see_ordinary_items(packages: Packages,
                                           pytester: pytest.Pytester) -> None:
    variant_package(packages, TWO)
    assert pytester.runpytest("pkg", "-k", "small").parseoutcomes() == {
        "passed": 1, "failed": 1, "deselected": 2}
    assert pytester.runpytest("pkg", "-k", "knows-size and large").parseoutcomes() == {
        "passed": 1, "deselected": 3}
    ran = pytester.runpytest("pkg", "--lf", "-v")
    ran.stdout.fnmatch_lines(["*knows-size[[]small[]] FAILED*"])
    assert ran.parseoutcomes() == {"failed": 1}
    ran.stdout.fnmatch_lines(["*1 of 4 cases selected (--lf)*"])
    spread = pytester.runpytest("pkg", "-n", "2")
    assert spread.parseoutcomes() == {"passed": 3, "failed": 1}


def test_the_command_line_selects_and_adds_variants(packages: Packages,
                                                    pytester: pytest.Pytester) -> None:
    variant_package(packages, TWO)
    only = pytester.runpytest("pkg", "-v", "--elizon-variant", "large")
    assert only.parseoutcomes() == {"passed": 2}
    only.stdout.no_fnmatch_line("*small*PASSED*")
    added = pytester.runpytest("pkg", "-v", "--elizon-variant", "large",
                               "--elizon-variant", "alt=app:other")
    added.stdout.fnmatch_lines(["*greets[[]alt[]] PASSED*", "*knows-size[[]alt[]] FAILED*"])
    assert added.parseoutcomes() == {"passed": 3, "failed": 1}
    unknown = pytester.runpytest("pkg", "--elizon-variant", "medium")
    assert unknown.ret == pytest.ExitCode.INTERRUPTED
    unknown.stdout.fnmatch_lines([
        "*--elizon-variant medium: package pkg declares no variant 'medium'; its variants: "
        "large, small*"])
    bad = pytester.runpytest("pkg", "--elizon-variant", "no good")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(["*--elizon-variant: what comes before '=' (or the whole value) "
                              "is not a variant name*"])


def test_a_package_without_variants_compares_its_entry_with_an_added_one(
        packages: Packages, pytester: pytest.Pytester) -> None:
    packages.package(suite=SUITE, app=APP)
    plain = pytester.runpytest("pkg", "-v")
    plain.stdout.fnmatch_lines(["pkg/eval/suite.yaml::greets PASSED*"])
    added = pytester.runpytest("pkg", "-v", "--elizon-variant", "alt=app:other")
    added.stdout.fnmatch_lines(["*greets[[]default[]] PASSED*", "*greets[[]alt[]] PASSED*"])


def test_an_advisory_variant_never_fails_the_run(packages: Packages,
                                                 pytester: pytest.Pytester) -> None:
    variant_package(packages, "  - name: large\n    params: {model: large}\n"
                              "  - name: small\n    params: {model: small}\n"
                              "    gate: advisory\n")
    result = pytester.runpytest("pkg", "--elizon-results=results.json")
    assert result.ret == pytest.ExitCode.OK
    assert result.parseoutcomes() == {"passed": 3, "advisory_failed": 1}
    cases = {(c["id"], c["variant"]): c for c in results_cases(pytester)}
    assert cases[("knows-size", "small")]["outcome"] == "advisory_failed"


def test_a_variant_that_crashes_on_every_case_leaves_every_case_in_every_report(
        packages: Packages, pytester: pytest.Pytester) -> None:
    variant_package(packages, "  - name: large\n    params: {model: large}\n"
                              "  - name: broken\n    entry: app:crashes\n")
    result = pytester.runpytest("pkg", "--elizon-results=results.json",
                                "--elizon-junit=junit.xml", "--elizon-markdown=summary.md")
    assert result.parseoutcomes() == {"passed": 2, "failed": 2}
    cases = {(c["id"], c["variant"]): c["outcome"] for c in results_cases(pytester)}
    assert cases == {("greets", "large"): "passed", ("knows-size", "large"): "passed",
                     ("greets", "broken"): "failed", ("knows-size", "broken"): "failed"}
    junit = {c.get("name") for c in ET.parse(pytester.path / "junit.xml").iter("testcase")}
    assert junit == {"greets[large]", "greets[broken]", "knows-size[large]",
                     "knows-size[broken]"}
    assert "knows-size[broken]" in (pytester.path / "summary.md").read_text("utf-8")


def test_the_elizon_variant_fixture_chooses_the_entry(packages: Packages,
                                                      pytester: pytest.Pytester) -> None:
    variant_package(packages, "  - name: large\n    params: {model: large, tone: calm}\n"
                              "  - name: small\n    params: {model: small}\n",
                    entry="app:nothing")
    packages.write("conftest.py", """
        import pytest

        @pytest.fixture
        def elizon_entry(elizon_variant):
            v = elizon_variant
            return lambda text: f"{text} {v.name} {sorted(v.params.items())} {v.reference}"
    """)
    result = pytester.runpytest("pkg", "--elizon-results=results.json")
    assert result.parseoutcomes() == {"passed": 3, "failed": 1}
    cases = {(c["id"], c["variant"]): c["output"] for c in results_cases(pytester)}
    assert cases[("knows-size", "large")] == \
        "size large [('model', 'large'), ('tone', 'calm')] True"
    assert cases[("greets", "small")] == "hello small [('model', 'small')] False"


def test_params_a_callable_does_not_take_are_left_to_the_fixture(
        packages: Packages, pytester: pytest.Pytester) -> None:
    app = APP + "\ndef strict(text, *, model):\n    return f'{text} {model}'\n"
    variant_package(packages, "  - name: a\n    params: {model: large, seed: 3}\n",
                    entry="app:strict", app=app)
    result = pytester.runpytest("pkg", "--elizon-results=results.json")
    assert result.parseoutcomes() == {"passed": 2}


def test_a_command_entry_gets_the_variant_in_its_environment(
        packages: Packages, pytester: pytest.Pytester) -> None:
    packages.write("pkg/cmd.py", """
        import json, os, sys
        text = sys.stdin.read()
        params = json.loads(os.environ["ELIZON_VARIANT_PARAMS"])
        print(text, os.environ["ELIZON_VARIANT"], params["model"])
    """)
    variant_package(packages, TWO, entry=f"{{command: [{sys.executable}, cmd.py]}}")
    result = pytester.runpytest("pkg", "--elizon-results=results.json")
    assert result.parseoutcomes() == {"passed": 3, "failed": 1}
    cases = {(c["id"], c["variant"]): c["output"] for c in results_cases(pytester)}
    assert cases[("knows-size", "small")].split() == ["size", "small", "small"]


@pytest.mark.parametrize(("variants", "message"), [
    ("  - name: a\n  - name: a\n",
     "*elizon.yaml:5: variant 'a' is declared twice (first at line 4); give each its own name*"),
    ("  - name: a\n    reference: true\n  - name: b\n    reference: true\n",
     "*elizon.yaml:6: a second variant is marked reference: true (the first at line 4); "
     "mark one"),
    ("  - name: 'two words'\n",
     "*elizon.yaml:4: variants[[]0[]].name: variant name 'two words' must be 1-64 letters, "
     "digits, '_', '.' or '-'*"),
    ("  - name: a\n    params: {1x: 2}\n",
     "*variants[[]0[]].params: params key '1x' is not a Python identifier*"),
    ("  - name: a\n    colour: red\n", "*variants[[]0[]]: unknown key 'colour'*"),
    ("  - name: a\n    prompts: {support: 2}\n",
     "*variants[[]0[]].prompts.support: expected a string, found the number 2*"),
], ids=["duplicate", "two-references", "bad-name", "param-key", "unknown-key", "version"])
def test_bad_variants_are_errors_at_their_line(packages: Packages, pytester: pytest.Pytester,
                                                variants: str, message: str) -> None:
    variant_package(packages, variants)
    result = pytester.runpytest("pkg")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines([message])
    assert "ELIZON_MANIFEST_INVALID" in result.stdout.str()


def test_model_and_body_need_an_openai_service(packages: Packages,
                                               pytester: pytest.Pytester) -> None:
    variant_package(packages, "  - name: a\n    model: gpt-4o-mini\n")
    result = pytester.runpytest("pkg")
    assert result.parseoutcomes() == {"errors": 2}
    result.stdout.fnmatch_lines([
        "*variant a (*elizon.yaml:4) gives model/body, which set the request of an output: "
        "openai URL entry*give the variant params instead*"])


def test_record_and_replay_keep_each_variant_apart(packages: Packages,
                                                   pytester: pytest.Pytester) -> None:
    variant_package(packages, TWO)
    pytester.runpytest("pkg", "--elizon-record=cassette.json")
    recorded = json.loads((pytester.path / "cassette.json").read_text("utf-8"))
    assert sorted(recorded["cases"]) == [
        "pkg:eval/suite.yaml::greets[large]", "pkg:eval/suite.yaml::greets[small]",
        "pkg:eval/suite.yaml::knows-size[large]", "pkg:eval/suite.yaml::knows-size[small]"]
    (pytester.path / "pkg" / "app.py").write_text("def answer(text, model=''):\n"
                                                 "    raise SystemExit('not called')\n")
    replayed = pytester.runpytest("pkg", "--elizon-replay=cassette.json",
                                  "--elizon-results=results.json")
    assert replayed.parseoutcomes() == {"passed": 3, "failed": 1}
    outputs = {(c["id"], c["variant"]): c["output"] for c in results_cases(pytester)}
    assert outputs[("knows-size", "small")] == "size from small"
    assert outputs[("knows-size", "large")] == "size from large"


def test_the_comparison_reaches_the_terminal_markdown_html_and_results(
        packages: Packages, pytester: pytest.Pytester) -> None:
    variant_package(packages, TWO)
    result = pytester.runpytest("pkg", "--elizon-results=results.json",
                                "--elizon-markdown=summary.md", "--elizon-html=report.html")
    result.stdout.fnmatch_lines([
        "variant large of pkg (reference): 2/2 passed, pass rate 1.000 [[]0.342, 1.000[]]*frontier",
        "variant small of pkg: 1/2 passed, pass rate 0.500 [[]0.095, 0.905[]], too few cases to "
        "tell against large*"])
    data = json.loads((pytester.path / "results.json").read_text("utf-8"))
    validate_results(data)
    (compared,) = data["variants"]
    assert compared["reference"] == "large"
    assert [v["name"] for v in compared["variants"]] == ["large", "small"]
    assert data["suites"][0]["variants"] == ["large", "small"]
    summary = (pytester.path / "summary.md").read_text("utf-8")
    assert "## Variants of package pkg" in summary
    # the suite's section pools no interval over the variants' runs
    assert "Run under 2 variants: each is compared with large in *Variants of package " \
        "pkg*." in summary
    assert "95% Wilson, 4 cases" not in summary
    assert "| pkg/eval/suite.yaml | knows-size | passed | failed |" in summary
    page = (pytester.path / "report.html").read_text("utf-8")
    assert 'class="variants-matrix"' in page


GATED_SUITE = "cases:\n" + "".join(
    f"  - id: q{i}\n    input: q{i}\n    expect: {{contains: [right]}}\n" for i in range(12))
GATED_APP = """
def answer(text, wrong=0):
    return "wrong" if int(text[1:]) < wrong else "right"
"""


def gated_package(packages: Packages, variants: str) -> None:
    packages.write("pkg/elizon.yaml", "name: pkg\nentry: app:answer\nvariants:\n"
                   f"{variants}evaluation:\n  suite: ./eval/suite.yaml\n")
    packages.write("pkg/eval/suite.yaml", GATED_SUITE)
    packages.write("pkg/app.py", GATED_APP)


def test_fail_on_regression_gates_variants_by_a_significant_drop_only(
        packages: Packages, pytester: pytest.Pytester) -> None:
    close = "  - name: large\n  - name: close\n    params: {wrong: 1}\n"
    gated_package(packages, close)
    # by default a must-pass suite gates every variant, case by case
    assert pytester.runpytest("pkg").ret == pytest.ExitCode.TESTS_FAILED
    # against the reference, one case of twelve is within noise: the run passes
    within = pytester.runpytest("pkg", "--elizon-fail-on-regression",
                                "--elizon-results=results.json")
    assert within.ret == pytest.ExitCode.OK, within.stdout.str()
    assert within.parseoutcomes() == {"passed": 23, "advisory_failed": 1}
    within.stdout.fnmatch_lines(["variant close of pkg: 11/12 passed*within noise of large*"])
    # ten of twelve is a significant drop (exact McNemar, p = 2 * 0.5**10): the run fails
    gated_package(packages, close + "  - name: small\n    params: {wrong: 10}\n")
    worse = pytester.runpytest("pkg", "--elizon-fail-on-regression",
                               "--elizon-results=results.json")
    assert worse.ret == pytest.ExitCode.TESTS_FAILED
    assert worse.parseoutcomes() == {"passed": 25, "advisory_failed": 11}
    worse.stdout.fnmatch_lines(["--elizon-fail-on-regression fails the run on 1 variant "
                                "result against the reference: small of pkg against large: "
                                "pass_rate -0.833 (Holm p=0.00391)."])
    data = json.loads((pytester.path / "results.json").read_text("utf-8"))
    assert data["verdict"]["pass"] is False
    differences = {d["variant"]: d["verdict"] for d in data["variants"][0]["differences"]}
    assert differences == {"close": "within noise", "small": "worse"}
    # an advisory variant never fails the run, however much worse
    gated_package(packages, close + "  - name: small\n    params: {wrong: 10}\n"
                                    "    gate: advisory\n")
    assert pytester.runpytest("pkg", "--elizon-fail-on-regression").ret == pytest.ExitCode.OK


def test_an_openai_service_gets_each_variants_model_and_body(
        packages: Packages, pytester: pytest.Pytester) -> None:
    from .chat_server import ChatServer

    with ChatServer().running() as server:
        packages.write("pkg/elizon.yaml", f"""
            name: pkg
            entry: {{url: "{server.url}/chat/completions", output: openai, model: good,
                     body: {{temperature: 0}}}}
            variants:
              - name: good
              - name: low
                model: low
                body: {{temperature: 0.7, seed: 3}}
            evaluation:
              suite: ./eval/suite.yaml
        """)
        packages.write("pkg/eval/suite.yaml", """
            cases:
              - id: grade
                input: how polite is this
                expect: {contains: ["0.9"]}
        """)
        result = pytester.runpytest("pkg", "-v")
        sent = sorted((r["model"], r.get("temperature"), r.get("seed")) for r in server.requests)
    result.stdout.fnmatch_lines(["*grade[[]good[]] PASSED*", "*grade[[]low[]] FAILED*"])
    assert sent == [("good", 0, None), ("low", 0.7, 3)]


def test_an_http_entry_takes_no_params(packages: Packages, pytester: pytest.Pytester) -> None:
    variant_package(packages, "  - name: a\n    params: {model: x}\n",
                    entry="{url: 'http://127.0.0.1:9/answer'}")
    result = pytester.runpytest("pkg")
    assert result.parseoutcomes() == {"errors": 2}
    result.stdout.fnmatch_lines([
        "*variant a gives params, which are keyword arguments of a Python entry point*"
        "is an HTTP service: give the variant model and body*"])


def test_variants_under_xdist_are_compared_by_the_controller(
        packages: Packages, pytester: pytest.Pytester) -> None:
    gated_package(packages, "  - name: large\n  - name: small\n    params: {wrong: 10}\n")
    result = pytester.runpytest("pkg", "-n", "2", "--elizon-results=results.json")
    result.stdout.fnmatch_lines(["variant small of pkg: 2/12 passed*worse than large*"])
    data = json.loads((pytester.path / "results.json").read_text("utf-8"))
    validate_results(data)
    assert {d["variant"]: d["verdict"] for d in data["variants"][0]["differences"]} == {
        "small": "worse"}


def test_resume_takes_a_variants_case_only_while_the_variant_is_unchanged(
        packages: Packages, pytester: pytest.Pytester, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    calls = tmp_path / "calls.log"
    monkeypatch.setenv("CALLS_LOG", str(calls))
    logging_app = ("import os\n\ndef answer(text, model='none'):\n"
                   "    with open(os.environ['CALLS_LOG'], 'a') as log:\n"
                   "        log.write(f'{text}:{model}\\n')\n"
                   "    return f'{text} from {model}'\n")
    variants = ("  - name: large\n    params: {model: large}\n"
                "  - name: small\n    params: {model: %s}\n")
    variant_package(packages, variants % "small", app=logging_app)
    # stopped at its first failure (knows-size[small], the last): three cases are stored
    pytester.runpytest("pkg", "-x", "--elizon-history=h.sqlite").assert_outcomes(
        passed=3, failed=1)
    calls.unlink()
    variant_package(packages, variants % "small-2", app=logging_app)  # small's model changed
    resumed = pytester.runpytest("pkg", "--elizon-resume", "--elizon-history=h.sqlite",
                                 "--elizon-results=r.json")
    assert resumed.ret == 1, resumed.stdout.str() + resumed.stderr.str()
    resumed.assert_outcomes(passed=3, failed=1)
    # large's cases are taken from the store; small's run again with its new params
    assert sorted(calls.read_text().split()) == ["hello:small-2", "size:small-2"]
    taken = {(c["id"], c["variant"]) for c in results_cases(pytester, "r.json")
             if c.get("resumed")}
    assert taken == {("greets", "large"), ("knows-size", "large")}


def test_an_advisory_variants_failed_cases_are_one_row_and_every_one_under_v(
        packages: Packages, pytester: pytest.Pytester) -> None:
    gated_package(packages, "  - name: large\n  - name: small\n    params: {wrong: 10}\n"
                            "    gate: advisory\n")
    terse = pytester.runpytest("pkg")
    assert terse.ret == pytest.ExitCode.OK
    terse.stdout.fnmatch_lines([
        "pkg/eval/suite.yaml [[]pkg, must-pass[]]: 14 passed, 10 failed, 0 timeout, under 2 "
        "variants (each on its line below)*",
        "advisory, not passed:",
        "  10 cases (pkg/eval/suite.yaml::q0[[]small[]] and 9 more): variant small is advisory"])
    full = pytester.runpytest("pkg", "-v")
    full.stdout.fnmatch_lines(["advisory, not passed:",
                               "  pkg/eval/suite.yaml::q0[[]small[]] — ✗ contains*",
                               "  pkg/eval/suite.yaml::q1[[]small[]] — ✗ contains*"])


# -- what an independent review found (each failed before its fix) -------------------------

def test_the_gate_never_passes_a_variant_its_comparison_cannot_judge(
        packages: Packages, pytester: pytest.Pytester) -> None:
    """-k small runs no reference case, and five failed cases of five are too few to
    tell: under --elizon-fail-on-regression both passed before; now the failed cases are
    gated case by case again."""
    gated_package(packages, "  - name: large\n  - name: small\n    params: {wrong: 10}\n")
    alone = pytester.runpytest("pkg", "--elizon-fail-on-regression", "-k", "small")
    assert alone.ret == pytest.ExitCode.TESTS_FAILED
    alone.stdout.fnmatch_lines(["*small of pkg against large: 10 failed cases (q0, q1, q2, q3, "
                                "q4, … 5 more) large did not run: gated case by case*"])
    few = pytester.runpytest("--elizon-fail-on-regression", *(
        f"pkg/eval/suite.yaml::q{i}[{v}]" for i in range(5) for v in ("large", "small")))
    assert few.ret == pytest.ExitCode.TESTS_FAILED
    few.stdout.fnmatch_lines(["*small of pkg against large: 5 failed cases (q0, q1, q2, q3, "
                              "q4) its comparison cannot judge (too few cases to tell)*"])


def test_the_reference_is_never_advisory(packages: Packages,
                                         pytester: pytest.Pytester) -> None:
    variant_package(packages, "  - name: a\n    reference: true\n    gate: advisory\n")
    said = pytester.runpytest("pkg")
    said.stdout.fnmatch_lines(["*elizon.yaml:4: variant 'a' is the reference and advisory*"])
    # without a reference named, the first variant that is not advisory is the reference
    gated_package(packages, "  - name: large\n    gate: advisory\n    params: {wrong: 12}\n"
                            "  - name: small\n")
    result = pytester.runpytest("pkg", "--elizon-fail-on-regression")
    result.stdout.fnmatch_lines(["variant small of pkg (reference): 12/12 passed*"])
    assert result.ret == pytest.ExitCode.OK


def test_each_must_pass_suite_is_gated_on_its_own_cases(
        packages: Packages, pytester: pytest.Pytester) -> None:
    """small drops on the must-pass suite, large on the advisory one: pooled, the two
    cancelled out and the run passed."""
    packages.write("pkg/elizon.yaml", "name: pkg\nentry: app:answer\nvariants:\n"
                   "  - name: large\n  - name: small\nevaluation:\n  suites:\n"
                   "    - suite: ./core.yaml\n    - suite: ./extra.yaml\n      gate: advisory\n")
    for name, prefix in (("core", "m"), ("extra", "x")):
        packages.write(f"pkg/{name}.yaml", "cases:\n" + "".join(
            f"  - id: {prefix}{i}\n    input: {prefix}{i}\n    expect: {{contains: [ok]}}\n"
            for i in range(10)))
    packages.write("pkg/app.py", "def answer(text, model=None):\n"
                   "    return 'no' if int(text[1:]) < 6 and (text[0] == 'm') == "
                   "(model == 'small') else 'ok'\n")
    packages.write("pkg/conftest.py", "import pytest\n\n@pytest.fixture\n"
                   "def elizon_entry(elizon_variant):\n"
                   "    from app import answer\n"
                   "    return lambda text: answer(text, elizon_variant.name)\n")
    result = pytester.runpytest("pkg", "--elizon-fail-on-regression")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*small of pkg against large: pass_rate -0.6*"])


def test_a_param_never_replaces_a_cases_input(packages: Packages,
                                              pytester: pytest.Pytester) -> None:
    packages.write("pkg/elizon.yaml", "name: pkg\nentry: app:answer\nvariants:\n"
                   "  - name: a\n    params: {q: q99, model: small}\n"
                   "evaluation:\n  suite: ./s.yaml\n")
    packages.write("pkg/s.yaml", "cases:\n  - id: c\n    input: {q: q0}\n")
    packages.write("pkg/app.py", "def answer(q, model):\n    return f'ok got q={q}'\n")
    result = pytester.runpytest("pkg", "--elizon-results=r.json")
    # it never ran: an error, which fails the run whatever gates the variant
    assert result.parseoutcomes() == {"errors": 1}
    result.stdout.fnmatch_lines(["*ELIZON_ENTRY_INVALID: pkg/s.yaml: case c: its input 'q' is "
                                 "also a param of variant a (*elizon.yaml:4)*rename one*"])


def test_an_added_variants_spec_is_python_and_no_password_is_shown(
        packages: Packages, pytester: pytest.Pytester) -> None:
    variant_package(packages, TWO)
    result = pytester.runpytest("pkg", "--elizon-variant", "new=https://user:hunter2@h.example/v1",
                                "--elizon-results=r.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--elizon-variant new=…: give NAME=module.path:function*"])
    bad = pytester.runpytest("pkg", "--elizon-variant", "no good=https://u:hunter2@h/v1")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    assert "hunter2" not in result.stdout.str() + result.stderr.str() + bad.stdout.str() \
        + bad.stderr.str()
    assert not (pytester.path / "r.json").exists()


def test_a_crashed_worker_keeps_its_variant_and_the_comparison(
        packages: Packages, pytester: pytest.Pytester) -> None:
    app = APP + "\ndef die(text):\n    import os\n    os._exit(3)\n"
    variant_package(packages, "  - name: large\n    params: {model: large}\n"
                              "  - name: die\n    entry: app:die\n", app=app)
    result = pytester.runpytest("pkg", "-n", "2", "--elizon-results=r.json")
    data = json.loads((pytester.path / "r.json").read_text("utf-8"))
    validate_results(data)
    cases = {(c["id"], c.get("variant")): c["outcome"] for s in data["suites"]
             for c in s["cases"]}
    assert cases == {("greets", "large"): "passed", ("knows-size", "large"): "passed",
                     ("greets", "die"): "error", ("knows-size", "die"): "error"}
    assert [v["name"] for v in data["variants"][0]["variants"]] == ["large", "die"]
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_prompt_pins_are_checked_when_the_package_is_collected(
        packages: Packages, pytester: pytest.Pytester) -> None:
    variant_package(packages, "  - name: a\n    prompts: {nosuch: \"1\"}\n")
    result = pytester.runpytest("pkg")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*elizon.yaml:4: variant a pins nosuch@1: *nosuch*"])
    packages.write("pkg/prompts/support.yaml", "variables: [q]\nversions:\n  \"1\": hi {{q}}\n")
    variant_package(packages, "  - name: a\n    prompts: {support: \"9\"}\n")
    pinned = pytester.runpytest("pkg")
    pinned.stdout.fnmatch_lines(["*elizon.yaml:4: variant a pins support@9: *"])


def test_a_selected_variant_no_package_declares_is_a_usage_error(
        packages: Packages, pytester: pytest.Pytester) -> None:
    packages.package(suite=SUITE, app=APP)
    result = pytester.runpytest("pkg", "--elizon-variant", "nope")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines(["ERROR: --elizon-variant nope: no package of this run "
                                 "declares variants*"])


def test_params_hold_finite_numbers(packages: Packages, pytester: pytest.Pytester) -> None:
    variant_package(packages, "  - name: a\n    params: {n: .nan}\n")
    result = pytester.runpytest("pkg")
    result.stdout.fnmatch_lines(["*elizon.yaml:5: variants[[]0[]].params: params.n: must hold "
                                 "finite numbers, found not-a-number (.nan)*"])


def test_replay_of_a_changed_variant_is_stale(packages: Packages,
                                              pytester: pytest.Pytester) -> None:
    variant_package(packages, TWO)
    pytester.runpytest("pkg", "--elizon-record=cassette.json")
    variant_package(packages, TWO.replace("{model: small}", "{model: small-2}"))
    replayed = pytester.runpytest("pkg", "--elizon-replay=cassette.json", "-v")
    replayed.stdout.fnmatch_lines(["*greets[[]large[]] PASSED*", "*greets[[]small[]] ERROR*"])
    assert "ELIZON_CASSETTE_STALE" in replayed.stdout.str()


def test_each_variant_pins_its_own_snapshot(packages: Packages,
                                            pytester: pytest.Pytester) -> None:
    packages.write("pkg/elizon.yaml", "name: pkg\nentry: app:answer\nvariants:\n" + TWO
                   + "evaluation:\n  suite: ./eval/suite.yaml\n")
    packages.write("pkg/eval/suite.yaml", "cases:\n  - id: greets\n    input: hello\n"
                   "    expect: {snapshot: true}\n")
    packages.write("pkg/app.py", APP)
    pytester.runpytest("pkg", "--elizon-snapshot-update").assert_outcomes(passed=2)
    pinned = (pytester.path / "pkg/eval/__snapshots__/suite.snap.yaml").read_text("utf-8")
    assert "greets[large]:" in pinned
    assert "greets[small]:" in pinned
    assert "hello from large" in pinned
    assert "hello from small" in pinned
    # each variant is compared with its own pin: both pass, and a changed one fails alone
    pytester.runpytest("pkg").assert_outcomes(passed=2)
    packages.write("pkg/app.py", APP.replace('f"{text} from {model}"',
                                             'f"{text} from {model}" if model == "large" '
                                             'else "changed"'))
    result = pytester.runpytest("pkg", "-v")
    result.stdout.fnmatch_lines(["*greets[[]large[]] PASSED*", "*greets[[]small[]] FAILED*"])


# -- a second review (each failed before its fix) ----------------------------------------

def test_failed_cases_the_reference_did_not_run_are_gated_case_by_case(
        packages: Packages, pytester: pytest.Pytester) -> None:
    """The reference ran q0-q5 only; small failed q6-q11, which it could not be compared
    on: 'within noise' on the six paired cases passed them all before."""
    gated_package(packages, "  - name: large\n  - name: small\n    params: {wrong: 12}\n")
    packages.write("pkg/app.py", "def answer(text, wrong=0):\n"
                   "    return 'wrong' if wrong and int(text[1:]) >= 6 else 'right'\n")
    picked = [f"pkg/eval/suite.yaml::q{i}[large]" for i in range(6)] + [
        f"pkg/eval/suite.yaml::q{i}[small]" for i in range(12)]
    result = pytester.runpytest("--elizon-fail-on-regression", *picked)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*small of pkg against large: 6 failed cases (q6, q7, q8, q9, "
                                 "q10, … 1 more) large did not run: gated case by case*"])


def test_the_gate_decides_on_the_comparison_the_reports_show(
        packages: Packages, pytester: pytest.Pytester) -> None:
    """Three of twelve cases flipped in each of two must-pass suites: each suite alone is
    within noise, the package's comparison (the one shown) is a significant drop."""
    packages.write("pkg/elizon.yaml", "name: pkg\nentry: app:answer\nvariants:\n"
                   "  - name: large\n  - name: small\n    params: {wrong: 3}\n"
                   "evaluation:\n  suites:\n    - suite: ./one.yaml\n    - suite: ./two.yaml\n")
    for name in ("one", "two"):
        packages.write(f"pkg/{name}.yaml", "cases:\n" + "".join(
            f"  - id: {name}{i}\n    input: q{i}\n    expect: {{contains: [right]}}\n"
            for i in range(12)))
    packages.write("pkg/app.py", GATED_APP)
    result = pytester.runpytest("pkg", "--elizon-fail-on-regression",
                                "--elizon-markdown=m.md")
    result.stdout.fnmatch_lines(["variant small of pkg: 18/24 passed*worse than large*",
                                 "*small of pkg against large: pass_rate -0.25*"])
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert "❌ The run failed" in (pytester.path / "m.md").read_text("utf-8")


def test_resume_decides_a_variants_gate_anew(packages: Packages, pytester: pytest.Pytester,
                                             tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """A case stored as advisory under the first session's flag is gated case by case in
    a resumed session without it (it passed before)."""
    gated_package(packages, "  - name: large\n  - name: small\n    params: {wrong: 1}\n")
    store = "--elizon-history=h.sqlite"
    # stopped after small's q0 (the second item) failed, advisory under the flag
    first = pytester.runpytest("pkg", store, "--elizon-fail-on-regression", "--maxfail=1",
                               "-p", "no:randomly", "-k", "q0 or q1")
    assert first.parseoutcomes()["advisory_failed"] == 1
    resumed = pytester.runpytest("pkg", store, "--elizon-resume", "-k", "q0 or q1",
                                 "--elizon-results=r.json")
    assert resumed.ret == pytest.ExitCode.TESTS_FAILED
    small = {c["id"]: c for c in results_cases(pytester, "r.json") if c["variant"] == "small"}
    assert small["q0"]["outcome"] == "failed"


def test_snapshots_of_every_variant_are_kept_by_a_selection(
        packages: Packages, pytester: pytest.Pytester) -> None:
    packages.write("pkg/elizon.yaml", "name: pkg\nentry: app:answer\nvariants:\n" + TWO
                   + "evaluation:\n  suite: ./eval/suite.yaml\n")
    packages.write("pkg/eval/suite.yaml", "cases:\n  - id: greets\n    input: hello\n"
                   "    expect: {snapshot: true}\n  - id: waves\n    input: bye\n"
                   "    expect: {snapshot: true}\n")
    packages.write("pkg/app.py", APP)
    pytester.runpytest("pkg", "--elizon-snapshot-update").assert_outcomes(passed=4)
    plain = pytester.runpytest("pkg")
    plain.assert_outcomes(passed=4)
    assert "unused" not in plain.stdout.str()
    pytester.runpytest("pkg", "-k", "small and greets", "--elizon-snapshot-update")
    pinned = (pytester.path / "pkg/eval/__snapshots__/suite.snap.yaml").read_text("utf-8")
    for key in ("greets[large]:", "greets[small]:", "waves[large]:", "waves[small]:"):
        assert key in pinned


def test_an_invalid_variant_option_never_shows_what_was_given(
        packages: Packages, pytester: pytest.Pytester) -> None:
    variant_package(packages, TWO)
    for given in ("https://host/v1?api_key=s3cretpw",
                  'x y=curl -H "Authorization: Bearer s3cretpw" http://h'):
        result = pytester.runpytest("pkg", "--elizon-variant", given)
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        assert "s3cretpw" not in result.stdout.str() + result.stderr.str()


def test_two_packages_of_one_name_are_each_compared_with_their_own_reference(
        packages: Packages, pytester: pytest.Pytester) -> None:
    """A third review: pooled by name, p2's failing non-reference variant was compared
    against p1's reference (its own name) and passed."""
    suite = "cases:\n" + "".join(f"  - id: c{i}\n    input: q{i}\n    expect: {{contains: "
                                 f"[ok]}}\n" for i in range(12))
    for folder, variants, app in (
            ("p1", "  - name: large\n    params: {model: large}\n  - name: small\n"
                   "    params: {model: small}\n",
             "def answer(text, model=None):\n    return text + ' ok'\n"),
            ("p2", "  - name: large\n    params: {model: large}\n  - name: small\n"
                   "    reference: true\n    params: {model: small}\n",
             "def answer(text, model=None):\n    return text + ' ok' if model == 'small' "
             "else 'bad'\n")):
        packages.write(f"{folder}/elizon.yaml", f"name: pkg\nentry: app:answer\nvariants:\n"
                       f"{variants}evaluation:\n  suite: ./eval/suite.yaml\n")
        packages.write(f"{folder}/eval/suite.yaml", suite)
        packages.write(f"{folder}/app.py", app)  # each package's own app module
    result = pytester.runpytest("p1", "p2", "--elizon-fail-on-regression",
                                "-p", "no:randomly")
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()
    result.stdout.fnmatch_lines(["*large of pkg (p2/eval/suite.yaml) against small: pass_rate "
                                 "-1*"])
    # its suite says so too (its comparison's label names it, not its package's name)
    result.stdout.fnmatch_lines(["p2/eval/suite.yaml [[]pkg, must-pass[]]: *— FAIL"])


def test_a_model_for_a_service_that_is_not_openai_never_shows_its_url(
        packages: Packages, pytester: pytest.Pytester) -> None:
    variant_package(packages, "  - name: a\n    model: m\n",
                    entry="{url: 'http://bob:hunter2@127.0.0.1:9/answer', "
                          "headers: {X-Key: sekrit-123}}")
    result = pytester.runpytest("pkg")
    assert result.parseoutcomes() == {"errors": 2}
    result.stdout.fnmatch_lines(["*gives model/body*binds an HTTP entry whose output is not "
                                 "openai; give the variant params instead*"])
    assert "hunter2" not in result.stdout.str()
    assert "sekrit-123" not in result.stdout.str()
