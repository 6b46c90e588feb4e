"""SPEC §6: terminal, JUnit, GitHub annotations, markdown, results JSON, regression — serial,
under xdist, and with hostile model output going through every reporter."""

from __future__ import annotations

import json
import os
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from markdown_it import MarkdownIt

from pytest_elizon_eval.reporting.results import schema

from . import github_runner
from .conftest import Packages

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


def two_suites(packages: Packages) -> None:
    packages.write("pkg/elizon.yaml", """
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
    packages.write("pkg/app.py", APP)
    packages.write("pkg/eval/core.yaml", CORE)
    packages.write("pkg/eval/extended.yaml", EXTENDED)


REPORT_ARGS = ["--elizon-timeout=0.5", "--elizon-junit=out/j.xml", "--elizon-results=out/r.json",
               "--elizon-markdown=out/s.md", "-p", "no:randomly"]


def results_of(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    jsonschema.validate(data, schema())
    return data


def cases_by_id(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["nodeid"]: c for s in data["suites"] for c in s["cases"]}


def test_terminal_section_with_baseline_table_and_timeouts(
    packages: Packages, pytester: pytest.Pytester
) -> None:
    two_suites(packages)
    result = pytester.runpytest("--elizon-timeout=0.5")
    assert result.parseoutcomes() == {"passed": 3, "failed": 1, "timeout": 1,
                                      "advisory_failed": 1}
    result.stdout.fnmatch_lines([
        "*= elizon eval =*",
        "pkg/eval/core.yaml [[]demo, must-pass[]]: 2 passed, 1 failed, 1 timeout — FAIL",
        "    metric     author baseline  this run  Δ     vs baseline",
        "    pass_rate  1.000            0.500     -0.5  below",
        "    accuracy   0.900            -         -     not measured by this run",
        "pkg/eval/extended.yaml [[]demo, advisory[]]: 1 passed, 1 failed, 0 timeout — ADVISORY*",
        "timed out:",
        "  pkg/eval/core.yaml::too-slow — no answer within 0.5 s (--elizon-timeout=0.5)",
        "advisory, not passed:",
        "  pkg/eval/extended.yaml::drifted — ✗ equals: *",
    ])


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


def test_junit_file(packages: Packages, pytester: pytest.Pytester) -> None:
    two_suites(packages)
    result = pytester.runpytest(*REPORT_ARGS)
    result.stdout.fnmatch_lines(["*generated JUnit XML: *out/j.xml*"])
    root = ET.parse(pytester.path / "out/j.xml").getroot()
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == ["demo: pkg/eval/core.yaml",
                                               "demo: pkg/eval/extended.yaml"]
    props = {p.get("name"): p.get("value") for p in suites[0].iter("property")}
    assert props["gate"] == "must-pass"
    assert props["baseline.pass_rate"] == "1"
    assert props["metric.pass_rate"] == "0.5"
    cases = {c.get("name"): c for c in root.iter("testcase")}
    assert cases["ok-one"].get("file") == "pkg/eval/core.yaml"
    assert cases["ok-one"].get("line") == "2"
    failure = cases["wrong"].find("failure")
    assert failure is not None
    assert "✗ contains" in (failure.get("message") or "")
    timeout = cases["too-slow"].find("error")
    assert timeout is not None
    assert timeout.get("type") == "timeout"
    # advisory: visible, but never a <failure> or <error> a CI consumer fails on
    off = cases["drifted"]
    assert off.find("failure") is None
    assert off.find("error") is None
    skipped = off.find("skipped")
    assert skipped is not None
    assert (skipped.get("message") or "").startswith("advisory failed, does not fail the run")
    assert "gamma" in (cases["wrong"].findtext("system-out") or "")


def test_reports_are_identical_under_xdist_and_written_once(
    packages: Packages, pytester: pytest.Pytester
) -> None:
    two_suites(packages)
    serial = pytester.runpytest_subprocess(*REPORT_ARGS, "-p", "no:xdist")
    serial_results = results_of(pytester.path / "out/r.json")
    serial_junit = ET.parse(pytester.path / "out/j.xml").getroot()
    parallel = pytester.runpytest_subprocess(*REPORT_ARGS, "-n", "2")
    parallel_results = results_of(pytester.path / "out/r.json")
    parallel_junit = ET.parse(pytester.path / "out/j.xml").getroot()
    assert serial.parseoutcomes() == parallel.parseoutcomes()
    assert parallel.stdout.str().count("generated results JSON") == 1

    def comparable(data: dict[str, Any]) -> dict[str, Any]:
        cases = cases_by_id(data)
        for case in cases.values():
            case.pop("latency_ms")
            for a in case["assertions"]:
                if a["name"] == "maxLatencyMs":
                    a.pop("found")
        return cases

    assert comparable(serial_results) == comparable(parallel_results)
    for data in (serial_results, parallel_results):
        for suite in data["suites"]:
            for key in ("mean_latency_ms", "p50_latency_ms", "p95_latency_ms", "max_latency_ms"):
                suite["metrics"].pop(key)
            suite.pop("comparison")
    assert serial_results["suites"] == parallel_results["suites"]
    assert serial_results["verdict"] == parallel_results["verdict"]

    def junit_cases(root: ET.Element) -> list[tuple[str | None, ...]]:
        return sorted((c.get("name"), c.get("file"), c.get("line"),
                       *(child.tag for child in c if child.tag != "system-out"))
                      for c in root.iter("testcase"))

    assert junit_cases(serial_junit) == junit_cases(parallel_junit)


def test_a_crashed_worker_is_an_error_in_every_report(
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
    result = pytester.runpytest_subprocess("-n", "2", *REPORT_ARGS)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    data = results_of(pytester.path / "out/r.json")
    crashed = cases_by_id(data)["pkg/eval/suite.yaml::kills-its-worker"]
    assert crashed["outcome"] == "error"
    assert crashed["error"]["type"] == "WorkerCrashed"
    assert data["suites"][0]["package"] == "pkg"  # the suite's info came from its sibling
    root = ET.parse(pytester.path / "out/j.xml").getroot()
    [case] = [c for c in root.iter("testcase") if c.get("name") == "kills-its-worker"]
    assert case.find("error") is not None
    assert "kills-its-worker" in (pytester.path / "out/s.md").read_text()


def test_step_summary_is_appended_never_overwritten(
    packages: Packages, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    two_suites(packages)
    summary = pytester.path / "step_summary.md"
    summary.write_text("# An earlier step\n\nkept\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    pytester.runpytest("--elizon-timeout=0.5")
    text = summary.read_text()
    assert text.startswith("# An earlier step\n\nkept\n")
    assert "## ❌ pkg/eval/core.yaml" in text
    assert "## ⚠️ pkg/eval/extended.yaml" in text


def test_markdown_summary_tables(packages: Packages, pytester: pytest.Pytester) -> None:
    two_suites(packages)
    pytester.runpytest(*REPORT_ARGS)
    text = (pytester.path / "out/s.md").read_text()
    assert "| pass_rate | 1.000 | 0.500 | -0.5 | below |" in text
    assert "| accuracy | 0.900 | — | — | not measured by this run |" in text
    assert "| `wrong` | failed | ✗ contains: missing: 'delta' | " in text
    assert "| `too-slow` | timeout | no answer within 0.5 s | — |" in text
    assert "<details><summary>wrong output (5 chars)</summary>" in text


def test_annotations_follow_githubs_rules_and_limits(
    packages: Packages, pytester: pytest.Pytester
) -> None:
    must = "cases:\n" + "".join(f"  - id: must-{i:02d}\n    input: x\n    expect: {{equals: y}}\n"
                                for i in range(13))
    advisory = "cases:\n" + "".join(f"  - id: adv-{i:02d}\n    input: x\n"
                                    f"    expect: {{equals: y}}\n" for i in range(12))
    packages.package("hard", app=APP, suite=must)
    packages.package("soft", app=APP, suite=advisory, gate="advisory")
    result = pytester.runpytest_subprocess("--elizon-annotations=on")
    commands = github_runner.parse(result.stdout.str())
    kinds = [c.name for c in commands]
    assert kinds[0] == "stop-commands"
    assert kinds[1:] == ["error"] * 10 + ["warning"] * 10 + ["notice"]
    first = commands[1]
    assert first.properties == {"file": "hard/eval/suite.yaml", "line": "2",
                                "title": "must-00: failed"}
    assert first.data.startswith("hard/eval/suite.yaml::must-00\ncase 'must-00' failed")
    assert commands[11].properties["title"] == "adv-00: failed (advisory)"
    assert commands[-1].data.startswith("5 more cases did not pass")


def test_annotations_auto_follows_github_actions(
    packages: Packages, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    packages.package(app=APP, suite=EXTENDED)
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    on = pytester.runpytest()
    assert [c.name for c in github_runner.parse(on.stdout.str())] == ["stop-commands", "error"]
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


def test_hostile_output_cannot_issue_workflow_commands(hostile: pytest.RunResult) -> None:
    assert hostile.ret == pytest.ExitCode.TESTS_FAILED
    output = hostile.stdout.str() + hostile.stderr.str()
    assert "pwned" in output  # the hostile text was printed...
    commands = github_runner.parse(output)
    # Our annotations quote the output as data; no command may come *from* it.
    assert not [c for c in commands if c.data.startswith("pwned")
                or c.properties.get("file") == "evil.py" or c.name == "attacker"]
    names = [c.name for c in commands]
    assert names == ["stop-commands"] + ["error"] * 3 + ["warning"] * 3  # ...and inert
    for command in commands[1:]:
        assert len(command.data) <= 4096
        assert command.properties["file"] in ("pkg/eval/suite.yaml", "adv/eval/suite.yaml")


def test_hostile_output_keeps_junit_well_formed(hostile: pytest.RunResult,
                                                pytester: pytest.Pytester) -> None:
    raw = (pytester.path / "out/j.xml").read_bytes()
    root = ET.fromstring(raw)  # expat: strict, fails on any character XML cannot hold
    cases = {c.get("name"): c for c in root.iter("testcase")}
    failure = cases["hostile-fails"].find("failure")
    assert failure is not None
    assert failure.get("message")
    assert "\\x00" in (cases["hostile-fails"].findtext("system-out") or "")
    assert len(raw) < 2_000_000  # 5 MB of output does not reach the file


def test_hostile_output_keeps_markdown_tables_and_renders_no_html(
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
        for cells in case_rows:
            assert len(cells) == 4
            assert cells[1] == "failed"
            assert re.fullmatch(r"\d+\.\d ms", cells[3]), cells
            assert cells[2].startswith(("✗ contains: missing: 'absent'", "raised ValueError"))
        html = [t.content for t in tokens if t.type == "html_block"]
        opened = sum(c.startswith("<details><summary>") for c in html)
        assert opened == sum(c.startswith("</details>") for c in html) == 4  # 2 per suite


def test_hostile_output_keeps_results_json_valid(hostile: pytest.RunResult,
                                                 pytester: pytest.Pytester) -> None:
    data = results_of(pytester.path / "out/r.json")
    big = cases_by_id(data)["pkg/eval/suite.yaml::hostile-big"]
    assert big["output_length"] > 5_000_000
    assert len(big["output"]) == 64 * 1024
    assert "\ud800" in cases_by_id(data)["pkg/eval/suite.yaml::hostile-fails"]["output"]


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
    result = pytester.runpytest(*REPORT_ARGS, "--elizon-baseline=before.json")
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


def test_an_unwritable_report_path_is_reported_and_fails_the_run(
    packages: Packages, pytester: pytest.Pytester
) -> None:
    packages.package(app=APP, suite="cases:\n  - id: fine\n    input: x\n")
    (pytester.path / "taken").mkdir()
    result = pytester.runpytest("--elizon-results=taken")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["elizon: cannot write a report: [[]Errno 21[]] Is a directory*"])
    assert result.ret == pytest.ExitCode.USAGE_ERROR
