"""Issue 19: values a loader must refuse at their own line, and a data file that must not be
refused for the size of one cell.

Non-finite numbers (YAML's ``.inf``, ``-.inf``, ``.nan``, or a literal too large for a float)
in every numeric key of a suite and a manifest; an explicit null ``input`` or ``turns``; a bad
item of a ``probes:`` list; a CSV cell longer than the csv module's default field limit. Checked
on the lines the loaders give, as tests/test_bad_files.py does, with one pytester run each for
a suite and for the ini form of prices.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from pytest_elizon_eval.errors import ElizonError
from pytest_elizon_eval.load import datafiles, loading
from pytest_elizon_eval.load.packages import load_manifest, load_suite

from .conftest import ECHO_APP, Packages
from .test_bad_files import error_lines, run_bad

#: How YAML may write a number that is not finite, and how the message names it.
NON_FINITE = {
    ".inf": "infinity (.inf)",
    "-.inf": "minus infinity (-.inf)",
    ".nan": "not-a-number (.nan)",
    "1.0e+999": "infinity (.inf)",  # a float literal too large: YAML reads it as .inf
}

#: (key, suite text with {v} where the number goes, line of the key, whole number or not).
SUITE_NUMBERS = [
    ("cases[0].minPassRate", "  - id: a\n    input: x\n    repeat: 3\n    minPassRate: {v}\n",
     5, False),
    ("cases[0].repeat", "  - id: a\n    input: x\n    repeat: {v}\n", 4, True),
    ("cases[0].expect.maxLatencyMs", "  - id: a\n    input: x\n    expect:\n"
     "      maxLatencyMs: {v}\n", 5, True),
    ("cases[0].expect.maxCostUsd", "  - id: a\n    input: x\n    expect:\n"
     "      maxCostUsd: {v}\n", 5, False),
    ("cases[0].expect.maxTokens", "  - id: a\n    input: x\n    expect:\n"
     "      maxTokens: {v}\n", 5, True),
    ("cases[0].expect.judge.threshold", "  - id: a\n    input: x\n    expect:\n      judge:\n"
     "        rubric: polite\n        threshold: {v}\n", 7, False),
    ("cases[0].expect.checks[0].threshold", "  - id: a\n    input: x\n    expect:\n"
     "      checks:\n        - check: mine\n          threshold: {v}\n", 7, False),
    ("cases[0].expect.toolCalls.maxCalls", "  - id: a\n    input: x\n    expect:\n"
     "      toolCalls:\n        maxCalls: {v}\n", 6, True),
    ("cases[0].turns[0].expect.maxCostUsd", "  - id: a\n    turns:\n      - input: x\n"
     "        expect: {{maxCostUsd: {v}}}\n", 5, False),
]

#: The same for a manifest (its suite is a good one).
MANIFEST_NUMBERS = [
    ("prices.m.input", "prices:\n  m:\n    input: {v}\n    output: 0.6\n", 3, False),
    ("prices.m.output", "prices:\n  m:\n    input: 0.15\n    output: {v}\n", 4, False),
    ("entry.timeout", "entry:\n  url: http://127.0.0.1:9/\n  timeout: {v}\n", 3, False),
    ("evaluation.minPassRate", "evaluation:\n  suite: ./eval/suite.yaml\n  minPassRate: {v}\n",
     3, False),
    ("evaluation.repeat", "evaluation:\n  suite: ./eval/suite.yaml\n  repeat: {v}\n", 3, True),
    ("evaluation.authorBaseline.pass_rate", "evaluation:\n  suite: ./eval/suite.yaml\n"
     "  authorBaseline:\n    pass_rate: {v}\n", 4, False),
    ("evaluation.suites[0].minPassRate", "evaluation:\n  suites:\n    - suite: ./eval/suite.yaml\n"
     "      minPassRate: {v}\n", 4, False),
    ("evaluation.suites[0].authorBaseline.pass_rate", "evaluation:\n  suites:\n"
     "    - suite: ./eval/suite.yaml\n      authorBaseline: {{pass_rate: {v}}}\n", 4, False),
]

GOOD_SUITE = "cases:\n  - id: a\n    input: x\n"


def _expected(key: str, whole: bool, shown: str) -> str:
    return f"{key}: expected a whole number, found {shown}" if whole else \
        f"{key}: must be a finite number, found {shown}"


@pytest.mark.parametrize("written", list(NON_FINITE))
@pytest.mark.parametrize(("key", "text", "line", "whole"), SUITE_NUMBERS,
                         ids=[row[0] for row in SUITE_NUMBERS])
def test_a_suite_number_that_is_not_finite_is_refused_at_its_line(
        tmp_path: Path, key: str, text: str, line: int, whole: bool, written: str) -> None:
    lines = error_lines(tmp_path, "cases:\n" + text.format(v=written))
    assert lines == [f"EVALUATION_SUITE_INVALID: pkg/eval/suite.yaml:{line}: "
                     f"{_expected(key, whole, NON_FINITE[written])}"]


@pytest.mark.parametrize("written", list(NON_FINITE))
@pytest.mark.parametrize(("key", "text", "line", "whole"), MANIFEST_NUMBERS,
                         ids=[row[0] for row in MANIFEST_NUMBERS])
def test_a_manifest_number_that_is_not_finite_is_refused_at_its_line(
        tmp_path: Path, key: str, text: str, line: int, whole: bool, written: str) -> None:
    if not text.startswith("evaluation"):
        text += "evaluation:\n  suite: ./eval/suite.yaml\n"
    lines = error_lines(tmp_path, GOOD_SUITE, text.format(v=written))
    assert lines == [f"ELIZON_MANIFEST_INVALID: pkg/elizon.yaml:{line}: "
                     f"{_expected(key, whole, NON_FINITE[written])}"]


@pytest.mark.parametrize(("written", "message"), [
    ("-1", "prices.m.input: must be at least 0.0, found -1"),
    ("cheap", "prices.m.input: expected a number, found the text 'cheap'"),
    ("0.15", None),
])
def test_prices_finite_and_not_negative_are_the_only_ones_accepted(
        tmp_path: Path, written: str, message: str | None) -> None:
    manifest = f"prices:\n  m:\n    input: {written}\n    output: 0.6\n" \
        "evaluation:\n  suite: ./eval/suite.yaml\n"
    if message is None:
        with pytest.raises(AssertionError, match="no error"):
            error_lines(tmp_path, GOOD_SUITE, manifest)
        assert load_manifest(tmp_path / "pkg/elizon.yaml", "pkg/elizon.yaml").prices == {
            "m": (0.15, 0.6, None, None)}  # no cache rates (tests/test_cache_prices.py)
        return
    assert error_lines(tmp_path, GOOD_SUITE, manifest) == [
        f"ELIZON_MANIFEST_INVALID: pkg/elizon.yaml:3: {message}"]


def test_a_suite_with_an_infinite_cost_limit_stops_the_run(
        packages: Packages, pytester: pytest.Pytester) -> None:
    result = run_bad(packages, pytester, "cases:\n  - id: a\n    input: x\n    expect:\n"
                                         "      maxCostUsd: .inf\n")
    result.stdout.fnmatch_lines(["EVALUATION_SUITE_INVALID: pkg/eval/suite.yaml:5: "
                                 "cases[[]0[]].expect.maxCostUsd: must be a finite number, "
                                 "found infinity (.inf)"])


@pytest.mark.parametrize("price", ["inf", "nan", "-inf"])
def test_an_ini_price_that_is_not_finite_is_a_usage_error(
        packages: Packages, pytester: pytest.Pytester, price: str) -> None:
    packages.package(suite=GOOD_SUITE, app=ECHO_APP)
    pytester.makeini(f"[pytest]\nelizon_prices =\n    m {price} 0\n")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*ini option elizon_prices in *: 'm {price} 0': expected "
                                 "'MODEL INPUT OUTPUT'*"])


# -- null where a value is needed -------------------------------------------------------------

@pytest.mark.parametrize(("written", "line"), [("input: null", 4), ("input: ~", 4),
                                                ("input:", 4), ("input: null\n    tags: [t]", 4)])
def test_a_null_input_is_said_at_its_key(tmp_path: Path, written: str, line: int) -> None:
    lines = error_lines(tmp_path, f"cases:\n  - id: a\n    description: d\n    {written}\n")
    assert lines == [f"EVALUATION_SUITE_INVALID: pkg/eval/suite.yaml:{line}: cases[0].input: "
                     "input is null; give a string or a mapping of named inputs (quote 'null' "
                     "if you mean the text)"]


def test_a_null_input_in_a_jsonl_row_is_said_at_its_row(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text('{"id": "a", "input": "x"}\n{"id": "b", "input": null}\n')
    with pytest.raises(ElizonError) as info:
        load_suite(path, "s.jsonl")
    assert info.value.lines == ["EVALUATION_SUITE_INVALID: s.jsonl:2: cases[1].input: input is "
                                "null; give a string or a mapping of named inputs (quote 'null' "
                                "if you mean the text)"]


def test_null_turns_are_said_at_their_key(tmp_path: Path) -> None:
    lines = error_lines(tmp_path, "cases:\n  - id: a\n    turns:\n  - id: b\n    input: x\n")
    assert lines == ["EVALUATION_SUITE_INVALID: pkg/eval/suite.yaml:3: cases[0].turns: turns is "
                     "null; give a list of turns, each with an 'input'"]


def test_a_null_input_next_to_turns_is_both_problems(tmp_path: Path) -> None:
    lines = error_lines(tmp_path, "cases:\n  - id: a\n    input: null\n    turns:\n"
                                  "      - input: x\n")
    assert lines == [
        "EVALUATION_SUITE_INVALID: pkg/eval/suite.yaml:2: cases[0]: a case has exactly one of "
        "'input' (one call) or 'turns' (a conversation)",
        "EVALUATION_SUITE_INVALID: pkg/eval/suite.yaml:3: cases[0].input: input is null; give a "
        "string or a mapping of named inputs (quote 'null' if you mean the text)"]


# -- probes: items --------------------------------------------------------------------------------

def test_each_bad_probes_item_is_said_at_its_own_line(tmp_path: Path) -> None:
    manifest = ("evaluation:\n  suites:\n    - probes:\n        - jailbreak\n        - 3\n"
                "        - mine.yaml\n        - mind-control\n")
    categories = ("the categories are prompt-injection, jailbreak, data-extraction, "
                  "persona-override, instruction-bypass, tool-misuse, or 'all' (or a path to "
                  "your own probe file ending in .yaml)")
    assert error_lines(tmp_path, GOOD_SUITE, manifest) == [
        "ELIZON_MANIFEST_INVALID: pkg/elizon.yaml:5: evaluation.suites[0].probes: item 1: "
        f"unknown category the number 3; {categories}",
        "ELIZON_MANIFEST_INVALID: pkg/elizon.yaml:7: evaluation.suites[0].probes: item 3: "
        f"unknown category 'mind-control'; {categories}"]


def test_known_probes_items_and_own_files_are_accepted(tmp_path: Path) -> None:
    (tmp_path / "mine.yaml").write_text("category: jailbreak\nprobes:\n  - id: p\n"
                                        "    severity: low\n    input: hi\n")
    (tmp_path / "elizon.yaml").write_text("evaluation:\n  suites:\n    - probes:\n"
                                          "        - jailbreak\n        - mine.yaml\n")
    package = load_manifest(tmp_path / "elizon.yaml", "elizon.yaml")
    assert [s.probe_source for s in package.suites] == ["elizon:probes/jailbreak.yaml",
                                                        "mine.yaml"]


# -- a long CSV cell ------------------------------------------------------------------------------

def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8", newline="")
    return path


def _formats(tmp_path: Path, value: str) -> dict[str, Path]:
    """One case with ``value`` as its input, in CSV, JSONL and YAML."""
    quoted = value.replace('"', '""')
    return {
        "csv": _write(tmp_path, "s.csv", f'id,input\na,"{quoted}"\n'),
        "jsonl": _write(tmp_path, "s.jsonl", json.dumps({"id": "a", "input": value}) + "\n"),
        "yaml": _write(tmp_path, "s.yaml", f"cases:\n  - id: a\n    input: {json.dumps(value)}\n"),
    }


def test_a_csv_cell_is_capped_by_the_file_cap_as_in_jsonl_and_yaml(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cap = 300_000
    monkeypatch.setattr(datafiles, "MAX_FILE_BYTES", cap)
    monkeypatch.setattr(loading, "MAX_FILE_BYTES", cap)
    before = csv.field_size_limit()
    long = ('say "hi", then\nwait. ' * 10_000)[:200_000]  # over the csv module's 131,072
    for kind, path in _formats(tmp_path, long).items():
        assert load_suite(path, path.name).cases[0].input == long, kind
    assert csv.field_size_limit() == before, "the csv module's limit is put back"

    too_long = "x" * cap  # with its row, the file is over the cap
    for kind, path in _formats(tmp_path, too_long).items():
        with pytest.raises(ElizonError) as info:
            load_suite(path, "suite")
        size = path.stat().st_size
        assert info.value.lines == [f"EVALUATION_SUITE_INVALID: suite: file is {size:,} bytes; "
                                    f"the limit is {cap:,}"], kind
    assert csv.field_size_limit() == before


def test_a_csv_file_that_fails_puts_the_csv_limit_back(tmp_path: Path) -> None:
    before = csv.field_size_limit()
    path = _write(tmp_path, "s.csv", 'id,input\na,"' + "y" * 140_000 + '"x\n')
    with pytest.raises(ElizonError) as info:
        load_suite(path, "s.csv")
    assert info.value.lines == ["EVALUATION_SUITE_INVALID: s.csv:2: not CSV: ',' expected "
                                "after '\"'"]
    assert csv.field_size_limit() == before
