"""Issue 11: data files (.jsonl, .json, .csv) as suites — readers and bad rows directly, one
pytester run for collection, node ids and row lines."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_elizon_eval.errors import ElizonError
from pytest_elizon_eval.load.packages import load_suite

from .conftest import ECHO_APP, Packages


def _load(tmp_path: Path, name: str, text: str | bytes) -> list[str] | tuple[object, ...]:
    """The cases' (id, input, expect, line), or the error lines."""
    path = tmp_path / name
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    try:
        loaded = load_suite(path, name)
    except ElizonError as exc:
        return exc.lines
    return tuple((c.id, c.input, c.expect.model_dump(by_alias=True, exclude_none=True)
                  if c.expect else None, line) for c, line in zip(loaded.cases, loaded.lines,
                                                                  strict=True))


def test_jsonl_rows_and_a_bad_row(tmp_path: Path) -> None:
    good = ('{"id": "a", "input": "hi", "expect": {"contains": ["hi"]}}\n\n'
            '{"id": "b", "input.q": "x", "input.n": 2, "expect.equals": "q=x"}\n')
    assert _load(tmp_path, "s.jsonl", good) == (
        ("a", "hi", {"contains": ["hi"]}, 1), ("b", {"q": "x", "n": 2}, {"equals": "q=x"}, 3))
    bad = ('{"id": "a", "input": "hi"}\n{"id": "Bad", "input": "hi"}\n{"id": "c"}\n'
           '{"id": "d", "input": "x", "expect": {"contains": 3}}\n{"id": "a", "input": "x"}\n')
    assert _load(tmp_path, "s.jsonl", bad) == [
        "EVALUATION_SUITE_INVALID: s.jsonl:2: cases[1].id: id 'Bad' must be lowercase words "
        "joined by hyphens (^[a-z0-9]+(-[a-z0-9]+)*$)",
        "EVALUATION_SUITE_INVALID: s.jsonl:3: cases[2]: a case has exactly one of 'input' "
        "(one call) or 'turns' (a conversation)",
        "EVALUATION_SUITE_INVALID: s.jsonl:4: cases[3].expect.contains: expected a list, "
        "found the number 3",
        "EVALUATION_SUITE_INVALID: s.jsonl:5: cases[4].id: duplicate id 'a' (first at line 1)",
    ]


def test_jsonl_rows_that_are_not_json(tmp_path: Path) -> None:
    text = '{"id": "a", "input": "x"}\n{"id": "b", input}\n[1]\n{"id": "c", "id": "d"}\n' \
           '{"id": "e", "input": NaN}\n'
    assert _load(tmp_path, "s.jsonl", text) == [
        "EVALUATION_SUITE_INVALID: s.jsonl:2: row: not JSON: Expecting property name enclosed "
        "in double quotes (column 13)",
        "EVALUATION_SUITE_INVALID: s.jsonl:3: row: a row must be a JSON object (a case), "
        "found list",
        "EVALUATION_SUITE_INVALID: s.jsonl:4: row: not JSON: the key 'id' is repeated in one "
        "object",
        "EVALUATION_SUITE_INVALID: s.jsonl:5: row: not JSON: NaN is not a JSON number this "
        "plugin accepts",
    ]


def test_json_array_lines_and_a_bad_item(tmp_path: Path) -> None:
    good = '[\n  {"id": "a", "input": "x"},\n  {"id": "b",\n   "input": {"q": 1}}\n]\n'
    assert _load(tmp_path, "s.json", good) == (("a", "x", None, 2), ("b", {"q": 1}, None, 3))
    bad = '[\n  {"id": "a", "input": "x"},\n  {"id": "b", "input": "x",\n' \
          '   "expect": {"maxLatencyMs": -1}},\n  "text"\n]\n'
    assert _load(tmp_path, "s.json", bad) == [
        "EVALUATION_SUITE_INVALID: s.json:5: item: each item must be a JSON object (a case), "
        "found str"]
    assert _load(tmp_path, "s.json", bad.replace(',\n  "text"', "")) == [
        "EVALUATION_SUITE_INVALID: s.json:3: cases[1].expect.maxLatencyMs: must be at least 0, "
        "found -1"]
    assert _load(tmp_path, "s.json", '[\n {"id": "a", "input": "x"}\n {"id": "b"}]') == [
        "EVALUATION_SUITE_INVALID: s.json:3: not JSON: expected ',' or ']' after an item"]
    assert _load(tmp_path, "s.json", '{"cases": []}') == [
        "EVALUATION_SUITE_INVALID: s.json: a .json suite must be a JSON array of case objects "
        '([{"id": …, "input": …}, …])']


def test_csv_columns_and_a_bad_row(tmp_path: Path) -> None:
    good = ('id,description,input.q,expect,expect.contains,expect.equals,tags\n'
            'a,first,"two\nlines",,"[""x""]",42,"smoke, fast"\n'
            'b,,y,"{""startsWith"": ""y""}",,,\n')
    assert _load(tmp_path, "s.csv", good) == (
        ("a", {"q": "two\nlines"}, {"contains": ["x"], "equals": "42"}, 2),
        ("b", {"q": "y"}, {"startsWith": "y"}, 4))
    bad = ('id,input,expect.contains,expect\n'
           'ok,x,,\n'
           'bad-contains,x,plain words,\n'
           'bad-expect,x,,{not json\n'
           'too-many,x,,,extra\n')
    assert _load(tmp_path, "s.csv", bad) == [
        "EVALUATION_SUITE_INVALID: s.csv:4: row: column 'expect': not a JSON value: "
        "'{not json'",
        "EVALUATION_SUITE_INVALID: s.csv:5: row: 5 cells, but the header names 4 columns",
    ]
    assert _load(tmp_path, "s.csv", bad.split("bad-expect")[0].rstrip("\n").rsplit("\n", 0)[0]
                 ) == ["EVALUATION_SUITE_INVALID: s.csv:3: cases[1].expect.contains: expected "
                       "a list, found the text 'plain words'"]


@pytest.mark.parametrize(("name", "data", "message"), [
    ("s.csv", b"input\nx\n", "s.csv:1: header: no 'id' column; a case needs an id"),
    ("s.csv", b"id,id\nx,y\n", "s.csv:1: header: column 'id' is repeated"),
    ("s.csv", b'id,input\na,"unclosed\n', "s.csv:2: not CSV: unexpected end of data"),
    ("s.csv", b"", "s.csv: file is empty; a .csv suite needs a header row"),
    ("s.jsonl", b'{"id": "a", "input": "\xff"}\n', "s.jsonl:1: not UTF-8 text (byte 0xff"),
    ("s.jsonl", b'{"id": "a"}\n\0\n', "s.jsonl:2: a NUL byte: this is not a text file"),
    ("s.jsonl", b'{"id": "a", "input": ' + b"[" * 5000 + b"]" * 5000 + b"}\n",
     "s.jsonl:1: row: nested deeper than 100 levels"),
    ("s.jsonl", b"", "s.jsonl:1: cases: must not be empty"),
])
def test_hostile_and_empty_data_files(tmp_path: Path, name: str, data: bytes,
                                      message: str) -> None:
    lines = _load(tmp_path, name, data)
    assert isinstance(lines, list)
    assert lines[0].startswith(f"EVALUATION_SUITE_INVALID: {message}")


def test_data_files_collect_with_node_ids_and_row_lines(
    packages: Packages, pytester: pytest.Pytester
) -> None:
    packages.write("pkg/elizon.yaml", """
        entry: app:answer
        evaluation:
          suites:
            - suite: ./rows.jsonl
            - suite: ./rows.json
            - suite: ./rows.csv
    """)
    packages.write("pkg/app.py", ECHO_APP)
    packages.write("pkg/rows.jsonl", '{"id": "hello", "input": "hi there", "expect": '
                   '{"containsExact": ["hi"]}}\n{"id": "fails", "input": "x", '
                   '"expect.equals": "y"}\n')
    packages.write("pkg/rows.json", '[{"id": "named", "input": {"q": "1"}, '
                   '"expect": {"equals": "q=1"}}]\n')
    packages.write("pkg/rows.csv", "id,input.q,expect.startsWith\none,2,q=2\n")
    packages.write("alone.eval.jsonl", '{"id": "solo", "input": "x"}\n')
    pytester.makeini("[pytest]\nelizon_suite_files = *.eval.yaml *.eval.jsonl\n"
                     "elizon_entry = pkg.app:answer\n")
    (pytester.path / "pkg" / "__init__.py").write_text("")
    result = pytester.runpytest("-p", "no:cacheprovider", "-rA")
    result.assert_outcomes(passed=4, failed=1)
    result.stdout.fnmatch_lines_random([
        "PASSED alone.eval.jsonl::solo", "PASSED pkg/rows.jsonl::hello",
        "PASSED pkg/rows.json::named", "PASSED pkg/rows.csv::one",
        "FAILED pkg/rows.jsonl::fails - ✗ equals*",
        "case 'fails' failed (must-pass suite pkg/rows.jsonl:2)"])
