"""Datasets pinned by content (docs/format.md#dataset-hash): each suite's cases hashed in an
order-independent way, shown by ``elizon-eval dataset hash``, recorded in the results'
provenance, and checked against ``authorBaseline.datasetHash`` beside the baseline table of
every report. The hash is tested directly (what changes it and what does not, and that the
documented recipe makes it again), then through the command and pytest runs as users run
them."""

from __future__ import annotations

import hashlib
import html
import json
import shutil
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_elizon_eval import cli
from pytest_elizon_eval.decide.results_data import SuiteInfo, case_of_file, from_data
from pytest_elizon_eval.errors import ElizonError
from pytest_elizon_eval.load import common_forms, model
from pytest_elizon_eval.load.loading import load_yaml
from pytest_elizon_eval.load.packages import load_manifest, load_suite
from pytest_elizon_eval.load.runtime import AuthorBaseline, from_model
from pytest_elizon_eval.load.suite_cache import SuiteCache
from pytest_elizon_eval.reporting.regression import dataset_note
from pytest_elizon_eval.trust import provenance

from .conftest import ECHO_APP, Packages, validate_results
from .test_common_forms import _held_to_the_model, _manifest_both

SUITE = """
cases:
  - id: refund
    input: I was charged twice
    expect: {contains: [charged]}
  - id: hours
    input: {question: When are you open?, lang: en}
    tags: [smoke]
"""
#: SUITE with its cases in the other order, its keys reordered, other quoting and a comment.
SUITE_REORDERED = """
# the same two cases
cases:
  - input: {lang: "en", question: "When are you open?"}
    tags: [smoke]
    id: hours
  - expect:
      contains: ["charged"]
    id: refund
    input: 'I was charged twice'
"""
#: SUITE with one word of one case changed.
SUITE_EDITED = SUITE.replace("charged twice", "charged three times")


def _hash_of(tmp_path: Path, text: str, name: str = "suite.yaml") -> str | None:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return load_suite(path, name).content_hash


# -- the hash itself ------------------------------------------------------------------------

def test_reordering_cases_and_keys_leaves_the_hash_as_it_was(tmp_path: Path) -> None:
    first = load_suite(_write(tmp_path / "a.yaml", SUITE), "a.yaml")
    second = load_suite(_write(tmp_path / "b.yaml", SUITE_REORDERED), "b.yaml")
    assert first.sha256 != second.sha256  # the files differ…
    assert first.content_hash == second.content_hash  # …their cases do not
    assert first.content_hash is not None
    assert first.content_hash.startswith("sha256:")


def test_editing_one_case_changes_the_hash(tmp_path: Path) -> None:
    assert _hash_of(tmp_path, SUITE) != _hash_of(tmp_path, SUITE_EDITED, "edited.yaml")


@pytest.mark.parametrize("other", ["1.0", "true", "'1'"])
def test_a_whole_number_a_float_a_boolean_and_text_hash_apart(tmp_path: Path,
                                                               other: str) -> None:
    whole = "cases:\n  - id: a\n    input: {n: 1}\n"
    assert _hash_of(tmp_path, whole) != _hash_of(tmp_path, whole.replace("1}", f"{other}}}"),
                                                 "other.yaml")


def test_text_is_hashed_as_written_without_unicode_normalisation(tmp_path: Path) -> None:
    """The entry point is given exactly these code points: an é written precomposed
    (U+00E9) and one written as e and a combining accent (U+0065 U+0301) are two inputs."""
    composed = "cases:\n  - id: a\n    input: caf\u00e9\n"
    decomposed = "cases:\n  - id: a\n    input: cafe\u0301\n"
    assert _hash_of(tmp_path, composed) != _hash_of(tmp_path, decomposed, "other.yaml")


def test_a_written_output_null_is_part_of_the_case(tmp_path: Path) -> None:
    plain = "cases:\n  - id: a\n    input: x\n    expect: {}\n"
    asserted = "cases:\n  - id: a\n    input: x\n    expect: {output: null}\n"
    assert _hash_of(tmp_path, plain) != _hash_of(tmp_path, asserted, "other.yaml")


def test_the_documented_recipe_makes_the_same_hash(tmp_path: Path) -> None:
    """docs/format.md#dataset-hash: json.dumps of the cases sorted by id, keys sorted,
    non-ASCII as it is, in UTF-8 — for cases without a default to fill in or a number to
    make a float, that is the file's data as it is."""
    text = """
    cases:
      - id: zeta
        input: {question: "Où est la gare ?", n: 2, ok: true, items: [1, 2.5, null]}
        description: Ünïcode
      - id: alpha
        turns:
          - input: hi
            expect: {contains: [hello]}
          - input: bye
    """
    written = _hash_of(tmp_path, text)
    cases = load_yaml(textwrap.dedent(text).encode())["cases"]
    canonical = json.dumps(sorted(cases, key=lambda case: case["id"]), sort_keys=True,
                           ensure_ascii=False)
    assert written == "sha256:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def test_cases_are_hashed_as_written_with_defaults_left_out(tmp_path: Path) -> None:
    """A judge's samples and tolerance written at their defaults are left out, as if not
    written, and a number where the format wants one is a float
    (docs/format.md#dataset-hash); a value that is not the default is part of the case."""
    short = ("cases:\n  - id: a\n    input: x\n    minPassRate: 1\n    repeat: 3\n"
             "    expect: {judge: {rubric: polite, threshold: 1}}\n")
    spelled_out = ("cases:\n  - id: a\n    input: x\n    minPassRate: 1.0\n    repeat: 3\n"
                   "    expect: {judge: {rubric: polite, threshold: 1.0, samples: 1, "
                   "tolerance: 0.1}}\n")
    assert _hash_of(tmp_path, short) == _hash_of(tmp_path, spelled_out, "other.yaml")
    other = spelled_out.replace("samples: 1,", "samples: 3,")
    assert _hash_of(tmp_path, other, "third.yaml") != _hash_of(tmp_path, short)
    # the recipe of docs/format.md, of the file as written without its defaults
    case = {"id": "a", "input": "x", "minPassRate": 1.0, "repeat": 3,
            "expect": {"judge": {"rubric": "polite", "threshold": 1.0}}}
    text = json.dumps([case], sort_keys=True, ensure_ascii=False)
    assert _hash_of(tmp_path, spelled_out, "fourth.yaml") == \
        "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def test_a_default_the_plugin_adds_later_leaves_every_hash_as_it_was() -> None:
    """A plugin version that adds a key with a default, and fills it in, hashes a case as
    before: the value it fills in is its default, left out (here a judge record as it is,
    and as a later version might make it)."""
    from pytest_elizon_eval.load import content, runtime  # the records, directly

    class Judge(runtime._Plain):
        rubric: str
        threshold: float

    class LaterJudge(runtime._Plain):
        rubric: str
        threshold: float
        temperature: float = 0.0  # what a later version might add

    class Case(runtime._Plain):
        id: str
        judge: object

    now = content.case_text(Case(id="a", judge=Judge(rubric="polite", threshold=0.5)))
    later = content.case_text(Case(id="a", judge=LaterJudge(rubric="polite", threshold=0.5)))
    assert now == later == b'{"id": "a", "judge": {"rubric": "polite", "threshold": 0.5}}'
    # written otherwise than its default, it is part of the case
    assert content.case_text(Case(id="a", judge=LaterJudge(
        rubric="polite", threshold=0.5, temperature=0.7))) != now


def test_cases_are_sorted_by_id_in_code_point_order(tmp_path: Path) -> None:
    """``-`` before a digit, a digit before a letter: Python's own ``str`` order, not a
    locale's (which would sort ``a-z`` as ``az``, after ``ab``)."""
    text = ("cases:\n  - id: ab\n    input: w\n  - id: a9z\n    input: x\n"
            "  - id: a0\n    input: y\n  - id: a-z\n    input: z\n")
    cases = [{"id": "a-z", "input": "z"}, {"id": "a0", "input": "y"},
             {"id": "a9z", "input": "x"}, {"id": "ab", "input": "w"}]
    canonical = json.dumps(cases, sort_keys=True, ensure_ascii=False)
    assert _hash_of(tmp_path, text) == \
        "sha256:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def test_a_data_file_hashes_its_expanded_cases_like_the_same_cases_in_yaml(
        tmp_path: Path) -> None:
    yaml_hash = _hash_of(tmp_path, SUITE)
    jsonl = tmp_path / "suite.jsonl"
    jsonl.write_text(
        '{"id": "hours", "input": {"question": "When are you open?", "lang": "en"}, '
        '"tags": ["smoke"]}\n'
        '{"id": "refund", "input": "I was charged twice", "expect": {"contains": ["charged"]}}\n',
        encoding="utf-8")
    csv = tmp_path / "suite.csv"
    csv.write_text("id,input,input.question,input.lang,expect.contains,tags\n"
                   'refund,I was charged twice,,,"[""charged""]",\n'
                   "hours,,When are you open?,en,,smoke\n", encoding="utf-8")
    assert load_suite(jsonl, "suite.jsonl").content_hash == yaml_hash
    assert load_suite(csv, "suite.csv").content_hash == yaml_hash


def test_the_suite_cache_keeps_the_hash_it_was_made_with(tmp_path: Path) -> None:
    path = _write(tmp_path / "suite.yaml", SUITE)
    cache = SuiteCache(tmp_path)
    cold = load_suite(path, "suite.yaml", cache)
    warm = load_suite(path, "suite.yaml", cache)
    assert warm is not cold  # read back from the entry, not made again
    assert warm.content_hash == cold.content_hash == load_suite(path, "suite.yaml").content_hash


# -- authorBaseline.datasetHash in the manifest ------------------------------------------------

HASH = "sha256:" + "0123456789abcdef" * 4


@pytest.mark.parametrize("text", [
    "evaluation:\n  suite: s.yaml\n  authorBaseline: {pass_rate: 0.9, "
    f"datasetHash: '{HASH}'}}\n",
    "evaluation:\n  suites:\n    - suite: s.yaml\n"
    f"      authorBaseline: {{datasetHash: '{HASH}'}}\n",
])
def test_a_dataset_hash_is_read_alike_with_and_without_pydantic(text: str) -> None:
    data = load_yaml(text.encode())
    fast = common_forms.manifest(data)
    validated, problems = model.validate(model.Manifest, data, model.manifest_shape)
    assert problems == []
    assert validated is not None
    assert fast is not None
    assert fast == from_model(validated)
    assert fast.evaluation is not None
    baseline = fast.evaluation.refs()[0].author_baseline
    assert isinstance(baseline, AuthorBaseline)
    assert baseline.dataset_hash == HASH
    assert "datasetHash" not in baseline.metrics


@pytest.mark.parametrize("value", [
    HASH, HASH.upper(), HASH[:-1], HASH + "0", HASH + "\n", " " + HASH, "sha256:", "", None, 3,
    0.5, True, [HASH], {"sha256": HASH[7:]}, "md5:" + "0" * 32])
def test_every_dataset_hash_the_common_form_takes_the_model_takes_alike(value: object) -> None:
    baseline = {"pass_rate": 1, "datasetHash": value}
    for where in ({"suite": "s.yaml", "authorBaseline": baseline},
                  {"suites": [{"suite": "s.yaml", "authorBaseline": baseline}]}):
        document = {"evaluation": where}
        fast, slow = _manifest_both(yaml.safe_dump(document))
        _held_to_the_model(fast, slow)
        assert (fast is not None) == (value == HASH)
        assert (slow is not None) == (value == HASH)


@pytest.mark.parametrize(("value", "found"), [
    ("abc", "the text 'abc'"),
    (f"'sha256:{HASH[7:].upper()}'", "the text 'sha256:0123456789ABCDEF0123456789ABCD...'"),
    (f"'{HASH[:-1]}'", "the text 'sha256:0123456789abcdef0123456789abcd...'"),
    (f"'{HASH} '", "the text 'sha256:0123456789abcdef0123456789abcd...'"),
    ("3", "the number 3"),
    ("", "null"),
    ("[a]", "a list"),
])
def test_a_malformed_dataset_hash_is_an_error_at_its_line(tmp_path: Path, value: str,
                                                          found: str) -> None:
    manifest = _write(tmp_path / "elizon.yaml", f"""
        name: p
        evaluation:
          suite: s.yaml
          authorBaseline:
            pass_rate: 0.9
            datasetHash: {value}
    """)
    with pytest.raises(ElizonError) as raised:
        load_manifest(manifest, "p/elizon.yaml")
    assert raised.value.lines == [
        "ELIZON_MANIFEST_INVALID: p/elizon.yaml:6: evaluation.authorBaseline.datasetHash: "
        "must be 'sha256:' followed by 64 lowercase hex digits, as 'elizon-eval dataset "
        f"hash' prints it; found {found}"]
    assert common_forms.manifest(load_yaml(manifest.read_bytes())) is None


def test_a_hash_under_another_key_is_said_to_belong_under_dataset_hash(tmp_path: Path) -> None:
    manifest = _write(tmp_path / "elizon.yaml", f"""
        evaluation:
          suite: s.yaml
          authorBaseline: {{pass_rate: 0.9, datsetHash: '{HASH}'}}
    """)
    with pytest.raises(ElizonError) as raised:
        load_manifest(manifest, "elizon.yaml")
    assert raised.value.lines == [
        "ELIZON_MANIFEST_INVALID: elizon.yaml:3: evaluation.authorBaseline.datsetHash: "
        "expected a number, found the text 'sha256:0123456789abcdef0123456789abcd...'; a "
        "dataset's content hash goes under 'datasetHash'"]


def test_the_probe_pack_has_no_dataset_hash_to_pin(tmp_path: Path) -> None:
    manifest = _write(tmp_path / "elizon.yaml", f"""
        evaluation:
          suites:
            - probes: [prompt-injection]
              authorBaseline:
                pass_rate: 1.0
                datasetHash: '{HASH}'
    """)
    with pytest.raises(ElizonError) as raised:
        load_manifest(manifest, "elizon.yaml")
    assert raised.value.lines == [
        "ELIZON_MANIFEST_INVALID: elizon.yaml:6: evaluation.suites[0].authorBaseline."
        "datasetHash: only for a suite file (the probe pack's cases are the plugin's, and "
        "have no dataset hash)"]


def test_the_note_beside_a_baseline_says_only_a_mismatch() -> None:
    other = "sha256:" + "f" * 64
    info = SuiteInfo("s.yaml", "p", "must-pass", False, content_hash=HASH,
                     baseline_dataset_hash=other)
    assert dataset_note(info) == ("the author's baseline was measured on other cases: "
                                  "dataset sha256:ffffffffffff… ≠ this run's "
                                  "sha256:0123456789ab…")
    assert dataset_note(SuiteInfo("s.yaml", "p", "must-pass", False, content_hash=HASH,
                                  baseline_dataset_hash=HASH)) is None
    assert dataset_note(SuiteInfo("s.yaml", "p", "must-pass", False,
                                  content_hash=HASH)) is None


def test_a_results_file_from_before_the_dataset_hash_still_reads() -> None:
    old_suite = {"package": "p", "path": "s.yaml", "sha256": "", "gate": "must-pass",
                 "advisory": False, "baseline": {}}
    case = {"nodeid": "s.yaml::a", "id": "a", "line": 2, "outcome": "passed"}
    info = from_data(SuiteInfo, case_of_file(old_suite, case)["suite"])
    assert (info.content_hash, info.case_count, info.baseline_dataset_hash) == (None,) * 3


def test_shards_that_ran_different_cases_of_one_suite_do_not_merge() -> None:
    def shard(content_hash: str) -> dict[str, Any]:
        return provenance.record(
            started="2025-01-01T00:00:00+00:00", finished="2025-01-01T00:00:01+00:00",
            pytest_version="9", options={}, package_records=[{
                "name": "p", "version": "1", "manifest": "p/elizon.yaml",
                "manifest_sha256": "m", "entries": [], "suites": ["p/s.yaml"], "git": None,
                "datasets": [{"name": "p/s.yaml", "version": "1", "case_count": 2,
                              "content_hash": content_hash}]}])

    same = provenance.merge([("a.json", "x", shard(HASH)), ("b.json", "y", shard(HASH))])
    assert same["packages"][0]["datasets"] == shard(HASH)["packages"][0]["datasets"]
    with pytest.raises(ValueError, match=r"the cases of p/s\.yaml differ between a\.json"):
        provenance.merge([("a.json", "x", shard(HASH)),
                          ("b.json", "y", shard("sha256:" + "f" * 64))])


# -- elizon-eval dataset hash --------------------------------------------------------------------

def _package(packages: Packages, *, baseline: str = "", suite: str = SUITE) -> Path:
    folder = packages.package("bench", suite=suite, app=ECHO_APP, baseline=baseline)
    manifest = folder / "elizon.yaml"
    manifest.write_text(manifest.read_text().replace("name: bench\n",
                                                     "name: bench\nversion: '2.1'\n"))
    return folder


def _dataset_hash(*args: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    status = cli.main(["dataset", "hash", *args])
    out, err = capsys.readouterr()
    return status, out, err


def test_the_command_prints_each_suite_s_version_count_and_hash(
        packages: Packages, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    _package(packages)
    monkeypatch.chdir(packages.root)
    expected = load_suite(packages.root / "bench/eval/suite.yaml", "s").content_hash
    assert expected is not None
    status, out, err = _dataset_hash("bench", capsys=capsys)
    assert (status, err) == (0, "")
    assert out.splitlines() == [
        "package bench (bench/elizon.yaml)",
        f"  bench/eval/suite.yaml  version 2.1  2 cases  {expected}"]
    status, out, _ = _dataset_hash("bench/elizon.yaml", "--json", capsys=capsys)
    assert status == 0
    assert json.loads(out) == {
        "package": "bench", "version": "2.1", "manifest": "bench/elizon.yaml",
        "datasets": [{"name": "bench/eval/suite.yaml", "version": "2.1", "case_count": 2,
                      "content_hash": expected}],
        "probes_not_hashed": []}


@pytest.mark.parametrize(("given", "said"), [
    ("missing", "missing: no such file or folder"),
    ("bench/eval", "bench/eval: not a package (no elizon.yaml in it)"),
    ("bench/app.py", "bench/app.py: not a package, an elizon.yaml, or a suite or data file"),
])
def test_a_path_that_is_not_a_package_is_a_usage_error(
        packages: Packages, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str], given: str, said: str) -> None:
    _package(packages)
    monkeypatch.chdir(packages.root)
    status, out, err = _dataset_hash(given, capsys=capsys)
    assert (status, out) == (2, "")
    assert err.startswith(f"elizon-eval dataset: {said}")


def test_a_malformed_suite_is_a_usage_error_naming_its_line(
        packages: Packages, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    _package(packages, suite="cases:\n  - id: a\n    input: x\n  - id: a\n    input: y\n")
    monkeypatch.chdir(packages.root)
    status, out, err = _dataset_hash("bench", capsys=capsys)
    assert (status, out) == (2, "")
    assert err == ("elizon-eval dataset: EVALUATION_SUITE_INVALID: bench/eval/suite.yaml:4: "
                   "cases[1].id: duplicate id 'a' (first at line 2)\n")


# -- runs --------------------------------------------------------------------------------------

def _results(pytester: pytest.Pytester) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((pytester.path / "r.json").read_text(encoding="utf-8"))
    validate_results(data)
    return data


def test_the_results_provenance_records_each_suite_as_a_dataset(
        pytester: pytest.Pytester, packages: Packages, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    _package(packages)
    packages.write("bench/eval/more.jsonl", '{"id": "one", "input": "x"}\n')
    manifest = packages.root / "bench/elizon.yaml"
    manifest.write_text(manifest.read_text().replace(
        "  suite: ./eval/suite.yaml\n  gate: must-pass\n",
        "  suites:\n    - suite: ./eval/suite.yaml\n    - suite: ./eval/more.jsonl\n"))
    monkeypatch.chdir(packages.root)
    _, said, _ = _dataset_hash("bench", "--json", capsys=capsys)
    # one case deselected: the record is of the suite's cases, not of those that ran
    result = pytester.runpytest("--elizon-results=r.json", "-k", "not hours")
    result.assert_outcomes(passed=2, deselected=1)
    data = _results(pytester)
    [package] = data["provenance"]["packages"]
    # in the order of the package's suites there, as the command lists the manifest's
    assert [d["name"] for d in package["datasets"]] == package["suites"]
    recorded = {d["name"]: d for d in package["datasets"]}
    assert recorded == {d["name"]: d for d in json.loads(said)["datasets"]} == {
        "bench/eval/suite.yaml": {
            "name": "bench/eval/suite.yaml", "version": "2.1", "case_count": 2,
            "content_hash": load_suite(packages.root / "bench/eval/suite.yaml",
                                       "s").content_hash},
        "bench/eval/more.jsonl": {
            "name": "bench/eval/more.jsonl", "version": "2.1", "case_count": 1,
            "content_hash": load_suite(packages.root / "bench/eval/more.jsonl",
                                       "m").content_hash}}
    suites = {s["path"]: s for s in data["suites"]}
    assert suites["bench/eval/suite.yaml"]["content_hash"] == recorded[
        "bench/eval/suite.yaml"]["content_hash"]
    assert suites["bench/eval/suite.yaml"]["case_count"] == 2
    assert suites["bench/eval/suite.yaml"]["baseline_dataset_hash"] is None


def test_under_xdist_the_controller_records_the_datasets_its_workers_loaded(
        pytester: pytest.Pytester, packages: Packages) -> None:
    _package(packages)
    result = pytester.runpytest_subprocess("-n", "2", "--elizon-results=r.json")
    result.assert_outcomes(passed=2)
    [package] = _results(pytester)["provenance"]["packages"]
    assert package["datasets"] == [{
        "name": "bench/eval/suite.yaml", "version": "2.1", "case_count": 2,
        "content_hash": load_suite(packages.root / "bench/eval/suite.yaml", "s").content_hash}]


MISMATCH = "the author's baseline was measured on other cases: dataset "


def test_a_baseline_measured_on_other_cases_says_so_in_every_report(
        pytester: pytest.Pytester, packages: Packages) -> None:
    measured_on = _hash_of(pytester.path, SUITE, "measured.yaml")
    assert measured_on is not None
    _package(packages, suite=SUITE_EDITED,
             baseline=f"pass_rate: 1.0;datasetHash: '{measured_on}'")
    now = load_suite(packages.root / "bench/eval/suite.yaml", "s").content_hash
    assert now is not None
    result = pytester.runpytest("--elizon-markdown=s.md", "--elizon-html=r.html",
                                "--elizon-results=r.json", "--elizon-report=full")
    result.assert_outcomes(passed=2)
    said = f"{MISMATCH}{measured_on[:19]}… ≠ this run's {now[:19]}…"
    result.stdout.fnmatch_lines(["bench/eval/suite.yaml *", f"    {said}",
                                 "    metric*author baseline*"])
    assert f"⚠️ {said}" in (pytester.path / "s.md").read_text(encoding="utf-8")
    assert (f'<p class="ko dataset-mismatch">⚠️ {html.escape(said)}</p>'
            in (pytester.path / "r.html").read_text(encoding="utf-8"))
    [suite] = _results(pytester)["suites"]
    assert (suite["baseline_dataset_hash"], suite["content_hash"]) == (measured_on, now)


def test_a_baseline_on_the_same_cases_in_another_order_says_nothing_more(
        pytester: pytest.Pytester, packages: Packages) -> None:
    measured_on = _hash_of(pytester.path, SUITE, "measured.yaml")
    _package(packages, suite=SUITE_REORDERED,
             baseline=f"pass_rate: 1.0;datasetHash: '{measured_on}'")
    result = pytester.runpytest("--elizon-markdown=s.md", "--elizon-html=r.html",
                                "--elizon-report=full")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["    metric*author baseline*"])
    assert "measured on other cases" not in result.stdout.str()
    assert "measured on other cases" not in (pytester.path / "s.md").read_text(encoding="utf-8")
    assert "dataset-mismatch" not in (pytester.path / "r.html").read_text(encoding="utf-8")


def test_a_malformed_dataset_hash_stops_the_run_at_its_line(
        pytester: pytest.Pytester, packages: Packages) -> None:
    _package(packages, baseline="pass_rate: 1.0;datasetHash: sha256:abc")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines([
        "ELIZON_MANIFEST_INVALID: bench/elizon.yaml:9: evaluation.authorBaseline.datasetHash: "
        "must be 'sha256:' followed by 64 lowercase hex digits, as 'elizon-eval dataset "
        "hash' prints it; found the text 'sha256:abc'"])


def _write(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


OFFLINE_CHAT = Path(__file__).parent.parent / "example_suites" / "offline-chat"


def test_the_offline_chat_example_pins_the_cases_its_baseline_was_measured_on(
        pytester: pytest.Pytester) -> None:
    """The example shows ``authorBaseline.datasetHash``, and it is its cases' hash: a run
    compares with the baseline without a "measured on other cases" note (an edit of the
    cases that does not update it is caught here)."""
    manifest = yaml.safe_load((OFFLINE_CHAT / "elizon.yaml").read_text(encoding="utf-8"))
    pinned = manifest["evaluation"]["authorBaseline"]["datasetHash"]
    assert pinned == load_suite(OFFLINE_CHAT / "eval" / "orders.yaml", "o").content_hash
    example = pytester.path / "offline-chat"
    shutil.copytree(OFFLINE_CHAT, example, ignore=shutil.ignore_patterns("__pycache__"))
    result = pytester.runpytest("offline-chat", "--elizon-history=off", "--elizon-report=full")
    assert result.parseoutcomes() == {"passed": 5}
    result.stdout.fnmatch_lines(["    metric*author baseline*"])
    assert "measured on other cases" not in result.stdout.str()
