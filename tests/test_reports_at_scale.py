"""The results JSON and the HTML page of a large run: written a case at a time (never the
whole document in memory), atomically, and the page compact past its size limit
(docs/contract.md#results-json, #html-report). Memory and size figures at 100,000 cases are
benchmarks/memory.py's."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_elizon_eval.decide.results_data import RepeatRecord
from pytest_elizon_eval.reporting import files, results
from pytest_elizon_eval.reporting import html as page
from pytest_elizon_eval.reporting.aggregate import Aggregate
from pytest_elizon_eval.trust import signing

from .test_html import CORE, EXTRA, WRONG, aggregate, result

FLAKY = RepeatRecord(runs=3, passed=2, pass_rate=2 / 3, low=0.2, high=0.9, confidence=0.95,
                     min_pass_rate=0.5, within_noise=True, flaky=True)


def many(n: int) -> Aggregate:
    """``n`` passing cases in two suites, one failure, one passing but flaky among its
    repeats, and text JSON and HTML must escape."""
    return aggregate(
        result("broken", "failed", checks=(WRONG,), output="é \u202e \"quoted\"\n"),
        result("wobbly", repeat=FLAKY, passed_runs=2, min_pass_rate=0.5),
        *(result(f"case-{i:05d}", suite=CORE if i % 2 else EXTRA, latency=0.1 * i,
                 output=f"answer {i} ✓", input={"request": f"ticket {i}"}) for i in range(n)))


def test_results_file_is_written_case_by_case_as_the_whole_document_would_be() -> None:
    data = results.stream(many(40))
    pieces = list(results.chunks(data))
    whole = {**data, "suites": [{**s, "cases": list(s["cases"])} for s in data["suites"]]}
    text = "".join(pieces)
    # the same bytes as the one json.dumps of the whole document it replaces, and valid
    assert text == json.dumps(whole, ensure_ascii=False, indent=2)
    results.check(json.loads(text))
    # never more than one case in a piece: the file is written a case at a time
    assert [p.count('"id": "case-') for p in pieces if '"id": "case-' in p] == [1] * 40
    # the canonical form the signature covers is what `elizon-eval verify` computes from
    # the file's text
    canonical = "".join(results.chunks(data, canonical=True)).encode("utf-8", "surrogatepass")
    assert canonical == signing.canonical(json.loads(text))
    assert results.build(many(3))["suites"][0]["cases"][0]["id"] == "broken"


def test_a_stream_that_breaks_leaves_the_old_file_and_no_temporary_one(tmp_path: Path) -> None:
    target = tmp_path / "out" / "r.json"
    files._write_chunks(target, iter(["old", "\n"]))
    assert target.read_text() == "old\n"

    def broken() -> Iterator[str]:
        yield "new, half"
        raise ValueError("cannot render")

    with pytest.raises(ValueError, match="cannot render"):
        files._write_chunks(target, broken())
    assert target.read_text() == "old\n"
    assert [p.name for p in target.parent.iterdir()] == ["r.json"]
    # a planted link is replaced, never written through
    elsewhere = tmp_path / "elsewhere.txt"
    elsewhere.write_text("keep")
    target.unlink()
    target.symlink_to(elsewhere)
    files._write_chunks(target, iter(["x\udc80"]))
    assert elsewhere.read_text() == "keep"
    assert not target.is_symlink()
    assert target.read_bytes() == b"x\\udc80"


def test_page_past_its_limit_lists_passing_cases_one_line_each() -> None:
    agg = many(400)
    small = page.render(agg)  # fits: every case a row with its details, as ever
    assert small.count('<details class="case"') == 402
    assert 'id="compact"' not in small
    assert '<table class="compact">' not in small
    pieces = list(page.chunks(agg, limit=60_000))
    text = "".join(pieces)
    assert 'id="compact"' in text
    assert "the 400 passing ones are listed one line each" in text
    # the failure and the flaky pass keep their rows and details; the rest are one line
    rows = re.findall(r'<details class="case" id="c\d+" data-outcome="(\w+)" data-id="([^"]+)"',
                      text)
    assert sorted(rows) == [("failed", "broken"), ("passed", "wobbly")]
    assert '<li class="ko">✗ <b>contains</b>' in text
    lines = re.findall(r"<tr><td>(case-\d+)<td class=n>([\d.]+)", text)
    assert len(lines) == 400
    assert ("case-00007", "0.7") in lines
    assert text.count('<details class="passing"><summary>200 passing cases') == 2
    # a case at a time, and at scale about 50 bytes a passing case (id included)
    assert max(map(len, pieces)) < 30_000
    more = len(page.render(many(800), limit=60_000).encode())
    assert (more - len(text.encode())) / 400 < 60
