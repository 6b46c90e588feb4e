"""Reports (docs/contract.md#reports): terminal, JUnit, GitHub annotations, markdown, results JSON,
regression — serial, under xdist, and with hostile model output going through every reporter."""

from __future__ import annotations

import json
import os
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from markdown_it import MarkdownIt

from . import github_runner
from .conftest import Packages, validate_results

APP = '''
import time

def answer(text):
    if text.startswith("sleep"):
        time.sleep(float(text.split()[1]))
    return text
'''
CORE = """
cases:
  - id: ok-one
    input: alpha
    expect: {contains: [alpha]}
  - id: ok-two
    input: beta
  - id: wrong
    input: gamma
    expect: {contains: [delta], equals: gamma}
  - id: too-slow
    input: sleep 5
"""
EXTENDED = """
cases:
  - id: fine
    input: x
  - id: drifted
    input: x
    expect: {equals: y}
"""


def two_suites(packages: Packages, folder: str = "pkg") -> None:
    packages.write(f"{folder}/elizon.yaml", """
        name: demo
        entry: app:answer
        evaluation:
          suites:
            - suite: eval/core.yaml
              gate: must-pass
              authorBaseline: {pass_rate: 1.0, accuracy: 0.9}
            - suite: eval/extended.yaml
              gate: advisory
    """)
    packages.write(f"{folder}/app.py", APP)
    packages.write(f"{folder}/eval/core.yaml", CORE)
    packages.write(f"{folder}/eval/extended.yaml", EXTENDED)


REPORT_ARGS = ["--elizon-timeout=0.15", "--elizon-junit=out/j.xml", "--elizon-results=out/r.json",
               "--elizon-markdown=out/s.md", "-p", "no:randomly"]


def results_of(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    validate_results(data)
    return data


def cases_by_id(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["nodeid"]: c for s in data["suites"] for c in s["cases"]}


def test_results_json_is_complete_and_valid(packages: Packages, pytester: pytest.Pytester
                                            ) -> None:
    two_suites(packages)
    pytester.runpytest(*REPORT_ARGS)
    data = results_of(pytester.path / "out/r.json")
    assert data["verdict"]["pass"] is False
    assert data["verdict"]["paragraph"].startswith("The run failed: 2 suites, 6 cases.")
    core, extended = data["suites"]
    assert core["path"] == "pkg/eval/core.yaml"
    assert core["sha256"] == __import__("hashlib").sha256(
        (pytester.path / "pkg/eval/core.yaml").read_bytes()).hexdigest()
    assert core["metrics"]["cases"] == 4
    assert core["metrics"]["pass_rate"] == 0.5
    assert core["metrics"]["timeout_rate"] == 0.25
    assert core["verdict"] == "fail"
    assert extended["verdict"] == "advisory"
    wrong = cases_by_id(data)["pkg/eval/core.yaml::wrong"]
    assert wrong["outcome"] == "failed"
    assert [(a["name"], a["passed"]) for a in wrong["assertions"]] == [
        ("contains", False), ("equals", True)]
    assert wrong["output"] == "gamma"
    slow = cases_by_id(data)["pkg/eval/core.yaml::too-slow"]
    assert (slow["outcome"], slow["latency_ms"]) == ("timeout", None)


def test_a_crashed_worker_is_a_crash_at_the_cases_line_in_every_report(
    packages: Packages, pytester: pytest.Pytester
) -> None:
    packages.package(app="import os\n\ndef answer(text):\n    if text == 'die':\n"
                         "        os._exit(3)\n    return text\n", suite="""
        cases:
          - id: survives
            input: fine
          - id: kills-its-worker
            input: die
    """)
    result = pytester.runpytest_subprocess("-n", "2", *REPORT_ARGS, "--elizon-annotations=on")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert result.parseoutcomes() == {"passed": 1, "failed": 1}
    output = result.stdout.str()
    assert "the entry point raised" not in output
    result.stdout.fnmatch_lines([
        "case 'kills-its-worker' crashed (must-pass suite pkg/eval/suite.yaml:4): the "
        "pytest-xdist worker running it died*"])
    result.stdout.re_match_lines([r"^FAILED pkg/eval/suite\.yaml::kills-its-worker - crashed: "])
    data = results_of(pytester.path / "out/r.json")
    crashed = cases_by_id(data)["pkg/eval/suite.yaml::kills-its-worker"]
    assert (crashed["outcome"], crashed["line"]) == ("error", 4)
    assert crashed["error"]["type"] == "WorkerCrash"
    assert data["suites"][0]["package"] == "pkg"  # the suite's info came from its sibling
    root = ET.parse(pytester.path / "out/j.xml").getroot()
    [case] = [c for c in root.iter("testcase") if c.get("name") == "kills-its-worker"]
    assert case.get("line") == "4"
    error = case.find("error")
    assert error is not None
    assert (error.get("message") or "").startswith("crashed: ")
    [annotation] = [c for c in github_runner.parse(output) if c.name == "error"]
    assert annotation.properties["line"] == "4"
    assert annotation.properties["title"] == "kills-its-worker: error"
    assert "crashed" in annotation.data
    assert "| `kills-its-worker` | error | crashed: " in (pytester.path / "out/s.md").read_text()


LONE_SURROGATE_APP = """
def answer(text):
    return "lone \\ud800 " + text
"""


ABANDONED_PRINTER_APP = """
import pathlib, time

HERE = pathlib.Path(__file__).parent.parent

def answer(text):
    if text == "plain":  # answers at once: a plain failure, and no second abandoned call
        return "x"
    time.sleep(0.3)  # past the 0.2 s limit: abandoned, and it goes on in its thread
    for _ in range(3000):  # until the session has printed its annotations (bounded)
        print("::error::pwned-early", flush=True)
        if (HERE / "annotated").exists():
            break
        time.sleep(0.01)
    for _ in range(20):
        print("::error::pwned-late", flush=True)
    (HERE / "printed").write_text("done")
"""
ABANDONED_CONFTEST = """
import pathlib, time
import pytest

HERE = pathlib.Path(__file__).parent
# the late call is abandoned on its worker thread and goes on printing
# (docs/contract.md#at-the-deadline)

@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(terminalreporter):
    (HERE / "annotated").write_text("yes")  # after elizon's annotations

def pytest_unconfigure(config):
    for _ in range(3000):  # hold the process until the abandoned call has printed (bounded)
        if (HERE / "printed").exists():
            return
        time.sleep(0.01)
"""


def test_an_abandoned_call_printing_after_the_annotations_issues_no_command(
    packages: Packages, pytester: pytest.Pytester
) -> None:
    packages.package(app=ABANDONED_PRINTER_APP, suite="""
        cases:
          - id: abandoned
            input: x
          - id: plain-failure
            input: plain
            expect: {equals: y}
    """)
    packages.write("conftest.py", ABANDONED_CONFTEST)
    result = pytester.runpytest_subprocess("--elizon-annotations=on", "--elizon-timeout=0.2",
                                           "-p", "no:randomly")
    assert (pytester.path / "printed").exists()
    assert result.parseoutcomes() == {"failed": 1, "timeout": 1}
    output = result.stdout.str()
    lines = output.splitlines()
    # Evidence of order: the entry printed after our annotations had been printed.
    last_annotation = max(i for i, line in enumerate(lines) if line.startswith("::error file="))
    assert sum("pwned-late" in line for line in lines[last_annotation:]) == 20
    commands = github_runner.parse(output)
    assert [c.name for c in commands] == ["stop-commands", "error", "error", "stop-commands"]
    assert all(c.data.startswith("pkg/eval/suite.yaml::") for c in commands if c.name == "error")


def test_step_summary_is_appended_never_overwritten(
    packages: Packages, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    two_suites(packages)
    summary = pytester.path / "step_summary.md"
    summary.write_text("# An earlier step\n\nkept\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    pytester.runpytest("--elizon-timeout=0.15")
    text = summary.read_text()
    assert text.startswith("# An earlier step\n\nkept\n")
    assert "## ❌ pkg/eval/core.yaml" in text
    assert "## ⚠️ pkg/eval/extended.yaml" in text


def test_annotations_follow_githubs_rules_and_limits(
    packages: Packages, pytester: pytest.Pytester
) -> None:
    must = "cases:\n" + "".join(f"  - id: must-{i:02d}\n    input: x\n    expect: {{equals: y}}\n"
                                for i in range(13))
    advisory = "cases:\n" + "".join(f"  - id: adv-{i:02d}\n    input: x\n"
                                    f"    expect: {{equals: y}}\n" for i in range(12))
    packages.package("hard", app=APP, suite=must)
    packages.package("soft", app=APP, suite=advisory, gate="advisory")
    result = pytester.runpytest("--elizon-annotations=on")
    commands = github_runner.parse(result.stdout.str())
    kinds = [c.name for c in commands]
    assert kinds[0] == "stop-commands"
    # fenced again after the annotations, for good
    assert kinds[1:] == ["error"] * 10 + ["warning"] * 10 + ["notice", "stop-commands"]
    first = commands[1]
    assert first.properties == {"file": "hard/eval/suite.yaml", "line": "2",
                                "title": "must-00: failed"}
    assert first.data.startswith("hard/eval/suite.yaml::must-00\ncase 'must-00' failed")
    assert commands[11].properties["title"] == "adv-00: advisory_failed"
    assert commands[-2].data.startswith("5 more cases did not pass")


def test_annotations_auto_follows_github_actions(
    packages: Packages, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    packages.package(app=APP, suite=EXTENDED)
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    on = pytester.runpytest()
    assert [c.name for c in github_runner.parse(on.stdout.str())] == [
        "stop-commands", "error", "stop-commands"]
    off = pytester.runpytest("--elizon-annotations=off")
    assert github_runner.parse(off.stdout.str()) == []
    monkeypatch.delenv("GITHUB_ACTIONS")
    assert github_runner.parse(pytester.runpytest().stdout.str()) == []


HOSTILE_APP = r'''
HOSTILE = (
    "nul\x00 esc\x1b[31m del\x7f fffe\ufffe ffff\uffff c1\x85 surrogate\ud800 "
    "\n::error file=evil.py,line=1::pwned-lf\r::warning::pwned-cr %0A %25 pipe|cell "
    "<script>alert(1)</script> <img src=x onerror=alert(2)> ``` unbalanced fence "
    "<details><summary>open details ##[error]pwned-legacy "
    "\n  ::stop-commands::attacker\n::error::pwned-after-stop\n::attacker::\n"
    "]]> --> &amp; \u202e bidi"
)

def answer(text):
    print(HOSTILE.replace("\ud800", "?"))  # replayed raw by pytest as captured output
    if text == "big":
        return HOSTILE + "x" * 5_000_000
    if text == "raise":
        raise ValueError(HOSTILE)
    return HOSTILE
'''
HOSTILE_SUITE = """
cases:
  - id: hostile-fails
    input: x
    expect: {contains: [absent], notContains: [pipe]}
  - id: hostile-big
    input: big
    expect: {contains: [absent]}
  - id: hostile-raises
    input: raise
  - id: hostile-passes
    input: x
    expect: {contains: [pipe]}
"""


@pytest.fixture
def hostile(packages: Packages, pytester: pytest.Pytester) -> pytest.RunResult:
    packages.package(app=HOSTILE_APP, suite=HOSTILE_SUITE)
    packages.package("adv", app=HOSTILE_APP, suite=HOSTILE_SUITE, gate="advisory")
    summary = pytester.path / "step.md"
    env = {"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(summary)}
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        return pytester.runpytest_subprocess(*REPORT_ARGS, "-rA")
    finally:
        for key, value in old.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def check_hostile_output_cannot_issue_workflow_commands(hostile: pytest.RunResult) -> None:
    assert hostile.ret == pytest.ExitCode.TESTS_FAILED
    output = hostile.stdout.str() + hostile.stderr.str()
    assert "pwned" in output  # the hostile text was printed...
    commands = github_runner.parse(output)
    # Our annotations quote the output as data; no command may come *from* it.
    assert not [c for c in commands if c.data.startswith("pwned")
                or c.properties.get("file") == "evil.py" or c.name == "attacker"]
    names = [c.name for c in commands]
    assert names == ["stop-commands"] + ["error"] * 3 + ["warning"] * 3 + ["stop-commands"]
    for command in commands[1:-1]:
        assert len(command.data) <= 4096
        assert command.properties["file"] in ("pkg/eval/suite.yaml", "adv/eval/suite.yaml")


def check_hostile_output_keeps_junit_well_formed(hostile: pytest.RunResult,
                                                pytester: pytest.Pytester) -> None:
    raw = (pytester.path / "out/j.xml").read_bytes()
    root = ET.fromstring(raw)  # expat: strict, fails on any character XML cannot hold
    cases = {c.get("name"): c for c in root.iter("testcase")}
    failure = cases["hostile-fails"].find("failure")
    assert failure is not None
    assert failure.get("message")
    assert "\\x00" in (cases["hostile-fails"].findtext("system-out") or "")
    assert len(raw) < 2_000_000  # 5 MB of output does not reach the file


def check_hostile_output_keeps_markdown_tables_and_renders_no_html(
    hostile: pytest.RunResult, pytester: pytest.Pytester
) -> None:
    for path in (pytester.path / "out/s.md", pytester.path / "step.md"):
        raw = path.read_bytes()
        assert len(raw) < 1024 * 1024
        text = raw.decode("utf-8")
        tokens = MarkdownIt("commonmark").enable("table").parse(text)
        rows: list[list[str]] = []  # the cells of every body row, as rendered text
        for index, token in enumerate(tokens):
            if token.type == "tr_open" and tokens[index + 1].type == "td_open":
                row: list[str] = []
                for inner in tokens[index + 1:]:
                    if inner.type == "tr_close":
                        break
                    if inner.type == "inline":
                        row.append(inner.content)
                rows.append(row)
            if token.type in ("html_block", "html_inline"):
                assert "script" not in token.content
                assert "img" not in token.content
                assert token.content.startswith(("<details><summary>", "</details>"))
        # Had hostile text split a cell, the outcome and latency columns would have moved.
        case_rows = [r for r in rows if r[0].startswith("`hostile")]
        assert len(case_rows) == 6
        # named as every report names them: the advisory suite's as advisory_failed
        assert sorted(c[1] for c in case_rows) == ["advisory_failed"] * 3 + ["failed"] * 3
        for cells in case_rows:
            assert len(cells) == 5
            assert re.fullmatch(r"\d+\.\d ms", cells[3]), cells
            assert cells[2].startswith(("✗ contains: missing: 'absent'", "ValueError: nul"))
        html = [t.content for t in tokens if t.type == "html_block"]
        opened = sum(c.startswith("<details><summary>") for c in html)
        assert opened == sum(c.startswith("</details>") for c in html) == 4  # 2 per suite


def check_hostile_output_keeps_results_json_valid(hostile: pytest.RunResult,
                                                 pytester: pytest.Pytester) -> None:
    data = results_of(pytester.path / "out/r.json")
    big = cases_by_id(data)["pkg/eval/suite.yaml::hostile-big"]
    assert big["output_length"] > 5_000_000
    # 64 Ki characters kept, then the one lone surrogate in them written as 6 visible ones
    assert len(big["output"]) == 64 * 1024 + 5
    assert big["output"].endswith("x" * 1000)
    fails = cases_by_id(data)["pkg/eval/suite.yaml::hostile-fails"]["output"]
    assert "surrogate\\ud800 " in fails
    assert not re.search("[\ud800-\udfff]", fails)


def test_hostile_output_through_every_reporter(hostile: pytest.RunResult,
                                               pytester: pytest.Pytester) -> None:
    # one run (a subprocess: what the entry points print reaches the real stdout), four checks
    check_hostile_output_cannot_issue_workflow_commands(hostile)
    check_hostile_output_keeps_junit_well_formed(hostile, pytester)
    check_hostile_output_keeps_markdown_tables_and_renders_no_html(hostile, pytester)
    check_hostile_output_keeps_results_json_valid(hostile, pytester)


def test_regression_against_an_earlier_run(packages: Packages, pytester: pytest.Pytester
                                           ) -> None:
    two_suites(packages)
    pytester.runpytest(*REPORT_ARGS)
    (pytester.path / "out/r.json").rename(pytester.path / "before.json")
    # fix one case, break another, add one, remove one
    core = (pytester.path / "pkg/eval/core.yaml")
    core.write_text(core.read_text().replace("contains: [delta]", "contains: [gamma]")
                    .replace("input: beta", "input: beta\n    expect: {equals: nope}")
                    .replace("  - id: too-slow\n    input: sleep 5\n",
                             "  - id: brand-new\n    input: n\n"))
    result = pytester.runpytest(*REPORT_ARGS, "--elizon-baseline=before.json", "-v")
    result.stdout.fnmatch_lines([
        "since *before.json: 1 regressed, 1 improved, 1 new, 1 removed, 3 unchanged",
        "  suite file changed: pkg/eval/core.yaml",
        "  regressed: pkg/eval/core.yaml::ok-two (passed -> failed)",
        "  improved: pkg/eval/core.yaml::wrong (failed -> passed)",
    ])
    data = results_of(pytester.path / "out/r.json")
    assert data["regression"]["counts"] == {"regressed": 1, "improved": 1, "new": 1,
                                            "removed": 1, "unchanged": 3}
    assert data["regression"]["changed_suites"] == ["pkg/eval/core.yaml"]
    assert "## Changes since" in (pytester.path / "out/s.md").read_text()


def test_a_bad_baseline_file_is_a_usage_error(packages: Packages, pytester: pytest.Pytester
                                              ) -> None:
    two_suites(packages)
    (pytester.path / "bad.json").write_text('{"suites": []}')
    result = pytester.runpytest("--elizon-baseline=bad.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --elizon-baseline=*bad.json: not a pytest-elizon-eval "
                                 "results file (at the top level: 'format' is a required*"])
    result = pytester.runpytest("--elizon-baseline=missing.json")
    result.stderr.fnmatch_lines(["ERROR: --elizon-baseline=*missing.json: cannot read it: *"])


def test_markdown_stays_under_the_limit_and_says_what_was_left_out() -> None:
    from pytest_elizon_eval.reporting import markdown
    from pytest_elizon_eval.reporting.aggregate import Aggregate

    aggregate = Aggregate()
    suite = {"path": "big/suite.yaml", "package": "big", "gate": "must-pass",
             "advisory": False, "baseline": {}, "sha256": ""}
    for i in range(800):  # 800 failing cases with 64 KiB of output each
        aggregate.add({
            "nodeid": f"big/suite.yaml::case-{i}", "case_id": f"case-{i}", "line": i + 1,
            "suite": suite, "outcome": "failed",
            "assertions": [{"name": "contains", "passed": False, "expected": "x",
                            "found": "missing: 'x' " + "y" * 300}],
            "latency_ms": 1.0, "output": "z" * 65536, "output_length": 65536, "error": None,
            "timeout_s": 90.0, "timeout_source": "", "entry": "app:answer"})
    text = markdown.render(aggregate)
    assert len(text.encode()) < 1024 * 1024
    assert "rows or outputs were left out to stay under GitHub's 1 MiB summary limit" in text
    assert text.count("<details>") == text.count("</details>") > 0
    assert "| `case-0` | failed |" in text


def test_one_unwritable_report_does_not_stop_the_others(
    packages: Packages, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    packages.package(app=APP, suite="cases:\n  - id: fine\n    input: x\n")
    (pytester.path / "taken").mkdir()
    summary = pytester.path / "step.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    result = pytester.runpytest("--elizon-junit=taken", "--elizon-results=out/r.json",
                                "--elizon-markdown=out/s.md")
    result.assert_outcomes(passed=1)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    problems = [line for line in result.stdout.lines if line.startswith("elizon: cannot write")]
    assert problems == [f"elizon: cannot write the JUnit XML {pytester.path / 'taken'}: "
                        "Is a directory"]
    assert results_of(pytester.path / "out/r.json")["verdict"]["pass"] is True
    assert "## ✅ pkg/eval/suite.yaml" in (pytester.path / "out/s.md").read_text()
    assert "## ✅ pkg/eval/suite.yaml" in summary.read_text()
    result.stdout.fnmatch_lines(["*generated results JSON: *r.json*",
                                 "*generated markdown summary: *s.md*"])


def deep_json(path: Path) -> Path:
    path.write_text("[" * 100_000 + "]" * 100_000)
    return path


def test_a_deeply_nested_baseline_is_a_usage_error(
    packages: Packages, pytester: pytest.Pytester
) -> None:
    packages.package(app=APP, suite="cases:\n  - id: fine\n    input: x\n")
    deep_json(pytester.path / "deep.json")
    result = pytester.runpytest("--elizon-baseline=deep.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    result.stderr.fnmatch_lines(["ERROR: --elizon-baseline=*deep.json: *nested too deeply*"])
