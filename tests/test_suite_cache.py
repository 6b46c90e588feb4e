"""The validated suite cache (docs/contract.md#suite-cache) and the plain runtime classes.

Direct tests of load/suite_cache.py and load/runtime.py over the example packages' real
files, plus one subprocess run that shows a warm session imports no pydantic (or any
other heavy module a one-case run does not use).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_elizon_eval.errors import ElizonError
from pytest_elizon_eval.history.resume import case_sha256
from pytest_elizon_eval.load import model, runtime
from pytest_elizon_eval.load.content import case_text
from pytest_elizon_eval.load.packages import load_manifest, load_suite
from pytest_elizon_eval.load.suite_cache import SuiteCache, for_pytest_cache

from .conftest import ECHO_APP, Packages, imported_by_a_session

EXAMPLES = Path(__file__).resolve().parent.parent / "example_suites"
SUITES = sorted(p for p in EXAMPLES.glob("*/eval/*.yaml"))
MANIFESTS = sorted(EXAMPLES.glob("*/elizon.yaml"))


def _entries(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.pickle"))


def test_warm_and_cold_loads_are_equal(tmp_path: Path) -> None:
    cache = SuiteCache(tmp_path)
    for path in SUITES:
        plain = load_suite(path, path.name)
        cold = load_suite(path, path.name, cache)
        warm = load_suite(path, path.name, cache)
        assert cold == plain
        assert warm == cold
        assert warm is not cold  # read back from the entry, not the same object
        # each case's content as resume hashes it is kept with it, and is what it hashes
        assert warm.case_texts == tuple(case_text(c) for c in warm.cases)
        assert all(isinstance(text, bytes) for text in warm.case_texts)
    for path in MANIFESTS:
        assert load_manifest(path, path.name, cache) == load_manifest(path, path.name) \
            == load_manifest(path, path.name, cache)
    assert len(_entries(tmp_path)) == len(SUITES) + len(MANIFESTS)


def test_runtime_classes_mirror_the_models() -> None:
    """Every model has its runtime class with the same fields and aliases, and a case's
    dump (what resume hashes) is the model's own."""
    # fields from_model fills from what is not a model field: Expect's model_fields_set,
    # AuthorBaseline's extra keys (its metrics, any name)
    made_apart = {("Expect", "output_given"), ("AuthorBaseline", "metrics")}
    for name, cls in runtime._CLASSES.items():
        fields = getattr(model, name).model_fields
        assert [f for f in cls._FIELDS if (name, f) not in made_apart] \
            == list(fields), name
        assert {n: f.alias for n, f in fields.items() if f.alias} == cls.ALIASES, name
    for path in SUITES:
        data = load_suite(path, path.name).cases
        validated = model.validate(model.Suite, _yaml(path))[0]
        assert validated is not None
        for case, pydantic_case in zip(data, validated.cases, strict=True):
            dumped = pydantic_case.model_dump(by_alias=True, exclude_none=True, warnings=False)
            assert json.dumps(case.model_dump(), sort_keys=True, default=repr) \
                == json.dumps(dumped, sort_keys=True, default=repr)
            assert case_sha256(case) == case_sha256(pydantic_case)  # type: ignore[arg-type]
            if case.expect is not None:
                assert case.expect.checks_output == (
                    "output" in pydantic_case.expect.model_fields_set)  # type: ignore[union-attr]


def _yaml(path: Path) -> object:
    from pytest_elizon_eval.load.loading import load_yaml

    return load_yaml(path.read_bytes())


def test_a_file_with_an_error_is_never_cached_and_fails_alike(tmp_path: Path) -> None:
    suite = tmp_path / "suite.yaml"
    suite.write_text("cases:\n  - id: a\n    input: hi\n    expect: {contians: [x]}\n")
    cache = SuiteCache(tmp_path / "cache")
    (tmp_path / "cache").mkdir()
    messages = []
    for _ in range(2):
        with pytest.raises(ElizonError) as caught:
            load_suite(suite, "suite.yaml", cache)
        messages.append(str(caught.value))
    with pytest.raises(ElizonError) as without:
        load_suite(suite, "suite.yaml")
    assert messages == [str(without.value)] * 2
    assert "unknown key 'contians' (did you mean 'contains'?)" in messages[0]
    assert _entries(tmp_path / "cache") == []
    # fixed, it is validated and stored; changed again, the new bytes are validated anew
    # and replace the entry
    for wanted in ("x", "y"):
        suite.write_text("cases:\n  - id: a\n    input: hi\n"
                         f"    expect: {{contains: [{wanted}]}}\n")
        raw = suite.read_bytes()
        assert cache.get("suite", suite, raw) is None
        loaded = load_suite(suite, "suite.yaml", cache)
        assert loaded.cases[0].expect.contains == [wanted]  # type: ignore[union-attr]
        assert cache.get("suite", suite, raw) == loaded
        assert len(_entries(tmp_path / "cache")) == 1


@pytest.mark.parametrize("damage", ["garbage", "truncated", "foreign", "unreadable"])
def test_an_unusable_entry_is_a_miss(tmp_path: Path, damage: str) -> None:
    import pickle

    suite = SUITES[0]
    raw = suite.read_bytes()
    cache = SuiteCache(tmp_path)
    good = load_suite(suite, suite.name, cache)
    (entry,) = _entries(tmp_path)
    key = cache.key("suite", suite, raw)
    if damage == "garbage":
        entry.write_bytes(key + b"not a pickle")
    elif damage == "truncated":
        entry.write_bytes(entry.read_bytes()[:100])
    elif damage == "foreign":  # another version's or another file's entry
        entry.write_bytes(b"0" * 64 + b"\n" + pickle.dumps("not a LoadedSuite"))
    else:
        entry.unlink()
        entry.mkdir()  # reading it fails with an OSError
    assert cache.get("suite", suite, raw) is None
    assert load_suite(suite, suite.name, cache) == good
    if damage != "unreadable":  # validated again and stored anew
        assert cache.get("suite", suite, raw) == good


def test_without_cacheprovider_there_is_no_cache(tmp_path: Path) -> None:
    class Unwritable:
        def mkdir(self, name: str) -> Path:
            raise PermissionError(13, "denied")

    assert for_pytest_cache(None) is None
    assert for_pytest_cache(Unwritable()) is None
    missing = SuiteCache(tmp_path / "gone")  # its folder removed: a miss, and no write
    assert load_suite(SUITES[0], "s", missing) == load_suite(SUITES[0], "s")


#: Modules a one-case run of an instant entry point needs none of.
HEAVY = ("pydantic", "pydantic_core", "httpx", "anyio", "jsonschema", "regex", "junit_xml",
         "cryptography", "asyncio", "yaml")


def test_a_warm_session_imports_nothing_heavy(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", elizon="entry: app:answer\nevaluation:\n  suite: suite.yaml\n")
    pytester.makefile(".yaml", suite="cases:\n  - id: one\n    input: hi\n"
                                     "    expect: {contains: [hi]}\n")
    pytester.makepyfile(app="def answer(text):\n    return text\n")
    pytester.runpytest("-p", "no:randomly").assert_outcomes(passed=1)  # cold: writes it
    assert _entries(pytester.path / ".pytest_cache" / "d" / "elizon" / "suites")
    done, heavy = imported_by_a_session(pytester.path, among=HEAVY)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout
    assert heavy == []


#: What calls an entry point or a judge, and what writes the reports and the history: a
#: session that only collects (what an IDE runs on every save) imports none of it.
RUN_ONLY = (*(f"pytest_elizon_eval.{m}" for m in (
    "bind.entries", "bind.judging", "bind.http_client", "bind.calling", "run.answers",
    "run.sdk_answers", "reporting.terminal", "history.recorder")), "sqlite3")


def test_collect_only_imports_nothing_that_runs_or_reports(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", elizon="entry: app:answer\njudge: app:grade\n"
                                      "evaluation:\n  suite: suite.yaml\n")
    pytester.makefile(".yaml", suite="cases:\n  - id: one\n    input: hi\n"
                                     "    expect: {contains: [hi], judge: {rubric: r, "
                                     "threshold: 0.5}}\n")
    pytester.makepyfile(app="def answer(text):\n    return text\n")
    done, imported = imported_by_a_session(pytester.path, "--collect-only", among=RUN_ONLY)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "suite.yaml::one" in done.stdout
    assert imported == []


def test_probe_files_are_cached_and_probe_cases_are_what_the_model_makes(tmp_path: Path
                                                                         ) -> None:
    from pytest_elizon_eval.redteam import pack

    cache = SuiteCache(tmp_path)
    for category in pack.CATEGORIES:
        path = pack.pack_file(category)
        cold = pack.load_probes(path, category, cache)
        assert pack.load_probes(path, category, cache) == cold == pack.load_probes(path, "x")
    assert len(_entries(tmp_path)) == len(pack.CATEGORIES)
    for probe in pack.catalogue():
        for name in (None, "question"):
            case = pack.to_case(probe, "CANARY-1-ELZ", name)
            data = {"id": case.id, "description": case.description, "tags": case.tags,
                    "controls": case.controls, **case.model_dump()}
            assert runtime.Case.model_validate(data) == case


def test_a_session_reports_alike_cold_warm_and_without_the_cache(packages: Packages) -> None:
    """Users see the same outcomes and the same error, whatever the cache holds; the broken
    file gets no entry, the good ones do."""
    packages.package(suite="cases:\n  - id: a\n    input: hi\n    expect: {contains: [hi]}\n",
                     app=ECHO_APP)
    packages.write("pkg/eval/broken.yaml", "cases:\n  - id: b\n    input: hi\n"
                                           "    expect: {contians: [hi]}\n")
    packages.write("pkg/elizon.yaml", "name: pkg\nentry: app:answer\nevaluation:\n  suites:\n"
                   "    - suite: ./eval/suite.yaml\n    - suite: ./eval/broken.yaml\n")
    outputs = []
    for extra in ([], [], ["-p", "no:cacheprovider"]):  # cold, warm, without a cache
        result = packages.pytester.runpytest("--continue-on-collection-errors", *extra)
        result.assert_outcomes(passed=1, errors=1)
        outputs.append([line for line in result.outlines if "EVALUATION_SUITE_INVALID" in line
                        or "contians" in line])
    assert outputs[0] == outputs[1] == outputs[2]
    assert any("unknown key 'contians'" in line for line in outputs[0])
    folder = packages.root / ".pytest_cache" / "d" / "elizon" / "suites"
    assert len(_entries(folder)) == 2  # the manifest and the good suite
