"""Data files as suites: ``.jsonl``, ``.json`` and ``.csv`` read into a suite's data.

Owns the step from a data file's bytes to the same line-carrying data a YAML suite
becomes (:class:`~.documents.YamlMapping` ``{"cases": [...]}``), so a data file gets
the same validation, the same error codes and line numbers that point at its row:
the JSONL line, the CSV record's first line, the line where a JSON array's
object starts (docs/format.md#data-files). One case per row or object: ``id``,
``input`` (a string) or ``input.<name>`` columns / keys, ``expect`` (an object,
in CSV a JSON object cell) or ``expect.<assertion>`` columns / keys. Rows are
read one at a time, never as one parsed tree. No pytest import here.
"""

from __future__ import annotations

import csv
import io
import json
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import ElizonError
from .documents import MAX_DEPTH, MAX_FILE_BYTES, LoadFailed, Problem, YamlMapping, YamlSequence

__all__ = ["SUFFIXES", "is_data_file", "load_rows", "read"]

SUFFIXES = (".jsonl", ".json", ".csv")
#: ``expect.<key>`` CSV cells read as text as they are; every other one is read as JSON.
_TEXT_KEYS = frozenset({"equals", "startsWith", "route", "path", "label"})
#: Columns that group into a mapping of their own: ``input.<name>``, ``expect.<key>``.
_GROUPS = ("input", "expect")
_WS = re.compile(r"[ \t\n\r]*")
#: Held while a CSV file is read with the csv module's limit raised (a process-wide setting).
_CSV_LIMIT = threading.Lock()


def is_data_file(path: Path) -> bool:
    """Whether ``path`` is read as a data file rather than as YAML."""
    return path.suffix.lower() in SUFFIXES


class _RowProblem(Exception):
    """A row that cannot be a case; the message says why."""


def _no_constant(name: str) -> object:
    raise ValueError(f"{name} is not a JSON number this plugin accepts")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    value = dict(pairs)
    if len(value) != len(pairs):
        seen: set[str] = set()
        repeated = next(k for k, _ in pairs if k in seen or seen.add(k))  # type: ignore[func-returns-value]
        raise ValueError(f"the key {repeated!r} is repeated in one object")
    return value


_DECODER = json.JSONDecoder(object_pairs_hook=_unique_keys, parse_constant=_no_constant)


def _json(text: str) -> Any:
    """One JSON value; _RowProblem with the parser's message and column."""
    try:
        return _DECODER.decode(text)
    except json.JSONDecodeError as exc:
        raise _RowProblem(f"not JSON: {exc.msg} (column {exc.colno})") from None
    except ValueError as exc:
        raise _RowProblem(f"not JSON: {exc}") from None
    except RecursionError:
        raise _RowProblem(f"nested deeper than {MAX_DEPTH} levels") from None


def _node(value: Any, line: int, depth: int = 0) -> Any:
    """``value`` with every mapping and list carrying ``line``."""
    if depth > MAX_DEPTH:
        raise _RowProblem(f"nested deeper than {MAX_DEPTH} levels")
    if isinstance(value, dict):
        mapping = YamlMapping(line)
        for key, item in value.items():
            mapping[key] = _node(item, line, depth + 1)
        mapping.key_lines = dict.fromkeys(mapping, line)
        return mapping
    if isinstance(value, list):
        sequence = YamlSequence(line)
        sequence.extend(_node(item, line, depth + 1) for item in value)
        sequence.item_lines = [line] * len(sequence)
        return sequence
    return value


def _object_case(value: object, line: int, what: str) -> YamlMapping:
    """A JSON value that must be an object, as a case (``what``: "a row", "each item")."""
    if not isinstance(value, dict):
        raise _RowProblem(f"{what} must be a JSON object (a case), found {type(value).__name__}")
    return _case(value, line)


def _case(row: dict[str, Any], line: int) -> YamlMapping:
    """A row as a case: ``input.<name>`` and ``expect.<key>`` keys grouped, lines set."""
    if any("." in key for key in row):
        grouped: dict[str, Any] = {}
        for key, value in row.items():
            head, dot, rest = key.partition(".")
            if not (dot and head in _GROUPS and rest):
                if key in grouped:
                    raise _RowProblem(f"{key!r} is given both as a whole and as "
                                      f"'{key}.<name>' columns")
                grouped[key] = value
                continue
            group = grouped.setdefault(head, {})
            if not isinstance(group, dict):
                raise _RowProblem(f"{head!r} is given both as a whole and as {key!r}")
            if rest in group:
                raise _RowProblem(f"{key!r} is given twice")
            group[rest] = value
        row = grouped
    return _node(row, line)  # type: ignore[no-any-return]


def _suite(rows: list[YamlMapping], lines: list[int]) -> YamlMapping:
    cases = YamlSequence(lines[0] if lines else 1)
    cases.extend(rows)
    cases.item_lines = lines
    suite = YamlMapping(1)
    suite["cases"] = cases
    suite.key_lines["cases"] = 1
    return suite


def _jsonl(text: str) -> YamlMapping:
    rows: list[YamlMapping] = []
    lines: list[int] = []
    problems: list[Problem] = []
    # split on "\n" only: JSON strings may hold U+2028, which splitlines() would cut at
    for number, raw in enumerate(text.split("\n"), 1):
        if not raw.strip():
            continue
        try:
            rows.append(_object_case(_json(raw), number, "a row"))
            lines.append(number)
        except _RowProblem as exc:
            problems.append(Problem(number, f"row: {exc}"))
    if problems:
        raise LoadFailed(problems)
    return _suite(rows, lines)


def _json_array(text: str) -> YamlMapping:
    """A JSON array of case objects, each with the line where it starts."""
    at = _WS.match(text).end()  # type: ignore[union-attr]
    if not text.startswith("[", at):
        raise LoadFailed([Problem(None, "a .json suite must be a JSON array of case objects "
                                        "([{\"id\": …, \"input\": …}, …])")])
    rows: list[YamlMapping] = []
    lines: list[int] = []
    problems: list[Problem] = []
    line, counted = 1, 0

    def skip(position: int) -> int:
        nonlocal line, counted
        position = _WS.match(text, position).end()  # type: ignore[union-attr]
        line += text.count("\n", counted, position)
        counted = position
        return position

    at = skip(at + 1)
    if text.startswith("]", at):
        at = len(text)  # an empty array: validation says a suite needs cases
    while at < len(text):
        try:
            value, end = _DECODER.raw_decode(text, at)
        except json.JSONDecodeError as exc:
            problems.append(Problem(exc.lineno, f"not JSON: {exc.msg} (column {exc.colno})"))
            break
        except (ValueError, RecursionError) as exc:
            why = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
            problems.append(Problem(line, f"not JSON: {why}"))
            break
        try:
            rows.append(_object_case(value, line, "each item"))
            lines.append(line)
        except _RowProblem as exc:
            problems.append(Problem(line, f"item: {exc}"))
        at = skip(end)
        if text.startswith(",", at):
            at = skip(at + 1)
            continue
        if text.startswith("]", at):
            if skip(at + 1) < len(text):
                problems.append(Problem(line, "not JSON: text after the closing ']'"))
            break
        problems.append(Problem(line, "not JSON: expected ',' or ']' after an item"
                                if at < len(text) else "not JSON: the array is not closed "
                                "with ']'"))
        break
    if problems:
        raise LoadFailed(problems)
    return _suite(rows, lines)


def _cell(column: str, text: str) -> Any:
    """A CSV cell as the value its column means."""
    head, dot, rest = column.partition(".")
    if column == "expect" or column == "turns" or (head == "expect" and dot
                                                   and rest not in _TEXT_KEYS):
        try:
            return _DECODER.decode(text)
        except ValueError:
            if column in ("expect", "turns"):
                raise _RowProblem(f"column {column!r}: not a JSON value: "
                                  f"{text[:40]!r}") from None
            return text  # validation says what it should have been
    if column in ("tags", "controls"):
        if text.lstrip().startswith("["):
            return _json(text)
        return [t for t in text.replace(",", " ").split() if t]
    if column in ("repeat", "minPassRate"):
        try:
            return _DECODER.decode(text)
        except ValueError:
            return text
    return text


def _csv(text: str) -> YamlMapping:
    # The csv module refuses a cell over 131,072 characters, a length JSONL and YAML accept.
    # A cell is never longer than its file, and the file is capped before it is read, so
    # the cap a cell meets is the file's, with the same message in every format. The limit
    # is process-wide: raised only while this file is read, then put back as it was.
    with _CSV_LIMIT:
        before = csv.field_size_limit()
        csv.field_size_limit(max(before, MAX_FILE_BYTES))
        try:
            return _csv_rows(text)
        finally:
            csv.field_size_limit(before)


class CsvProblem(Exception):
    """A record the csv module cannot read, at the line it starts on."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(message)
        self.line = line
        self.message = message


def csv_records(text: str) -> Iterator[tuple[int, list[str]]]:
    """(line, cells) of each record of a CSV text that has a non-blank cell, numbered by the
    line the record starts on (a quoted cell may span lines); CsvProblem at the first record
    that is not CSV. Data files and judge-alignment labels files read CSV through this."""
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    consumed = 0
    while True:
        start = consumed + 1
        try:
            record = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise CsvProblem(reader.line_num or start, f"not CSV: {exc}") from None
        consumed = reader.line_num
        if any(cell.strip() for cell in record):
            yield start, record


def _csv_rows(text: str) -> YamlMapping:
    rows: list[YamlMapping] = []
    lines: list[int] = []
    problems: list[Problem] = []
    header: list[str] | None = None
    try:
        for start, record in csv_records(text):
            if header is None:
                header = [cell.strip() for cell in record]
                problems.extend(_header_problems(start, header))
                if problems:
                    break
                continue
            if len(record) > len(header):
                problems.append(Problem(start, f"row: {len(record)} cells, but the header "
                                               f"names {len(header)} columns"))
                continue
            try:
                row = {column: _cell(column, cell)
                       for column, cell in zip(header, record, strict=False) if cell != ""}
                rows.append(_case(row, start))
                lines.append(start)
            except _RowProblem as exc:
                problems.append(Problem(start, f"row: {exc}"))
    except CsvProblem as exc:
        problems.append(Problem(exc.line, exc.message))
    if header is None and not problems:
        problems.append(Problem(None, "file is empty; a .csv suite needs a header row "
                                      "(id, input, expect, …) and one row per case"))
    if problems:
        raise LoadFailed(problems)
    return _suite(rows, lines)


def _header_problems(line: int, header: list[str]) -> list[Problem]:
    empty = [i + 1 for i, c in enumerate(header) if not c]
    repeated = sorted({c for c in header if c and header.count(c) > 1})
    problems = []
    if empty:
        problems.append(Problem(line, f"header: column {empty[0]} has no name"))
    if repeated:
        problems.append(Problem(line, f"header: column {repeated[0]!r} is repeated"))
    if "id" not in header:
        problems.append(Problem(line, "header: no 'id' column; a case needs an id"))
    return problems


_READERS = {".jsonl": _jsonl, ".json": _json_array, ".csv": _csv}


def load_rows(data: bytes, suffix: str) -> YamlMapping:
    """A data file's bytes as suite data ``{"cases": [...]}`` with row lines; LoadFailed
    lists every row that cannot be read."""
    if len(data) > MAX_FILE_BYTES:
        raise LoadFailed(
            [Problem(None, f"file is {len(data):,} bytes; the limit is {MAX_FILE_BYTES:,}")])
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise LoadFailed([Problem(line, f"not UTF-8 text (byte 0x{data[exc.start]:02x} at "
                                        f"offset {exc.start}); save the file as UTF-8")]) from None
    if "\0" in text:
        line = text[: text.index("\0")].count("\n") + 1
        raise LoadFailed([Problem(line, "a NUL byte: this is not a text file")])
    return _READERS[suffix.lower()](text)


def read(path: Path, display: str, code: str) -> tuple[Any, list[Problem], bytes]:
    """As :func:`~.packages.load_suite` reads a YAML file: the data, no read problems (a
    row that cannot be read stops here, with every other one), and the bytes."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ElizonError(code, [f"{display}: cannot read the file: {exc.strerror}"]) from None
    try:
        return load_rows(raw, path.suffix), [], raw
    except LoadFailed as exc:
        raise ElizonError.from_problems(code, display, exc.problems) from None
