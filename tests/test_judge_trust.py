"""A judge you can trust (docs/contract.md#judge-grades, #grade-cache, #judge-alignment):
several rubrics per case, k samples and their consistency, the on-disk grade cache (also
under ``-n 2``), alignment with human labels and the gating it drives."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from pytest_elizon_eval.bind.judging import CallableJudge
from pytest_elizon_eval.run import grade_cache
from pytest_elizon_eval.run.grade_cache import GradeCache, cache_key, judge_identity

from .conftest import ECHO_APP, Packages

#: A judge that counts its calls in calls.log (one line each) and scores by the rubric: a
#: rubric naming a word scores 0.9 when the output has it, else 0.2; "noisy" varies by call.
JUDGE = """
import itertools, pathlib

_count = itertools.count()

def grade(rubric, case_input, output):
    with open(pathlib.Path(__file__).with_name("calls.log"), "a") as log:
        log.write(rubric + "\\n")
    if rubric == "explode":
        raise RuntimeError("judge down")
    if rubric.startswith("noisy"):
        return (0.5, 0.9, 0.7)[next(_count) % 3], "it varies"
    word = rubric.split()[-1].strip(".")
    return (0.9, "has it") if word.lower() in output.lower() else (0.2, "lacks it")
"""

SUITE = """
cases:
  - id: two-rubrics
    input: A refund answer
    expect:
      judge:
        - {name: polite, rubric: Mentions polite., threshold: 0.5}
        - {name: refund, rubric: Mentions refund., threshold: 0.5}
  - id: single
    input: about a refund
    expect:
      judge: {rubric: Mentions refund., threshold: 0.5}
  - id: sampled
    input: anything
    expect:
      judge: {rubric: noisy grader, threshold: 0.5, samples: 3, tolerance: 0.1}
"""


def _package(packages: Packages, suite: str = SUITE, gate: str = "must-pass",
             extra: str = "") -> Path:
    folder = packages.package(app=ECHO_APP, suite=suite, gate=gate)
    packages.write("pkg/judges.py", JUDGE)
    manifest = folder / "elizon.yaml"
    manifest.write_text(manifest.read_text() + "judge: judges:grade\n" + extra)
    return folder


def _calls(folder: Path) -> int:
    log = folder / "calls.log"
    return len(log.read_text().splitlines()) if log.exists() else 0


def _results(path: Path) -> dict[str, Any]:
    cases = {c["id"]: c for s in json.loads(path.read_text())["suites"] for c in s["cases"]}
    return cases


def test_rubrics_samples_and_a_second_run_from_the_cache(
        packages: Packages, pytester: pytest.Pytester) -> None:
    folder = _package(packages)
    first = pytester.runpytest("--elizon-results=r1.json", "-rA")
    first.assert_outcomes(passed=2, failed=1)
    first.stdout.fnmatch_lines([
        "*✗ judge.polite*",
        "*found:    score 0.20 — lacks it",
    ])
    assert _calls(folder) == 2 + 1 + 3  # one call per rubric, one per sample
    cases = _results(pytester.path / "r1.json")
    polite, refund = cases["two-rubrics"]["judges"]
    assert (polite["name"], polite["score"], refund["name"], refund["score"]) == \
        ("judge.polite", 0.2, "judge.refund", 0.9)
    assert [a["name"] for a in cases["two-rubrics"]["assertions"]] == \
        ["judge.polite", "judge.refund"]
    sampled = cases["sampled"]["judges"][0]
    assert sampled["scores"] == [0.5, 0.9, 0.7]
    assert sampled["score"] == pytest.approx(0.7)
    assert sampled["consistent"] is False
    assert sampled["range"] == pytest.approx(0.4)
    assert sampled["std_dev"] == pytest.approx(0.163299, rel=1e-5)
    found = cases["sampled"]["assertions"][0]["found"]
    assert "mean of 3 samples: sd 0.16, range 0.40 OVER; INCONSISTENT: tolerance 0.1" in found
    assert all(j["calls"] >= 1 and j["cached"] == 0 for c in cases.values() for j in c["judges"])
    provenance = json.loads((pytester.path / "r1.json").read_text())["provenance"]
    assert provenance["packages"][0]["judges"] == [polite["judge"]]

    second = pytester.runpytest("--elizon-results=r2.json", "--elizon-junit=j2.xml",
                                "--elizon-markdown=m2.md", "--elizon-html=h2.html",
                                "--elizon-report=full")
    second.assert_outcomes(passed=2, failed=1)
    assert _calls(folder) == 6  # nothing graded again
    second.stdout.fnmatch_lines(["*judge: 0 calls, 6 grades reused from the cache*"])
    again = _results(pytester.path / "r2.json")
    assert all(j["calls"] == 0 and j["cached"] >= 1 for c in again.values() for j in c["judges"])
    assert again["sampled"]["judges"][0]["scores"] == [0.5, 0.9, 0.7]
    assert "[cached grade]" in again["single"]["assertions"][0]["found"]
    # every report marks the reused grades
    junit = (pytester.path / "j2.xml").read_text()
    assert "judge.refund: score 0.90 (threshold 0.5) by judges:grade [prompt " in junit
    assert "[cached grade]" in junit
    assert "judge: 0 calls, 6 grades reused from the cache" in (pytester.path / "m2.md"
                                                                ).read_text()
    page = (pytester.path / "h2.html").read_text()
    assert "judge: 0 calls, 6 grades reused from the cache" in page
    assert "[cached grade]" in page
    assert "Inconsistent judge grades\n\n- pkg/eval/suite.yaml::sampled — judge: scores 0.5, " \
        "0.9, 0.7 (range 0.40 &gt; tolerance 0.1)" in (pytester.path / "m2.md").read_text()

    pytester.runpytest("--elizon-cache=off").assert_outcomes(passed=2, failed=1)
    assert _calls(folder) == 12
    pytester.runpytest("--elizon-cache=refresh").assert_outcomes(passed=2, failed=1)
    assert _calls(folder) == 18
    # the rubric is part of the key: a changed rubric is graded, the others are not
    (folder / "eval/suite.yaml").write_text(SUITE.replace("Mentions polite.", "Says polite."))
    pytester.runpytest().assert_outcomes(passed=2, failed=1)
    assert _calls(folder) == 19


def test_cache_shared_by_xdist_workers(packages: Packages, pytester: pytest.Pytester) -> None:
    # one -n 2 run (starting workers is the slow part): the workers write the grades, each
    # under its key, and a serial run then finds every one of them
    folder = _package(packages)
    pytester.runpytest_subprocess("-n", "2").assert_outcomes(passed=2, failed=1)
    assert _calls(folder) == 6
    pytester.runpytest("--elizon-report=full").stdout.fnmatch_lines([
        "*judge: 0 calls, 6 grades reused*"])
    assert _calls(folder) == 6
    stored = list((pytester.path / ".pytest_cache/d/elizon/grades").glob("??/*.json"))
    assert len(stored) == 6
    assert not list((pytester.path / ".pytest_cache/d/elizon/grades").glob("??/.tmp-*"))


def test_cache_key_changes_with_every_part(tmp_path: Path) -> None:
    base = ("judge-a [prompt 1]", "rubric", {"q": 1}, "out", 0)
    key = cache_key(*base)
    for index, other in enumerate(("judge-b [prompt 1]", "rubric2", {"q": 2}, "out2", 1)):
        changed = list(base)
        changed[index] = other
        assert cache_key(*changed) != key
    assert cache_key(base[0], base[1], {"q": 1}, base[3], 0) == key  # canonical, not identity
    # a run's random canary is no part of the key: a probe's grade is reused next run
    from pytest_elizon_eval.redteam.pack import new_canary

    one, other = new_canary(), new_canary()
    assert one != other
    assert cache_key(base[0], base[1], f"say {one}", f"no {one}", 0) == \
        cache_key(base[0], base[1], f"say {other}", f"no {other}", 0)
    judge = CallableJudge(lambda *_: 1.0, "mod:fn")
    assert judge_identity(judge).startswith("mod:fn [prompt ")
    assert grade_cache.prompt_template_hash() in judge_identity(judge)
    # a fixture's judge is known as its spec names it: elizon-eval align --judge SPEC and
    # pytest's fixture keep and find the same grades and alignment result
    from pytest_elizon_eval.bind.binding import Binder, Source

    spec = "pytest_elizon_eval.run.grade_cache:prompt_template_hash"
    judges = [Binder(tmp_path).judge([Source(given, "here")], tmp_path)
              for given in (grade_cache.prompt_template_hash, spec)]
    assert judges[0].description == judges[1].description == spec


def test_cache_is_bounded_and_survives_torn_files(tmp_path: Path) -> None:
    from pytest_elizon_eval.bind.judging import Grade

    cache = GradeCache(tmp_path, "on", max_entries=3)
    for number in range(5):
        cache.put(f"{number:064x}", Grade(score=0.5))
    assert cache.evict() == 2
    assert len(cache.entries()) == 3
    torn = tmp_path / "ab" / ("ab" + "0" * 62 + ".json")
    torn.parent.mkdir(exist_ok=True)
    torn.write_text('{"score": ')
    assert cache.get("ab" + "0" * 62) is None
    cache.put("cd" * 32, Grade(error="down"))  # an error is asked again, never kept
    assert cache.get("cd" * 32) is None


LABELS = "\n".join(json.dumps(r) for r in [
    *({"output": f"refund {i}", "human": "pass"} for i in range(4)),
    *({"output": f"nothing {i}", "human": "fail"} for i in range(4)),
    # the judge disagrees with people on these
    {"output": "a refund, rudely", "human": "fail"}, {"output": "we can help", "human": "pass"},
]) + "\n"

FAILING = """
cases:
  - id: no-refund
    input: we cannot help
    expect:
      judge: {rubric: Mentions refund., threshold: 0.5}
"""


@pytest.mark.parametrize(("gate", "min_kappa", "blocks", "counted"), [
    ("must-pass", 0.9, False, "judge not aligned: κ 0.60 < 0.90"),
    ("must-pass", 0.5, True, None),
    ("advisory", 0.9, False, None),
])
def test_alignment_gates_a_must_pass_suite(packages: Packages, pytester: pytest.Pytester,
                                           gate: str, min_kappa: float, blocks: bool,
                                           counted: str | None) -> None:
    folder = _package(packages, FAILING, gate, extra=f"alignment: {{labels: labels.jsonl, "
                                                       f"minKappa: {min_kappa}}}\n")
    packages.write("pkg/labels.jsonl", LABELS)
    result = pytester.runpytest("--elizon-align", "--elizon-results=r.json",
                                "--elizon-markdown=r.md", "--elizon-junit=r.xml",
                                "--elizon-html=r.html", "--elizon-report=full")
    assert result.ret == (1 if blocks else 0)
    result.stdout.fnmatch_lines([
        "*judge alignment*",
        "*judges:grade*: κ 0.60 [[]0.1*, 1.00] (moderate), minKappa *, agreement 80%, MAE *, r *, "
        "TP 4 TN 4 FP 1 FN 1 (n=10, pass ≥ 0.5)*"])
    assert _calls(folder) == 10 + 1
    case = _results(pytester.path / "r.json")["no-refund"]
    # the judge failed the case: never a pass, whether or not that fails the run (named
    # advisory_failed where it does not, as every report names it)
    assert (case["outcome"], case["assertions"][0]["passed"]) == \
        ("failed" if blocks else "advisory_failed", False)
    assert case["alignment"]["cohen_kappa"] == pytest.approx(0.6)
    assert case["judges"][0]["advisory"] == counted
    assert case.get("advisory") == counted
    markdown = (pytester.path / "r.md").read_text()
    assert "Judge alignment" in markdown
    if counted:  # an advisory failure of the case, with the reason, in every report
        why = f"counted as advisory: {counted}"
        assert why in case["assertions"][0]["found"]
        result.stdout.fnmatch_lines(["*suite.yaml a *", "advisory, not passed:",
                                     f"  pkg/eval/suite.yaml::no-refund — ✗ judge: score 0.20 "
                                     f"— lacks it — {why}", "*= 1 advisory_failed in *"])
        assert f"| `no-refund` | advisory_failed | ✗ judge: score 0.20 — lacks it — " \
               f"{why.replace('<', '&lt;')} |" in markdown
        assert f'<skipped type="skipped" message="advisory_failed, does not fail the run: ' \
               f'✗ judge: score 0.20 — lacks it — {why.replace("<", "&lt;")}">' \
               in (pytester.path / "r.xml").read_text()
        assert 'data-outcome="advisory" data-id="no-refund"' in \
               (pytester.path / "r.html").read_text()
        # kept: the next run without --elizon-align gates alike, measuring nothing
        pytester.runpytest("--elizon-results=again.json")
        assert _results(pytester.path / "again.json")["no-refund"]["advisory"] == counted
        assert _calls(folder) == 11


def test_require_alignment(packages: Packages, pytester: pytest.Pytester) -> None:
    _package(packages, FAILING + """
  - id: judge-down
    input: anything
    expect:
      judge: {rubric: explode, threshold: 0.5}
  - id: both
    input: we cannot help
    expect:
      contains: [refund]
      judge: {rubric: Mentions refund., threshold: 0.5}
  - id: talk
    turns:
      - input: no help
        expect: {judge: {rubric: Mentions refund., threshold: 0.5}}
      - input: still nothing
        expect: {contains: [refund]}
""", extra="alignment: {labels: labels.jsonl, minKappa: 0.5, rubric: Mentions refund.}\n")
    packages.write("pkg/labels.jsonl", LABELS)
    pytester.makeini("[pytest]\nelizon_require_alignment = true\n")
    result = pytester.runpytest("-rA", "--elizon-results=r.json")
    # a check besides the judge failed these: that still counts (the conversation went on
    # past the judge's failure, as the gate does not count it)
    result.stdout.fnmatch_lines(["*= 2 failed, 2 advisory_failed in *"])
    cases = _results(pytester.path / "r.json")
    assert (cases["both"]["outcome"], cases["both"].get("advisory")) == ("failed", None)
    assert (cases["talk"]["failed_turn"], cases["talk"].get("advisory")) == (2, None)
    assert [cases[c]["advisory"][:18] for c in ("no-refund", "judge-down")] == \
        ["judge not aligned:"] * 2
    down = cases["judge-down"]["judges"][0]
    assert down["advisory"].startswith("judge not aligned: no alignment measured")
    assert down["score"] is None
    result.stdout.fnmatch_lines(["judge failures counted as advisory:",
                                 "  pkg/eval/suite.yaml::no-refund — judge: score 0.20 < 0.5: "
                                 "judge not aligned: no alignment measured for this judge and "
                                 "these labels (run pytest --elizon-align or elizon-eval "
                                 "align)*"])
    result.stdout.fnmatch_lines(["  pkg/eval/suite.yaml::talk (turn 1) — judge: score 0.20 < "
                                 "0.5: judge not aligned: *"])
    pytester.runpytest("--elizon-align").assert_outcomes(failed=4)  # aligned: they count


def test_hostile_labels_stop_collection(packages: Packages, pytester: pytest.Pytester) -> None:
    # every message of a hostile labels file is in test_agreement; here: it stops collection
    _package(packages, FAILING, extra="alignment: {labels: labels.jsonl, minKappa: 0.5}\n")
    packages.write("pkg/labels.jsonl", '{"output": "a", "human": "pass"}\n')
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*ELIZON_ALIGNMENT_INVALID: pkg/labels.jsonl: every label is "
                                 "pass (at the threshold 0.5): Cohen's κ is undefined with one "
                                 "class only*"])
    # a row no rubric fits (it names none; the suite has three): the suite's collection
    # error at the row's line, not a setup error of every judged case
    packages.write("pkg/labels.jsonl", LABELS)
    packages.write("pkg/eval/suite.yaml", SUITE)
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*ERROR collecting pkg/eval/suite.yaml*",
                                 "ELIZON_ALIGNMENT_INVALID: pkg/labels.jsonl:1: the row names no "
                                 "rubric and the package has 3 rubrics; give the row a 'rubric'*"])


def test_labels_path_outside_the_package(packages: Packages, pytester: pytest.Pytester) -> None:
    _package(packages, FAILING, extra="alignment: {labels: ../labels.jsonl}\n")
    result = pytester.runpytest()
    result.stdout.fnmatch_lines(["*ELIZON_ALIGNMENT_INVALID: pkg/elizon.yaml:*: alignment "
                                 "labels '../labels.jsonl' is outside the package folder*"])


def test_elizon_eval_align_keeps_what_pytest_then_gates_on(
        packages: Packages, pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from pytest_elizon_eval import cli

    folder = _package(packages, FAILING, extra="alignment: {labels: labels.jsonl, "
                                               "minKappa: 0.9}\n")
    packages.write("pkg/labels.jsonl", LABELS)
    monkeypatch.chdir(pytester.path)
    try:
        assert cli.main(["align", "pkg"]) == 1  # κ 0.60 < 0.90: the data says no
        assert cli.main(["align", "pkg/elizon.yaml", "--json"]) == 1
    finally:
        sys.modules.pop("judges", None)  # the package's judge, imported from its folder
    shown = capsys.readouterr().out
    assert "judges:grade [prompt " in shown
    assert "κ 0.60 [0.10, 1.00] (moderate), minKappa 0.90, agreement 80%" in shown
    assert "judge calls: 10, grades reused from the cache: 0; kept in " \
           ".pytest_cache/d/elizon/alignment" in shown
    assert "judge not aligned: κ 0.60 < 0.90: its failures in must-pass suites are " \
           "advisory" in shown
    assert '"cached": 10' in shown  # the second measurement graded nothing again
    assert _calls(folder) == 10
    result = pytester.runpytest()  # no --elizon-align: the kept result gates
    assert result.ret == 0
    result.stdout.fnmatch_lines(["*= 1 advisory_failed in *"])
    result.stdout.fnmatch_lines(["*judge: score 0.20 < 0.5: judge not aligned: κ 0.60 < 0.90"])


def test_elizon_eval_align_errors(packages: Packages, pytester: pytest.Pytester,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    from pytest_elizon_eval import cli

    _package(packages, FAILING)
    assert cli.main(["align", str(pytester.path / "pkg")]) == 2
    assert "no alignment: {labels: …} to measure the judge against" in capsys.readouterr().err
    assert cli.main(["align", str(pytester.path / "nowhere")]) == 2
    assert "nowhere: no elizon.yaml there" in capsys.readouterr().err
    manifest = pytester.path / "pkg/elizon.yaml"
    manifest.write_text(manifest.read_text().replace("judge: judges:grade\n", "") +
                        "alignment: {labels: labels.jsonl}\n")
    packages.write("pkg/labels.jsonl", LABELS)
    assert cli.main(["align", str(pytester.path / "pkg")]) == 2
    assert "pkg/elizon.yaml: no judge: to measure, and elizon-eval cannot run an elizon_judge " \
           "fixture (conftest.py); measure that judge with pytest --elizon-align" \
           in capsys.readouterr().err


@pytest.mark.parametrize(("ini", "message"), [
    ("elizon_cache = sometimes", "ini option elizon_cache in *tox.ini ('sometimes'): expected "
                                 "on, off or refresh"),
    ("elizon_cache_max_entries = many", "ini option elizon_cache_max_entries in *tox.ini "
                                        "('many'): expected a whole number from 1 to 10000000"),
    ("elizon_require_alignment = maybe", "ini option elizon_require_alignment in *tox.ini: *"
                                         "expected true or false"),
])
def test_bad_cache_and_alignment_settings(pytester: pytest.Pytester, ini: str,
                                          message: str) -> None:
    pytester.makeini(f"[pytest]\n{ini}\n")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{message}*"])


def test_labels_rows_resolve_their_rubric(tmp_path: Path) -> None:
    from pytest_elizon_eval.errors import ElizonError
    from pytest_elizon_eval.load.packages import load_manifest
    from pytest_elizon_eval.run.alignment import alignment_key, resolve_rubrics

    (tmp_path / "suite.yaml").write_text(
        "cases:\n- id: a\n  input: x\n  expect:\n    judge:\n"
        "    - {name: tone, rubric: Is polite., threshold: 0.5}\n"
        "    - {name: facts, rubric: Is right., threshold: 0.5}\n")
    (tmp_path / "labels.jsonl").write_text(
        '{"output": "a", "human": 1, "rubric": "tone"}\n'
        '{"output": "b", "human": 0, "rubric": "Some other rubric."}\n'
        '{"output": "c", "human": 0}\n')
    manifest = tmp_path / "elizon.yaml"
    manifest.write_text("name: p\nevaluation: {suite: suite.yaml}\n"
                        "alignment: {labels: labels.jsonl}\n")
    package = load_manifest(manifest, "p/elizon.yaml")
    assert package.alignment is not None
    with pytest.raises(ElizonError) as caught:
        resolve_rubrics(package, package.alignment)
    assert caught.value.lines == [
        "ELIZON_ALIGNMENT_INVALID: p/labels.jsonl:3: the row names no rubric and the package "
        "has 2 rubrics; give the row a 'rubric' (its text or a rubric's name) or alignment: "
        "{rubric: …}"]
    manifest.write_text(manifest.read_text().replace("labels.jsonl}", "labels.jsonl, "
                                                     "rubric: facts}"))
    package = load_manifest(manifest, "p/elizon.yaml")
    assert package.alignment is not None
    rubrics = resolve_rubrics(package, package.alignment)
    assert rubrics == ["Is polite.", "Some other rubric.", "Is right."]
    key = alignment_key("j", package.alignment, rubrics)
    assert key != alignment_key("j2", package.alignment, rubrics)  # the judge
    assert key != alignment_key("j", package.alignment, ["Is polite."])  # a rubric
    edited = dataclasses.replace(package.alignment, sha256="0" * 64)
    assert key != alignment_key("j", edited, rubrics)  # the labels file
