"""Reports against hostile answers and odd runs (issue 37): a secret as a mapping key, a
case's budget of tool calls and names, one outcome name in every report, bidirectional
controls, a hand-edited cassette, compliance rows, expect.stable's words, costs and a
fixture whose teardown raises."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from pytest_elizon_eval.decide import outcomes
from pytest_elizon_eval.decide.outcomes import CaseIdentity, CaseResult, SuiteInfo
from pytest_elizon_eval.decide.results_data import ToolCallRecord, TurnRecord, case_of_file
from pytest_elizon_eval.history.queries import Point
from pytest_elizon_eval.load.runtime import Case
from pytest_elizon_eval.redteam import pack
from pytest_elizon_eval.reporting import compliance, html, markdown, terminal, trend
from pytest_elizon_eval.reporting.aggregate import Aggregate, format_delta
from pytest_elizon_eval.run.assertions import ASSERTION_TEXT_KEPT, AssertionResult
from pytest_elizon_eval.run.calls import EntryCall, ToolCall, Usage
from pytest_elizon_eval.run.running import Attempt, CasePlan, CaseRun
from pytest_elizon_eval.text import visible

from .conftest import ECHO_APP, Packages, validate_results

SECRET = "PLANTED-SECRET-42"
MUST = SuiteInfo("pkg/eval/suite.yaml", "pkg", "must-pass", False)


def _cases(path: Path) -> dict[str, dict[str, Any]]:
    return {c["id"]: c for s in json.loads(path.read_text())["suites"] for c in s["cases"]}


# -- item 3: a declared secret as a mapping key ----------------------------------------------

KEY_APP = f"""
from pytest_elizon_eval import Answer, ToolCall

def answer(text):
    return Answer(text="done", tool_calls=[ToolCall("vault", {{"{SECRET}": 1, "n": 2}},
                                                    result={{"{SECRET.lower()}": "x"}})])
"""


def test_a_secret_used_as_a_key_is_masked_in_every_report(packages: Packages,
                                                           pytester: pytest.Pytester) -> None:
    folder = packages.package(app=KEY_APP, suite="cases:\n  - id: k\n    input: go\n")
    manifest = folder / "elizon.yaml"
    manifest.write_text(manifest.read_text() + f"secrets: [{SECRET}]\n")
    result = pytester.runpytest("-rA", "--elizon-results=r.json", "--elizon-junit=r.xml",
                                "--elizon-html=r.html", "--elizon-markdown=r.md",
                                "-p", "no:cacheprovider")
    assert result.parseoutcomes() == {"failed": 1}  # it leaked, through a key
    shown = [result.stdout.str(), *(
        (pytester.path / name).read_text() for name in ("r.json", "r.xml", "r.html", "r.md"))]
    for text in shown:
        assert SECRET.casefold() not in text.casefold()
    call = _cases(pytester.path / "r.json")["k"]["tool_calls"][0]
    assert call["arguments"] == {"PL…42": 1, "n": 2}
    assert call["result"] == {"pl…42": "x"}
    result.stdout.fnmatch_lines(["*✗ secrets: leaked: PL…42*"])


def test_keys_that_mask_alike_are_both_kept() -> None:
    found = CaseResult(nodeid="p::c", case_id="c", line=2, suite=MUST, outcome="failed",
                       input={"ABcdefgYZ": 1, "ABxxxxxYZ": 2, 3: "ABcdefgYZ"})
    masked = pack.redact(found, ["ABcdefgYZ", "ABxxxxxYZ"])
    assert masked.input == {"AB…YZ": 1, "AB…YZ #2": 2, "3": "AB…YZ"}


# -- item 17: a case's budget of tool calls and names ------------------------------------------

def _plan() -> CasePlan:
    return CasePlan(case=Case.model_validate({"id": "c", "input": "x"}), entry=None,
                    judge=None, entry_description="app:answer", timeout_s=2.0,
                    timeout_source="--elizon-timeout=2")


def test_tool_calls_are_kept_within_a_case_budget_and_say_what_was_cut() -> None:
    big = "x" * 20_000
    calls = tuple(ToolCall(f"tool{i}", {"q": big}, result=big) for i in range(150))
    long_name = "n" * 1_000_000
    call = EntryCall(value="ok", text="ok", latency_ms=1.0,
                     tool_calls=(ToolCall(long_name, {}, id="i" * 500_000), *calls),
                     usage=Usage(1, 2, 0.5, "m" * 2_000_000))
    found = outcomes.decide(CaseIdentity("p::c", "c", 2, MUST), _plan(),
                            CaseRun((Attempt(call, ()),)))
    assert len(found.tool_calls) == 100
    assert outcomes.TOOL_CALLS_KEPT == 100
    assert found.tool_calls_total == 151
    first = found.tool_calls[0]
    assert first.name == "n" * 200 + "… (1,000,000 characters)"
    assert first.id == "i" * 200 + "… (500,000 characters)"
    assert found.usage is not None
    assert found.usage.model == "m" * 200 + "… (2,000,000 characters)"
    # the first calls whole; once the budget is spent, each part its first characters and
    # its length; what is kept stays within the budget (and a floor a part)
    kept = found.tool_calls[1:]
    assert (kept[0].arguments, kept[0].result, kept[0].arguments_length) == ({"q": big}, big,
                                                                              None)
    last = kept[-1]
    assert (last.result, last.result_length) == (big[:outcomes.TOOL_PART_FLOOR], 20_000)
    assert last.arguments_length == len(json.dumps({"q": big}))
    total = sum(len(p if isinstance(p, str) else json.dumps(p))
                for c in kept for p in (c.arguments, c.result))
    assert total <= outcomes.TOOL_CHARS_KEPT + 2 * 100 * outcomes.TOOL_PART_FLOOR
    data = json.dumps(found.to_data())
    assert len(data) < 2_000_000  # 151 calls of 40 KB and 3.5 MB of names were 9.5 MB
    assert "151 calls, the first 100 kept — calls: " in outcomes.failure_message(
        CaseResult(**{**found.__dict__, "outcome": "failed"}))


def test_a_turns_tool_calls_share_the_case_budget(packages: Packages,
                                                  pytester: pytest.Pytester) -> None:
    app = """
from pytest_elizon_eval import Answer, ToolCall

def answer(text, messages=None):
    return Answer(text="ok", tool_calls=[ToolCall("t", {"i": i}) for i in range(101)])
"""
    packages.package(app=app, suite="cases:\n  - id: talk\n    turns:\n      - input: a\n"
                                    "      - input: b\n        expect: {contains: [zzz]}\n")
    result = pytester.runpytest("--elizon-results=r.json", "-p", "no:cacheprovider")
    assert result.parseoutcomes() == {"failed": 1}
    data = json.loads((pytester.path / "r.json").read_text())
    validate_results(data)
    case = data["suites"][0]["cases"][0]
    assert (len(case["tool_calls"]), case["tool_calls_total"]) == (100, 202)
    assert [(len(t["tool_calls"]), t["tool_calls_total"]) for t in case["turns"]] == \
        [(100, 101), (100, 101)]
    result.stdout.fnmatch_lines(["      tool 101 calls, the first 100 kept — calls: t(*"])


# -- item 18: one outcome name in every report -------------------------------------------------

JUDGE = """
def grade(rubric, case_input, output):
    return 0.1, "lacks it"
"""


def test_an_advisory_failure_has_one_name_in_every_report(packages: Packages,
                                                          pytester: pytest.Pytester) -> None:
    suite = ("cases:\n  - id: judged\n    input: hi\n    controls: [CC6.1]\n"
             "    expect:\n      judge: {rubric: Mentions refund., threshold: 0.5}\n")
    folder = packages.package(app=ECHO_APP, suite=suite)
    packages.write("pkg/judges.py", JUDGE)
    packages.write("pkg/labels.jsonl", '{"output": "a refund", "human": "pass"}\n'
                                       '{"output": "no", "human": "fail"}\n')
    manifest = folder / "elizon.yaml"
    manifest.write_text(manifest.read_text() + "judge: judges:grade\n"
                        "alignment: {labels: labels.jsonl, minKappa: 0.5}\n")
    packages.package("adv", app=ECHO_APP, gate="advisory",
                     suite="cases:\n  - id: drift\n    input: hi\n    expect: {contains: [zz]}\n")
    pytester.makeini("[pytest]\nelizon_require_alignment = true\n")
    result = pytester.runpytest("--elizon-results=r.json", "--elizon-markdown=r.md",
                                "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.OK
    assert result.parseoutcomes() == {"advisory_failed": 2}
    data = json.loads((pytester.path / "r.json").read_text())
    validate_results(data)
    named = {c["id"]: c["outcome"] for s in data["suites"] for c in s["cases"]}
    assert named == {"judged": "advisory_failed", "drift": "advisory_failed"}
    assert data["compliance"]["controls"][0]["cases"] == [
        {"nodeid": "pkg/eval/suite.yaml::judged", "outcome": "advisory_failed"}]
    text = (pytester.path / "r.md").read_text()
    assert "| `judged` | advisory_failed |" in text
    assert "| `drift` | advisory_failed |" in text
    # read back (a baseline, elizon-eval show/merge), the record holds the outcome itself
    back = case_of_file(data["suites"][0], data["suites"][0]["cases"][0])
    assert CaseResult.from_data(back).outcome == "failed"
    again = pytester.runpytest("--elizon-baseline=r.json", "-p", "no:cacheprovider")
    assert again.ret == pytest.ExitCode.OK


def test_outcome_name_matches_pytests_category() -> None:
    from pytest_elizon_eval import plugin

    advisory = SuiteInfo("a.yaml", "p", "advisory", True)
    for suite in (MUST, advisory):
        for outcome in ("passed", "failed", "timeout", "error", "inconclusive"):
            for why in (None, "judge not aligned: κ 0.1 < 0.5"):
                found = CaseResult(nodeid="a::c", case_id="c", line=2, suite=suite,
                                   outcome=outcome, advisory=why)
                status = plugin.teststatus(found.to_data(), "call")
                assert outcomes.outcome_name(found) == (status[0] if status else outcome)


# -- item 26: bidirectional controls, the cassette, compliance rows, stable, costs, trend -----

BIDI_APP = """
def answer(text):
    return "safe \\u202eevil\\u2066x"
"""


def test_bidirectional_controls_are_escaped_in_the_terminal_markdown_and_junit(
        packages: Packages, pytester: pytest.Pytester) -> None:
    packages.package(app=BIDI_APP, suite="cases:\n  - id: b\n    input: go\n"
                                         "    expect: {contains: [nothing]}\n")
    result = pytester.runpytest("--elizon-markdown=r.md", "--elizon-junit=r.xml",
                                "-p", "no:cacheprovider")
    assert result.parseoutcomes() == {"failed": 1}
    texts = [result.stdout.str(), (pytester.path / "r.md").read_text(),
             (pytester.path / "r.xml").read_text()]
    for text in texts:
        assert "\u202e" not in text
        assert "\u2066" not in text
        assert "safe \\u202eevil\\u2066x" in text
    ET.fromstring(texts[2])
    assert visible("a\u200fb\u061c") == "a\\u200fb\\u061c"


CASSETTE_SUITE = """
cases:
  - id: nan
    input: a
  - id: deep
    input: b
  - id: tokens
    input: c
  - id: fine
    input: d
"""
CASSETTE_APP = """
from pytest_elizon_eval import Answer, ToolCall, Usage

def answer(text):
    return Answer(text="ok " + text, value={"n": 1.5}, usage=Usage(1, 2, 0.001, "m"),
                  tool_calls=[ToolCall("t", {"a": [1]})])
"""


def test_a_hand_edited_cassette_gets_the_checks_a_live_answer_gets(
        packages: Packages, pytester: pytest.Pytester) -> None:
    packages.package(app=CASSETTE_APP, suite=CASSETTE_SUITE)
    cassette = pytester.path / "c.json"
    assert pytester.runpytest(f"--elizon-record={cassette}", "-p", "no:cacheprovider"
                              ).parseoutcomes() == {"passed": 4}
    data = json.loads(cassette.read_text())
    runs = {k.rpartition("::")[2]: v["runs"] for k, v in data["cases"].items()}
    runs["nan"][0]["value"] = {"n": float("nan")}
    deep: Any = 1
    for _ in range(150):
        deep = [deep]
    runs["deep"][0]["tool_calls"][0]["arguments"] = {"a": deep}
    runs["tokens"][0]["usage"]["input_tokens"] = -5
    cassette.write_text(json.dumps(data))  # NaN as JSON's NaN, as a hand edit may leave it
    result = pytester.runpytest(f"--elizon-replay={cassette}", "--elizon-results=r.json",
                                "-p", "no:cacheprovider", "-rf")
    assert result.parseoutcomes() == {"failed": 3, "passed": 1}
    cases = _cases(pytester.path / "r.json")
    where = "OutputError: the cassette's recording of pkg:eval/suite.yaml::{}, run 1 cannot " \
            "be replayed: {}; record it again with --elizon-record"
    assert cases["nan"]["error"]["message"] == where.format(
        "nan", "value: NaN at $.n; numbers must be finite (NaN, Infinity and numbers beyond "
        "±1.8e308, which read as Infinity, are not)").partition(": ")[2]
    assert "tool call 0 (t) arguments: lists and objects nested more than 100 levels deep" \
        in cases["deep"]["error"]["message"]
    assert "usage input_tokens is -5; expected a whole number of tokens" \
        in cases["tokens"]["error"]["message"]
    assert cases["fine"]["outcome"] == "passed"


def test_a_hand_edited_cassette_never_breaks_the_results_schema(
        packages: Packages, pytester: pytest.Pytester) -> None:
    packages.package(app=CASSETTE_APP, suite="""
        cases:
          - {id: limit, input: a}
          - {id: no-limit, input: b}
          - {id: cache, input: c}
          - {id: cache-over, input: d}
          - {id: no-turns, input: e}
          - {id: talk, turns: [{input: f}, {input: g}]}
          - {id: fine, input: h}
        """)
    cassette = pytester.path / "c.json"
    assert pytester.runpytest(f"--elizon-record={cassette}", "-p", "no:cacheprovider"
                              ).parseoutcomes() == {"passed": 7}
    data = json.loads(cassette.read_text())
    entries = {k.rpartition("::")[2]: v for k, v in data["cases"].items()}
    entries["limit"]["timeout_s"] = float("nan")
    entries["no-limit"]["timeout_s"] = 0
    entries["cache"]["runs"][0]["usage"]["cache_read_tokens"] = -9
    entries["cache-over"]["runs"][0]["usage"]["cache_write_tokens"] = 5  # input_tokens is 1
    entries["no-turns"]["runs"] = [{"turns": []}]
    entries["talk"]["runs"][0]["turns"] = []
    cassette.write_text(json.dumps(data))  # NaN as JSON's NaN, as a hand edit may leave it
    result = pytester.runpytest(f"--elizon-replay={cassette}", "--elizon-results=r.json",
                                "-p", "no:cacheprovider")
    assert result.parseoutcomes() == {"failed": 6, "passed": 1}  # as a live OutputError
    assert "did not handle" not in result.stdout.str()
    validate_results(json.loads((pytester.path / "r.json").read_text()))
    cases = _cases(pytester.path / "r.json")
    said = {name: (case["outcome"], case["error"]["message"]) for name, case in cases.items()
            if name != "fine"}
    where = "the cassette's recording of pkg:eval/suite.yaml::{}{} cannot be replayed: {}; " \
            "record it again with --elizon-record"
    limit = "timeout_s is {}; expected the time limit it was recorded under, a finite " \
            "number of seconds above 0"
    no_turns = "turns is an empty list; a recorded conversation is a list of at least one call"
    assert said == {
        "limit": ("failed", where.format("limit", "", limit.format("nan"))),
        "no-limit": ("failed", where.format("no-limit", "", limit.format("0"))),
        "cache": ("failed", where.format("cache", ", run 1", (
            "usage cache_read_tokens is -9; expected a whole number of tokens from 0 to "
            "9,223,372,036,854,775,807 (64 bits)"))),
        "cache-over": ("failed", where.format("cache-over", ", run 1", (
            "usage cache_read_tokens + cache_write_tokens (5) exceed input_tokens (1); "
            "input_tokens counts every input token, cached ones included (add Anthropic's "
            "cache_read_input_tokens and cache_creation_input_tokens to its input_tokens)"))),
        "no-turns": ("failed", where.format("no-turns", ", run 1", no_turns)),
        "talk": ("failed", where.format("talk", ", run 1", no_turns))}
    assert cases["fine"]["outcome"] == "passed"


def test_markdown_compliance_rows_carry_their_status() -> None:
    found = Aggregate()
    for name, outcome, suite in (("a", "passed", MUST), ("b", "timeout", MUST),
                                 ("c", "failed", SuiteInfo("pkg/a.yaml", "pkg", "advisory",
                                                           True))):
        found.add(CaseResult(nodeid=f"{suite.path}::{name}", case_id=name, line=2,
                             suite=suite, outcome=outcome, controls=("CC6.1",)).to_data())
    lines = compliance.markdown_lines(found, markdown.cell)
    assert "| CC6.1 | ❌ failed | 1/3 | pkg/a.yaml::c (advisory_failed, not counted), " \
           "pkg/eval/suite.yaml::b (timeout) |" in lines


def test_a_stable_failure_says_how_many_outputs_against_the_most(
        packages: Packages, pytester: pytest.Pytester) -> None:
    app = "import itertools\n_n = itertools.count()\n\ndef answer(text):\n" \
          "    return f'out {next(_n)}'\n"
    packages.package(app=app, suite="cases:\n  - id: s\n    input: a\n    repeat: 3\n"
                                    "    expect: {stable: {maxUniqueOutputs: 2, "
                                    "minSimilarity: 0.95}}\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.parseoutcomes() == {"failed": 1}
    result.stdout.fnmatch_lines(["      found:    3 unique outputs, max 2; least similar pair "
                                 "0.800, min 0.95 — 3 distinct output(s) in 3 runs, *"])


def _costed(*costs: float | None, baseline: float | None = None) -> Aggregate:
    suite = SuiteInfo("pkg/eval/suite.yaml", "pkg", "must-pass", False,
                      {} if baseline is None else {"total_cost_usd": baseline})
    found = Aggregate()
    for index, cost in enumerate(costs):
        found.add(CaseResult(nodeid=f"{suite.path}::c{index}", case_id=f"c{index}", line=2,
                             suite=suite, outcome="passed",
                             usage=None if cost is None else Usage(10, 5, cost)).to_data())
    return found


def test_costs_in_three_significant_digits_and_the_runs_total() -> None:
    found = _costed(0.0000164, 0.00001, None, baseline=0.00002)
    lines = [text for text, _ in terminal.render(found)]
    row = next(line for line in lines if line.strip().startswith("total_cost_usd"))
    assert "+$0.00000640" in row
    assert "e-0" not in row
    assert "run cost: $0.0000264 over 2 cases (1 more reported no cost)" in lines
    assert "| total_cost_usd | $0.0000200 | $0.0000264 | — | +$0.00000640 |" in \
        markdown.render(found)
    page = "".join(html.chunks(found))
    assert "<p class=\"cost\">run cost: $0.0000264 over 2 cases (1 more reported no cost)" \
        in page
    assert "<td class=n>+$0.00000640</td>" in page
    # every Δ signed in three significant digits, never in exponent form (.3g wrote
    # +6.4e-06 and +1.23e+03)
    assert format_delta(-0.25, "mean_cost_usd") == "-$0.250"
    assert format_delta(0.0571428, "pass_rate") == "+0.0571"
    assert format_delta(-1234.0, "total_tokens") == "-1,234"
    assert format_delta(0.00001234, "pass_rate") == "+0.0000123"
    assert format_delta(0.0, "pass_rate") == "+0"


def test_the_trend_strips_colours_are_no_other_legends() -> None:
    points = [Point(run, "", "finished", 4, passed, passed / 4, (0.0, 1.0), None, None, None)
              for run, passed in ((1, 4), (2, 3), (3, 1))]
    figure = trend.strip("s.yaml", points, 3)
    fills = [part.split('"')[0].lower() for part in figure.split('fill="')[1:]]
    legend = dict(part.strip().split(":") for part in html._CSS.split("}")[0].split("{")[1]
                  .replace("\n", "").split(";") if part.strip().startswith("--"))
    assert legend["--to"] == "#ef6c00"  # the page's timeout orange
    # all passed and most failed are the page's pass and fail colours; some failed is no
    # other outcome's colour (it was the timeout's orange)
    assert (fills[0], fills[2]) == (legend["--ok"], legend["--ko"])
    assert fills[1] not in legend.values()


# -- a fixture whose teardown raises ------------------------------------------------------------

TEARDOWN = """
import pytest

@pytest.fixture(autouse=True)
def broken_cleanup():
    yield
    raise RuntimeError("cleanup failed")
"""


def test_a_teardown_error_never_leaves_the_verdict_pass(packages: Packages,
                                                        pytester: pytest.Pytester) -> None:
    packages.package(app=ECHO_APP, suite="cases:\n  - id: ok\n    input: fine\n"
                                         "    expect: {contains: [fine]}\n")
    packages.write("conftest.py", TEARDOWN)
    result = pytester.runpytest("--elizon-results=r.json", "--elizon-markdown=r.md",
                                "--elizon-junit=r.xml", "--elizon-html=r.html",
                                "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert result.parseoutcomes() == {"passed": 1, "errors": 1}
    result.stdout.fnmatch_lines(["pkg/eval/suite.yaml [[]pkg, must-pass[]]: 1 passed, 0 failed, "
                                 "0 timeout, 1 teardown error, pass rate 1.000 [[]0.207, "
                                 "1.000[]] — FAIL",
                                 "failing the run:",
                                 "  pkg/eval/suite.yaml::ok — the teardown raised RuntimeError: "
                                 "cleanup failed",
                                 "elizon: 1 case in 1 suite: 1 passed; 1 teardown error — FAIL"],
                                consecutive=True)
    data = json.loads((pytester.path / "r.json").read_text())
    validate_results(data)
    assert data["verdict"]["pass"] is False
    assert data["suites"][0]["verdict"] == "fail"
    case = data["suites"][0]["cases"][0]
    assert case["outcome"] == "passed"  # the outcome stays
    assert (case["teardown_error"]["type"], case["teardown_error"]["message"]) == \
        ("RuntimeError", "cleanup failed")
    assert "raise RuntimeError" in case["teardown_error"]["traceback"]
    assert "1 teardown error" in data["verdict"]["paragraph"]
    assert "## ❌ pkg/eval/suite.yaml" in (pytester.path / "r.md").read_text()
    page = (pytester.path / "r.html").read_text()
    assert "<h1>Elizon eval: FAIL</h1>" in page
    assert "1 case fail the run" in page
    assert "its teardown raised RuntimeError: cleanup failed" in page
    error = ET.parse(pytester.path / "r.xml").find(".//testcase/error")
    assert error is not None
    assert error.get("type") == "teardown"


# -- review item 7: the HTML report names advisory outcomes as every other report does -----------

def test_the_html_report_says_advisory_failed() -> None:
    advisory = SuiteInfo("pkg/eval/adv.yaml", "pkg", "advisory", True)
    drift = CaseResult(nodeid="pkg/eval/adv.yaml::drift", case_id="drift", line=2,
                       suite=advisory, outcome="failed", output="x")
    judged = CaseResult(nodeid="pkg/eval/suite.yaml::judged", case_id="judged", line=3,
                        suite=MUST, outcome="timeout", advisory="judge not aligned")
    aggregate = Aggregate()
    for found in (drift, judged):
        aggregate.add(found.to_data())
    page = html.render(aggregate)
    attention = page[page.index('id="attention"'):page.index("</section>",
                                                             page.index('id="attention"'))]
    assert '<span class="b advisory">advisory_failed</span>' in attention
    assert '<span class="b advisory">advisory_timeout</span>' in attention
    assert '<span class="b advisory">failed</span>' not in attention
    rows = page[page.index('<details class="case"'):]
    assert '<span class="b advisory">advisory_failed</span>' in rows
    assert '<span class="b advisory">advisory_timeout</span>' in rows
    assert ("<dt>outcome</dt><dd><b>advisory_failed (does not fail the run)</b>"
            in html.fragment(drift))
    assert "<dd><b>advisory_timeout (does not fail the run)</b>" in html.fragment(judged)


# -- review item 6: a teardown's error is masked as the case's result is -------------------------

LEAKY_TEARDOWN = """
import pytest

@pytest.fixture(autouse=True)
def broken_cleanup():
    yield
    print("logging out of SuperSecret-123")  # captured in the teardown's report too
    raise RuntimeError("login with SuperSecret-123 rejected")
"""


def test_a_teardown_error_is_masked_in_every_report(packages: Packages,
                                                    pytester: pytest.Pytester) -> None:
    folder = packages.package(app=ECHO_APP, suite="cases:\n  - id: ok\n    input: fine\n")
    manifest = folder / "elizon.yaml"
    manifest.write_text(manifest.read_text() + "secrets: [SuperSecret-123]\n")
    packages.write("conftest.py", LEAKY_TEARDOWN)
    result = pytester.runpytest("-rA", "--elizon-results=r.json", "--elizon-junit=r.xml",
                                "--elizon-html=r.html", "--elizon-markdown=r.md",
                                "--junitxml=p.xml", "-p", "no:cacheprovider")
    assert result.parseoutcomes() == {"passed": 1, "errors": 1}
    shown = [result.stdout.str(), *((pytester.path / name).read_text()
                                    for name in ("r.json", "r.xml", "r.html", "r.md", "p.xml"))]
    for text in shown:
        assert "supersecret-123" not in text.casefold()
    error = _cases(pytester.path / "r.json")["ok"]["teardown_error"]
    assert (error["type"], error["message"]) == ("RuntimeError", "login with Su…23 rejected")
    assert 'raise RuntimeError("login with Su…23 rejected")' in error["traceback"]
    result.stdout.fnmatch_lines(["E       RuntimeError: login with Su…23 rejected",
                                 "logging out of Su…23",  # what the teardown printed
                                 "*the teardown raised RuntimeError: login with Su…23 rejected"])


# -- review item 14: masking never renames the record's own fields ------------------------------

def test_a_secret_named_like_a_field_masks_values_not_the_records_fields() -> None:
    call = ToolCallRecord("vault", {"expected": 1, "timeout_source": {"expected": 2}},
                          result={"timeout_source": "x"})
    found = CaseResult(nodeid="p::c", case_id="c", line=2, suite=MUST, outcome="failed",
                       timeout_source="the suite", input={"expected": "expected it"},
                       assertions=(AssertionResult("contains", False, "'expected'", "no"),),
                       tool_calls=(call,),
                       turns=(TurnRecord(1, input={"timeout_source": 1}, tool_calls=(call,)),))
    masked = pack.redact(found, ["expected", "timeout_source"])
    assert masked.timeout_source == "the suite"  # the field, its value kept
    assert masked.assertions[0].expected == "'ex…ed'"
    assert masked.input == {"ex…ed": "ex…ed it"}
    for kept in (masked.tool_calls[0], masked.turns[0].tool_calls[0]):
        assert kept.arguments == {"ex…ed": 1, "ti…ce": {"ex…ed": 2}}
        assert kept.result == {"ti…ce": "x"}
    assert masked.turns[0].input == {"ti…ce": 1}


# -- review item 4: assertion texts are within the case's budget too --------------------------

BIG_NAMES_APP = """
from pytest_elizon_eval import Answer, ToolCall, Usage

def answer(text):
    if text == "tools":
        return Answer(text="done", tool_calls=[
            ToolCall(f"t{i:03d}" + "x" * 50_000, {}, error="boom") for i in range(30)])
    return Answer(text="ok", usage=Usage(10, 5, None, "m" * 300_000))
"""


def test_assertion_texts_cannot_swell_the_results(packages: Packages,
                                                   pytester: pytest.Pytester) -> None:
    packages.package(app=BIG_NAMES_APP, suite=(
        "cases:\n  - id: tools\n    input: tools\n    expect: {toolCalls: {allSucceeded: true}}\n"
        "  - id: priced\n    input: p\n    repeat: 3\n    expect: {maxCostUsd: 0.5}\n"
        f"  - id: long\n    input: p\n    expect: {{contains: [{'y' * 50_000}]}}\n"))
    result = pytester.runpytest("--elizon-results=r.json", "-p", "no:cacheprovider")
    assert result.parseoutcomes() == {"failed": 3}
    path = pytester.path / "r.json"
    # 30 names of 50 KB, a 300 KB model name in 3 runs and a 50 KB expected were 3 MB
    assert path.stat().st_size < 200_000
    data = json.loads(path.read_text())
    validate_results(data)
    cases = _cases(path)
    found = cases["tools"]["assertions"][0]["found"]
    name = "x" * 196 + "… (50,004 characters)'"  # each name says how long it was
    listed = found[:found.index("; calls: ")]
    shown = listed.count(name)
    assert listed == "calls with an error: " + ", ".join(
        f"'t{i:03d}{name}" for i in range(shown)) + f", and {30 - shown} more"
    assert 0 < shown < 30
    assert f"calls: t000{name[:-1]}({{}}) error: boom; t001" in found
    for kept in (cases["priced"]["assertions"][0], *(
            run["assertions"][0] for run in cases["priced"]["runs"])):
        assert kept["found"] == ("cost unknown: no cost reported and no price for model 'm"
                                 + "m" * 199 + "… (300,000 characters)'")
    expected = cases["long"]["assertions"][0]["expected"]
    assert len(expected) == ASSERTION_TEXT_KEPT
    assert expected.startswith("every one of: 'yyy")
    assert expected.endswith(f"y… ({len('every one of: ' + repr('y' * 50_000)):,} characters)")
