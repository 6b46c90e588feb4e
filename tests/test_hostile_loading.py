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

from pytest_elizon_eval import datafiles, loading
from pytest_elizon_eval.errors import ElizonError
from pytest_elizon_eval.packages import load_suite

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
