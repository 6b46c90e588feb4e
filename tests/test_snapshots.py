"""Snapshots (issue 24): ``expect.snapshot: true`` pins a case's output in the suite's
``__snapshots__`` file; new / match / changed, the update run, unused snapshots, repeat,
xdist, hostile snapshot files, and the status in every report."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from pytest_elizon_eval.errors import ElizonError
from pytest_elizon_eval.load.loading import load_yaml
from pytest_elizon_eval.run import snapshots
from pytest_elizon_eval.run.snapshots import compare, load, text_sha256

from .conftest import Packages, validate_results

# The answer changes when pkg/mode.txt says so: the "model" drifting between runs.
APP = """
import pathlib

def answer(text):
    mode = pathlib.Path(__file__).with_name("mode.txt")
    extra = mode.read_text() if mode.exists() else ""
    return f"Hello {text}\\nline two{extra}\\n"
"""
SUITE = """
cases:
  - id: greet
    input: world
    expect: {snapshot: true, contains: [hello]}
  - id: plain
    input: x
  - id: again
    input: twice
    repeat: 3
    expect: {snapshot: true}
"""
SNAP = "pkg/eval/__snapshots__/suite.snap.yaml"


def _results(pytester: pytest.Pytester, name: str = "r.json") -> dict[str, dict[str, Any]]:
    data = json.loads((pytester.path / name).read_text())
    validate_results(data)  # the snapshot record is in the schema
    return {c["id"]: c for s in data["suites"] for c in s["cases"]}


def test_new_then_written_then_match_then_changed_with_a_diff_in_every_report(
    packages: Packages, pytester: pytest.Pytester
) -> None:
    packages.package(app=APP, suite=SUITE)
    snap = pytester.path / SNAP
    # new: fails, and nothing is written without the update flag
    first = pytester.runpytest("--elizon-results=r.json")
    assert first.parseoutcomes() == {"passed": 1, "failed": 2}
    first.stdout.fnmatch_lines([
        "*elizon snapshots*", "2 new",
        "new: pkg/eval/suite.yaml::greet (run pytest with --elizon-snapshot-update*",
        "FAILED pkg/eval/suite.yaml::greet - ✗ snapshot: new: no snapshot of 'greet'*"])
    assert not snap.exists()
    assert _results(pytester)["greet"]["snapshot"] == {
        "status": "new", "file": SNAP, "line": None, "updated": False}
    assert "snapshot" not in _results(pytester)["plain"]
    # the update run writes them, and they pass
    written = pytester.runpytest("--elizon-snapshot-update", "--elizon-results=r.json")
    assert written.parseoutcomes() == {"passed": 3}
    written.stdout.fnmatch_lines(["new: pkg/eval/suite.yaml::greet — written",
                                  f"updated {SNAP} (2 written, 0 unused removed)"])
    assert _results(pytester)["again"]["snapshot"]["updated"] is True
    text = snap.read_text()
    data = load_yaml(text.encode())
    assert data["format"] == "pytest-elizon-eval/snapshots/v1"
    assert list(data["snapshots"]) == ["again", "greet"]  # sorted: stable for review
    greet = data["snapshots"]["greet"]
    assert list(greet) == ["input_sha256", "entry", "output_sha256", "output"]
    assert greet["entry"] == "app:answer"
    assert greet["output"] == "Hello world\nline two\n"
    assert greet["output_sha256"] == text_sha256("Hello world\nline two\n")
    assert "    output: |\n      Hello world\n      line two\n" in text  # a block scalar
    # match: the file is left alone, and only -v says so (docs/contract.md#terminal)
    matched = pytester.runpytest("--elizon-results=r.json")
    assert matched.parseoutcomes() == {"passed": 3}
    assert "elizon snapshots" not in matched.stdout.str()
    matched = pytester.runpytest("--elizon-results=r.json", "--elizon-report=full")
    matched.stdout.fnmatch_lines(["*elizon snapshots*", "2 match"])
    assert _results(pytester)["greet"]["snapshot"]["status"] == "match"
    assert snap.read_text() == text
    # changed: fails with a unified diff in the message and every report
    (pytester.path / "pkg/mode.txt").write_text("X")
    changed = pytester.runpytest("--elizon-results=r.json", "--elizon-junit=j.xml",
                                 "--elizon-markdown=m.md", "--elizon-html=h.html")
    assert changed.parseoutcomes() == {"passed": 1, "failed": 2}
    changed.stdout.fnmatch_lines([
        "*✗ snapshot", "*found:    changed: the output differs from it; diff below*",
        "snapshot diff (- pinned, + this run):",
        f"  --- snapshot ({SNAP}:12)", "  +++ output", "  @@ -1,2 +1,2 @@", "   Hello world",
        "  -line two", "  +line twoX"])
    changed.stdout.fnmatch_lines([
        "*every run passed; a check of the whole case did not:*",
        "*found:    changed: 3 of 3 runs differ from it*"])
    record = _results(pytester)["greet"]["snapshot"]
    assert record["status"] == "changed"
    assert record["line"] == 12
    assert "-line two\n+line twoX" in record["diff"]
    junit = ET.parse(pytester.path / "j.xml").getroot()
    props = {(c.get("name"), p.get("name")): p.get("value") for c in junit.iter("testcase")
             for p in c.iter("property")}
    assert props[("greet", "snapshot")] == "changed"
    assert ("plain", "snapshot") not in props
    markdown = (pytester.path / "m.md").read_text()
    assert "| `greet` | changed |" in markdown
    assert "+line twoX" in markdown
    html = (pytester.path / "h.html").read_text()
    assert "snapshot: changed" in html
    assert "+line twoX" in html
    assert snap.read_text() == text  # a failing run never writes


def test_unused_snapshots_are_listed_then_removed_and_changes_accepted(
    packages: Packages, pytester: pytest.Pytester
) -> None:
    packages.package(app=APP, suite=SUITE)
    assert pytester.runpytest("--elizon-snapshot-update").ret == 0
    snap = pytester.path / SNAP
    # "again" loses its snapshot key, "greet" drifts: one unused, one changed
    packages.write("pkg/eval/suite.yaml", SUITE.replace("    repeat: 3\n    expect: "
                                                        "{snapshot: true}\n", ""))
    (pytester.path / "pkg/mode.txt").write_text("Y")
    # the snapshots of a suite that was deleted (renamed): all unused, its file removed
    gone = snap.with_name("gone.snap.yaml")
    gone.write_text(snap.read_text())
    listed = pytester.runpytest("-k", "plain")  # deselection makes nothing unused
    listed.stdout.fnmatch_lines([
        "unused in pkg/eval/__snapshots__/gone.snap.yaml: again, greet (its suite file is "
        "gone; --elizon-snapshot-update removes them)",
        f"unused in {SNAP}: again (not used by any case; --elizon-snapshot-update removes "
        "them)"])
    assert "::greet" not in listed.stdout.str().split("elizon snapshots")[1]  # not run
    updated = pytester.runpytest("--elizon-snapshot-update")
    assert updated.parseoutcomes() == {"passed": 3}
    updated.stdout.fnmatch_lines(["changed: pkg/eval/suite.yaml::greet — written",
                                  f"unused in {SNAP}: again (removed)",
                                  "updated pkg/eval/__snapshots__/gone.snap.yaml (0 written, "
                                  "2 unused removed)",
                                  f"updated {SNAP} (1 written, 1 unused removed)"])
    assert not gone.exists()
    data = load_yaml(snap.read_bytes())
    assert list(data["snapshots"]) == ["greet"]
    assert data["snapshots"]["greet"]["output"] == "Hello world\nline twoY\n"
    # no snapshot left: the file and its folder go
    packages.write("pkg/eval/suite.yaml", "cases:\n  - id: plain\n    input: x\n")
    assert pytester.runpytest("--elizon-snapshot-update").ret == 0
    assert not snap.parent.exists()


def test_under_xdist_the_controller_writes_the_one_file(
    packages: Packages, pytester: pytest.Pytester
) -> None:
    cases = "".join(f"  - id: c{n}\n    input: w{n}\n    expect: {{snapshot: true}}\n"
                    for n in range(8))
    chat = ("  - id: chat\n    turns:\n      - input: one\n      - input: two\n"
            "    expect: {snapshot: true}\n")
    packages.package(app=APP, suite="cases:\n" + cases + chat)
    # workers would race on one file; every case must land whatever worker ran it
    written = pytester.runpytest("-n", "2", "--elizon-snapshot-update", "-p",
                                 "no:cacheprovider")
    assert written.parseoutcomes() == {"passed": 9}
    written.stdout.fnmatch_lines(["created: 2/2 workers", "9 new",
                                  "new: pkg/eval/suite.yaml::c0 — written",
                                  "new: pkg/eval/suite.yaml::c1 — written",  # sorted
                                  f"updated {SNAP} (9 written, 0 unused removed)"])
    data = load_yaml((pytester.path / SNAP).read_bytes())
    assert sorted(data["snapshots"]) == ["c0", "c1", "c2", "c3", "c4", "c5", "c6", "c7", "chat"]
    assert data["snapshots"]["c5"]["output"] == "Hello w5\nline two\n"
    # a conversation pins every turn's answer
    assert data["snapshots"]["chat"]["output"] == (
        "--- turn 1 ---\nHello one\nline two\n\n--- turn 2 ---\nHello two\nline two\n")



def test_a_bad_snapshot_file_is_the_error_of_its_cases_naming_file_and_line(
    packages: Packages, pytester: pytest.Pytester
) -> None:
    packages.package(app=APP, suite=SUITE)
    packages.write(SNAP, "format: pytest-elizon-eval/snapshots/v1\nsnapshots:\n  greet: [\n")
    result = pytester.runpytest("--elizon-snapshot-update")
    assert result.parseoutcomes() == {"passed": 1, "errors": 2}
    result.stdout.fnmatch_lines([f"*ELIZON_SNAPSHOT_INVALID: {SNAP}:4: *"])
    # a hand-edited output whose hash no longer fits: that case alone, at its line
    assert pytester.runpytest("--elizon-snapshot-update").ret != 0
    (pytester.path / SNAP).unlink()
    assert pytester.runpytest("--elizon-snapshot-update").ret == 0
    snap = pytester.path / SNAP
    snap.write_text(snap.read_text().replace("Hello world", "Hello there"))
    edited = pytester.runpytest()
    assert edited.parseoutcomes() == {"passed": 2, "errors": 1}
    edited.stdout.fnmatch_lines([
        f"*ELIZON_SNAPSHOT_INVALID: {SNAP}:12: snapshot 'greet': output_sha256 is not the "
        "SHA-256 of its output (was the output edited by hand?)*"])
    # the update run pins what the entry point says now
    assert pytester.runpytest("--elizon-snapshot-update").ret == 0
    assert "Hello world" in snap.read_text()


def test_snapshot_files_are_never_suites_and_a_turn_has_no_snapshot_key(
    packages: Packages, pytester: pytest.Pytester
) -> None:
    packages.package(app=APP, suite=SUITE)
    assert pytester.runpytest("--elizon-snapshot-update").ret == 0
    # even when the stand-alone glob matches it, the snapshot file is not collected
    matched = pytester.runpytest("-o", "elizon_suite_files=*.yaml")
    assert matched.parseoutcomes() == {"passed": 3}
    packages.write("pkg/eval/suite.yaml", """
        cases:
          - id: chat
            turns:
              - input: a
                expect: {snapshot: true}
        """)
    refused = pytester.runpytest()
    refused.stdout.fnmatch_lines(["*EVALUATION_SUITE_INVALID: pkg/eval/suite.yaml:2: *"
                                  "snapshot: is a key of the case's own expect, not of a "
                                  "turn's*"])


def test_a_snapshot_file_that_cannot_be_written_is_a_red_line_and_status_4(
    packages: Packages, pytester: pytest.Pytester
) -> None:
    # the last case's entry point puts a file where the folder must go, after the first
    # case read its (missing) snapshots: the write at the end of the session fails
    packages.package(app="""
import pathlib

def answer(text):
    if text == "sabotage":
        pathlib.Path(__file__).with_name("eval").joinpath("__snapshots__").write_text("x")
    return f"Hello {text}"
""", suite="""
cases:
  - id: greet
    input: world
    expect: {snapshot: true}
  - id: last
    input: sabotage
""")
    result = pytester.runpytest("--elizon-snapshot-update")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines([f"elizon: {SNAP} not updated: *"])


SECRET = "HUSH-4242"


def _snapshot(pytester: pytest.Pytester, case: str) -> Any:
    """A case's snapshot record in r.json (read quickly: no schema check)."""
    data = json.loads((pytester.path / "r.json").read_text())
    return next(c for s in data["suites"] for c in s["cases"] if c["id"] == case)["snapshot"]


def test_a_snapshot_never_holds_a_declared_secret(
    packages: Packages, pytester: pytest.Pytester
) -> None:
    packages.write("pkg/elizon.yaml", f"name: pkg\nentry: app:answer\nsecrets: [{SECRET}]\n"
                   "evaluation:\n  suite: ./eval/suite.yaml\n")
    packages.write("pkg/eval/suite.yaml", "cases:\n  - {id: c, input: k, expect: {snapshot: "
                   "true}}\n  - {id: old, input: o, expect: {snapshot: true}}\n")
    packages.write("pkg/app.py", APP.replace("Hello {text}", f"Hello {{text}} {SECRET.lower()}")
                   .replace("if mode.exists()", "if mode.exists() and text == 'k'"))
    snap = pytester.path / SNAP
    pytester.runpytest("--elizon-snapshot-update")  # the cases fail: the answers leak it
    text = snap.read_text()
    assert SECRET.casefold() not in text.casefold()
    stored = load_yaml(text.encode())["snapshots"]["old"]
    assert stored["output"] == "Hello o «elizon-secret:1»\nline two\n"
    assert stored["output_sha256"] == text_sha256(stored["output"])
    pytester.runpytest("--elizon-results=r.json")
    assert _snapshot(pytester, "c")["status"] == "match"
    # c's answer changes; old's pin is rewritten as a snapshot written before this held it
    (pytester.path / "pkg/mode.txt").write_text("X")
    plain = stored["output"].replace("«elizon-secret:1»", SECRET)
    snap.write_text(text.replace("o «elizon-secret:1»", f"o {SECRET}").replace(
        stored["output_sha256"], text_sha256(plain)))
    changed = pytester.runpytest("--elizon-results=r.json")
    diff = _snapshot(pytester, "c")["diff"]
    assert "-line two\n+line twoX" in diff
    assert " Hello k «elizon-secret:1»" in diff
    assert SECRET.casefold() not in (diff + changed.stdout.str()).casefold()
    changed.stdout.fnmatch_lines([
        "*found:    changed: the snapshot holds a declared secret in plain text (written "
        "before secrets were kept out of snapshots); run pytest with "
        "--elizon-snapshot-update to write it again"])
    assert _snapshot(pytester, "old")["status"] == "changed"


# -- the pure module ------------------------------------------------------------------------

def _file(tmp_path: Path, text: str) -> snapshots.SnapshotFile:
    path = tmp_path / "__snapshots__" / "s.snap.yaml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(text)
    return load(path, "s.snap.yaml")


def _pinned(tmp_path: Path, output: str = "a\nb\n", case_input: object = "q",
            entry: str = "app:answer") -> snapshots.SnapshotFile:
    text = snapshots.dump("s.yaml", {"c": {
        "input_sha256": snapshots.input_sha256(case_input), "entry": entry,
        "output_sha256": text_sha256(output), "output": output}})
    return _file(tmp_path, text)


@pytest.mark.parametrize(("text", "line", "said"), [
    ("- just\n- a list\n", 1, "not a snapshot file: expected a mapping"),
    ("format: other/v9\nsnapshots: {}\n", 1, "format must be pytest-elizon-eval/snapshots/v1"),
    ("format: pytest-elizon-eval/snapshots/v1\nextra: 1\n", 2, "unknown key(s) extra"),
    ("format: pytest-elizon-eval/snapshots/v1\nsnapshots: [1]\n", 2,
     "snapshots must be a mapping of case id to snapshot, found YamlSequence"),
    ("format: pytest-elizon-eval/snapshots/v1\nsnapshots:\n  a: 1\n  a: 2\n", 4, "a"),
])
def test_a_file_that_is_not_a_snapshot_file_is_refused_at_its_line(
    tmp_path: Path, text: str, line: int, said: str
) -> None:
    with pytest.raises(ElizonError) as raised:
        _file(tmp_path, text)
    assert raised.value.code == "ELIZON_SNAPSHOT_INVALID"
    assert raised.value.messages[0].startswith(f"s.snap.yaml:{line}: ")
    assert said in raised.value.messages[0]


@pytest.mark.parametrize(("data", "said"), [
    (b"format: pytest-elizon-eval/snapshots/v1\nsnapshots:\n  c: \xff\n",
     "s.snap.yaml:3: not UTF-8 text"),
    (b"format: pytest-elizon-eval/snapshots/v1\nsnapshots:\n  c: {output: no}\n",
     "s.snap.yaml:3: unquoted 'no' is read by YAML 1.1 as boolean false"),
    (b"a: &a [*a]\n", "s.snap.yaml:1: recursive YAML alias"),
])
def test_what_the_suite_loader_refuses_a_snapshot_file_is_refused_for(
    tmp_path: Path, data: bytes, said: str
) -> None:
    path = tmp_path / "s.snap.yaml"
    path.write_bytes(data)
    with pytest.raises(ElizonError) as raised:
        load(path, "s.snap.yaml")
    assert str(raised.value).startswith(f"ELIZON_SNAPSHOT_INVALID: {said}")


def test_bad_entries_are_kept_apart_with_their_lines(tmp_path: Path) -> None:
    found = _file(tmp_path, (
        "format: pytest-elizon-eval/snapshots/v1\nsnapshots:\n"
        "  listed: [1]\n"
        "  short:\n    output: hi\n"
        "  typed:\n    input_sha256: 1\n    entry: e\n    output_sha256: x\n    output: hi\n"
        f"  good:\n    input_sha256: i\n    entry: e\n    output_sha256: {text_sha256('hi')}\n"
        "    output: hi\n"))
    assert set(found.pins) == {"good"}
    assert found.pins["good"].line == 11
    assert found.bad["listed"].startswith("s.snap.yaml:3: snapshot 'listed' must be a mapping")
    assert "s.snap.yaml:4: snapshot 'short': missing input_sha256, entry, output_sha256" \
        in found.bad["short"]
    assert "s.snap.yaml:6: snapshot 'typed': input_sha256 must be text, found int" \
        in found.bad["typed"]
    assert set(found.raw) == {"listed", "short", "typed", "good"}


def test_statuses_and_what_an_update_writes(tmp_path: Path) -> None:
    pinned = _pinned(tmp_path)
    match = compare(pinned, "c", ["a\nb\n"], "q", "app:answer", update=False)
    assert match.assertion.passed is True
    assert match.record == {
        "file": "s.snap.yaml", "line": 5, "updated": False, "status": "match"}
    assert match.write is None
    # repeat: every run must give the pinned output
    drift = compare(pinned, "c", ["a\nb\n", "a\nc\n", "a\nb\n"], "q", "app:answer",
                    update=False)
    assert drift.assertion.passed is False
    assert drift.record is not None
    assert drift.record["note"] == "1 of 3 runs differ from it"
    assert drift.record["diff"].splitlines()[-2:] == ["-b", "+c"]
    # runs that disagree with each other are never pinned, not even by an update run
    split = compare(pinned, "c", ["x", "y"], "q", "app:answer", update=True)
    assert split.write is None
    assert split.assertion.passed is False
    assert "the 2 runs gave different outputs" in split.assertion.found
    fresh = compare(snapshots.SnapshotFile(tmp_path / "n", "n"), "c", ["x", "y"], "q", "e",
                    update=True)
    assert fresh.write is None
    assert fresh.assertion.passed is False
    # the input changed: the pin is not this case's any more, even with the same output
    moved = compare(pinned, "c", ["a\nb\n"], "other", "app:answer", update=False)
    assert moved.assertion.passed is False
    assert moved.record is not None
    assert moved.record["status"] == "changed"
    assert "diff" not in moved.record
    assert moved.record["note"] == "the case's input changed since the snapshot was taken"
    # another entry point with the same output matches, says so, and the update re-pins it
    other = compare(pinned, "c", ["a\nb\n"], "q", "app:v2", update=False)
    assert other.assertion.passed is True
    assert other.record is not None
    assert other.record["note"] == "the entry point changed since the snapshot (was 'app:answer')"
    assert compare(pinned, "c", ["a\nb\n"], "q", "app:v2", update=True).write == {
        "input_sha256": snapshots.input_sha256("q"), "entry": "app:v2",
        "output_sha256": text_sha256("a\nb\n"), "output": "a\nb\n"}
    # no output (an error, a timeout): not checked, nothing to report or write
    none = compare(pinned, "c", [None], "q", "app:answer", update=True)
    assert none.assertion.passed is None
    assert none.record is None
    assert none.write is None
    # a declared secret: compared, diffed and written as its placeholder, never in plain text
    hushed = compare(pinned, "c", ["a\nhush-4242\n"], "q", "app:answer", update=True,
                     secrets=["x", SECRET])
    assert hushed.write is not None
    assert hushed.write["output"] == "a\n«elizon-secret:2»\n"
    assert hushed.record is not None
    assert hushed.record["diff"].splitlines()[-2:] == ["-b", "+«elizon-secret:2»"]
    hidden = _pinned(tmp_path, "a «elizon-secret:1»")
    assert compare(hidden, "c", [f"a {SECRET}"], "q", "app:answer", update=False,
                   secrets=[SECRET]).assertion.passed is True
    plain = _pinned(tmp_path, f"a {SECRET}")
    held = compare(plain, "c", [f"a {SECRET}"], "q", "app:answer", update=False,
                   secrets=[SECRET])
    assert held.assertion.passed is False
    assert held.record is not None
    assert held.record["note"] == snapshots.HOLDS_SECRET
    assert "diff" not in held.record
    assert compare(plain, "c", [f"a {SECRET}"], "q", "app:answer", update=True,
                   secrets=[SECRET]).write == {
        "input_sha256": snapshots.input_sha256("q"), "entry": "app:answer",
        "output_sha256": text_sha256("a «elizon-secret:1»"), "output": "a «elizon-secret:1»"}
    # only the final newline differs: the diff still shows it
    eol = compare(pinned, "c", ["a\nb"], "q", "app:answer", update=False)
    assert eol.record is not None
    assert "+'a\\nb'" in eol.record["diff"]


def test_each_suite_file_has_its_own_snapshot_file() -> None:
    where = {name: snapshots.snapshot_path(Path("eval") / name).as_posix() for name in
             ("suite.yaml", "suite.yml", "smoke.eval.yaml", "cases.jsonl")}
    assert where == {"suite.yaml": "eval/__snapshots__/suite.snap.yaml",
                     "suite.yml": "eval/__snapshots__/suite.yml.snap.yaml",
                     "smoke.eval.yaml": "eval/__snapshots__/smoke.eval.snap.yaml",
                     "cases.jsonl": "eval/__snapshots__/cases.jsonl.snap.yaml"}
    assert snapshots.is_snapshot_file(Path(where["suite.yml"]))
    assert not snapshots.is_snapshot_file(Path("eval/suite.snap.yaml"))


def test_a_twin_is_only_a_suite_whose_snapshots_share_the_file() -> None:
    twins = {name: snapshots.twin_of(Path("eval") / name) for name in
             ("s.yml", "s.yml.yaml", "s.yaml", "s", "s.yaml.yaml", ".yaml")}
    assert {k: v.as_posix() if v else None for k, v in twins.items()} == {
        "s.yml": "eval/s.yml.yaml", "s.yml.yaml": "eval/s.yml", "s.yaml": "eval/s",
        "s": "eval/s.yaml", ".yaml": None,
        "s.yaml.yaml": None}  # s.yaml.snap.yaml, where s.yaml's are s.snap.yaml
    for suite, twin in twins.items():
        if twin is not None:
            assert snapshots.snapshot_path(twin) == snapshots.snapshot_path(Path("eval") / suite)


def test_the_written_text_reads_back_exactly(tmp_path: Path) -> None:
    tricky = ["no", "123", "  leading\ntrailing  \n", "tab\there", "ünïcode ✓\n\n\n",
              "", "line\r\nwindows\r\n", "null", "- item", "a: b\n# not a comment"]
    entries = {f"c{n}": {"input_sha256": "i", "entry": "e", "output_sha256": text_sha256(t),
                         "output": t} for n, t in enumerate(tricky)}
    found = _file(tmp_path, snapshots.dump("s.yaml", entries))
    assert not found.bad
    assert [found.pins[f"c{n}"].output for n in range(len(tricky))] == tricky
    assert snapshots.updated_text(found, "s.yaml", {}, list(entries)) is None
