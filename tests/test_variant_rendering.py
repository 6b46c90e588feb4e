"""Issue 40: the variant comparison as the terminal, the markdown summary and the HTML page
show it (reporting/variants.py), from case results built as a run makes them."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest

from pytest_elizon_eval.decide.comparison import Comparison, compare
from pytest_elizon_eval.decide.results_data import CaseResult, RepeatRecord, SuiteInfo
from pytest_elizon_eval.reporting import html as page
from pytest_elizon_eval.reporting import markdown as summary_md
from pytest_elizon_eval.reporting import variants
from pytest_elizon_eval.run.calls import ErrorInfo, Usage

from .test_comparison_stats import SUITE, case, three_variants

HOSTILE_CASE = '"><script>alert(1)</script>|x`\u202e\x1b[2J\n::error::pwned'
HOSTILE_VARIANT = "v<img src=x onerror=alert(1)>|\x1b]0;t\x07"
ADVISORY_SUITE = SuiteInfo("helpdesk/eval/extra.yaml", "helpdesk", "advisory", True)


def _sample() -> tuple[Comparison, list[CaseResult]]:
    results = [*three_variants(), case("mini", "extra", "error")]
    return compare(results, ["large", "small", "mini"], "large", advisory={"mini"}), results


def _hostile() -> tuple[Comparison, list[CaseResult]]:
    results = [case("large", HOSTILE_CASE, "passed", latency_ms=1.0),
               case(HOSTILE_VARIANT, HOSTILE_CASE, "failed", latency_ms=2.0),
               case("large", "plain", "passed"), case(HOSTILE_VARIANT, "plain", "passed")]
    return compare(results, ["large", HOSTILE_VARIANT], "large"), results


def test_the_terse_terminal_says_one_line_per_variant() -> None:
    comparison, _ = _sample()
    lines = variants.terminal_lines(comparison)
    assert [line.split(":")[0] for line in lines] == [
        "variant large of helpdesk (reference)", "variant small of helpdesk",
        "variant mini of helpdesk (advisory)"]
    small = comparison.summary("small")
    rate, judge = comparison.differences_of("small")
    assert lines[1] == (
        f"variant small of helpdesk: 16/30 passed, 1 not run, pass rate {small.pass_rate:.3f} "
        f"[{small.pass_low:.3f}, {small.pass_high:.3f}], worse than large "
        f"(p = {rate.adjusted_p:.3g}, Holm), judge score {small.score_mean:.3f} "
        f"[{small.score_low:.3f}, {small.score_high:.3f}], worse than large "
        f"(p = {judge.adjusted_p:.3g}, Holm), $0.0300, 4,035 tokens, p50 150.0 ms, "
        "p95 290.0 ms — frontier")
    assert "within noise of large (p = " in lines[2]
    assert "than large" not in lines[0]  # the reference is not compared with itself
    # a variant another beats is not marked; one with too few cases says so, without a p
    results = [case("a", f"c{i}", "passed", usage=Usage(1, 1, 0.01)) for i in range(3)]
    results += [case("b", f"c{i}", "failed", usage=Usage(1, 1, 0.02)) for i in range(3)]
    a_line, b_line = variants.terminal_lines(compare(results, ["a", "b"], "a"))
    assert a_line.endswith(" — frontier")
    assert "frontier" not in b_line
    assert "0/3 passed, pass rate 0.000 [0.000, 0.561], too few cases to tell against a," \
        in b_line


def test_the_verbose_terminal_adds_the_differences_and_the_disagreeing_cases() -> None:
    comparison, _ = _sample()
    lines = variants.terminal_lines(comparison, verbose=True)
    assert lines[0] == ("Variants of package helpdesk: reference large; 95% intervals; each "
                        "variant against the reference on the cases both ran, Holm-corrected "
                        "across 4 tests at α 0.05")
    assert lines[1:4] == variants.terminal_lines(comparison)
    assert lines[4] == "differences from the reference:"
    assert lines[5].startswith("  small vs large, pass_rate (McNemar exact, 30 paired cases): "
                               "0.933 → 0.533, change -0.400 [")
    assert lines[5].endswith(": worse")
    assert lines[8].endswith(": within noise")
    assert lines[9] == "cases on which the variants disagree (16):"
    assert lines[10] == f"  {SUITE.path}::c0  large failed · small failed · mini passed"
    assert len(lines) == 10 + 16
    # past TERMINAL_DISAGREEMENTS the rest are counted, not listed
    many = [case(v, f"c{i:03}", "passed" if v == "a" else "failed")
            for v in ("a", "b") for i in range(variants.TERMINAL_DISAGREEMENTS + 7)]
    lines = variants.terminal_lines(compare(many, ["a", "b"], "a"), verbose=True)
    assert lines[-1] == "  … and 7 more (the HTML report and the results JSON list them all)"
    assert sum(line.startswith(f"  {SUITE.path}::") for line in lines) == \
        variants.TERMINAL_DISAGREEMENTS


def _table_rows(text: str) -> list[list[str]]:
    """Each markdown table line as its cells, split at the pipes no backslash escapes."""
    return [re.split(r"(?<!\\)\|", line)[1:-1] for line in text.splitlines()
            if line.startswith("|")]


def test_the_markdown_has_a_row_per_variant_the_differences_and_the_disagreements() -> None:
    comparison, _ = _sample()
    text = variants.markdown(comparison)
    tables = [block for block in text.split("\n\n") if block.startswith("|")]
    assert [len(_table_rows(t)) for t in tables] == [2 + 3, 2 + 4, 2 + 16]
    for table, columns in zip(tables, (9, 10, 5), strict=True):
        assert {len(row) for row in _table_rows(table)} == {columns}
    assert text.index("## Variants of package helpdesk") < text.index(
        "### Differences from large") < text.index("### Cases on which the variants disagree")
    rows = _table_rows(tables[0])
    assert [cell.strip() for cell in rows[3]][:2] == ["small", "16/30 passed, 1 not run"]
    assert rows[3][-1].strip() == "★"
    assert "pass_rate: worse (p = " in rows[3][7]
    assert [cell.strip() for cell in _table_rows(tables[2])[2]] == [
        SUITE.path, "c0", "failed", "failed", "passed"]


def test_hostile_names_stay_text_in_every_format() -> None:
    comparison, results = _hostile()
    text = variants.markdown(comparison)
    for table in (b for b in text.split("\n\n") if b.startswith("|")):
        assert len({len(row) for row in _table_rows(table)}) == 1  # no cell split the table
    for shown in (text, variants.html(comparison, results)):
        assert "<script" not in shown
        assert "<img" not in shown
        assert "\x1b" not in shown
        assert "\u202e" not in shown
        assert "\\u202e" in shown  # visible, not applied
    lines = variants.terminal_lines(comparison, verbose=True)
    assert not any(c in line for line in lines for c in ("\x1b", "\x07", "\u202e", "\n"))
    assert any("\\x1b]0;t\\x07" in line for line in lines)
    fragment = variants.html(comparison, results)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in fragment
    assert 'data-variant="v&lt;img src=x onerror=alert(1)&gt;|\\x1b]0;t\\x07"' in fragment
    # the page's CSP allows no style attribute and no script: the section needs neither
    assert "style=" not in fragment
    assert "<script" not in fragment.lower()


class _Matrix(HTMLParser):
    """The matrix's rows: (row class, [cell text], [badge class of each variant cell])."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[tuple[str, list[str], list[str]]] = []
        self.inside = False
        self.text: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "table":
            self.inside = found.get("class") == "variants-matrix"
        elif self.inside and tag == "tr":
            self.rows.append((found.get("class") or "", [], []))
        elif self.inside and tag == "td":
            self.text = []
            self.rows[-1][1].append("")
        elif self.inside and tag == "span" and self.rows:
            self.rows[-1][2].append((found.get("class") or "").removeprefix("b "))

    def handle_endtag(self, tag: str) -> None:
        if tag == "table":
            self.inside = False
        elif tag == "td" and self.text is not None and self.rows:
            self.rows[-1][1][-1] = "".join(self.text)
            self.text = None

    def handle_data(self, data: str) -> None:
        if self.text is not None:
            self.text.append(data)


def _matrix(fragment: str) -> list[tuple[str, list[str], list[str]]]:
    parser = _Matrix()
    parser.feed(fragment)
    return parser.rows[1:]  # the header row has no cells


def test_the_html_matrix_puts_disagreeing_cases_first_coloured_by_outcome() -> None:
    results = [
        case("a", "same", "passed"), case("b", "same", "passed"),
        case("a", "flip", "passed"), case("b", "flip", "failed"),
        case("a", "crash", "passed"), case("b", "crash", "error",
                                           error=ErrorInfo("ValueError", "boom")),
        case("a", "adv", "failed", ADVISORY_SUITE), case("b", "adv", "passed", ADVISORY_SUITE),
        case("a", "only-a", "timeout"),
    ]
    comparison = compare(results, ["a", "b"], "a")
    fragment = variants.html(comparison, results)
    rows = _matrix(fragment)
    assert [(cls, cells[1]) for cls, cells, _ in rows] == [
        ("disagree", "crash"), ("disagree", "flip"), ("disagree", "adv"),
        ("", "same"), ("", "only-a")]
    assert [badges for _, _, badges in rows] == [
        ["passed", "error"], ["passed", "failed"], ["advisory", "passed"],
        ["passed", "passed"], ["timeout", "zero"]]
    assert rows[2][1][2:] == ["advisory_failed", "passed"]  # as every report names it
    assert rows[4][1][2:] == ["timeout", "not run"]
    # the summary table sits above the matrix, the differences between them
    assert fragment.index('<table class="variants">') < fragment.index(
        '<table class="variants-differences">') < fragment.index(
        '<table class="variants-matrix">')
    # at most ``limit`` rows, disagreeing cases kept first; the rest counted
    fragment = variants.html(comparison, results, limit=2)
    assert [cells[1] for _, cells, _ in _matrix(fragment)] == ["crash", "flip"]
    assert "3 more cases are left out of this matrix" in fragment


def test_every_outcome_class_of_the_page_and_the_escaping_of_each_report() -> None:
    """The page, the summary and the variant tables share one rule each
    (reporting/escaping.py): the classes a case can have, and what escaping does."""
    inconclusive = RepeatRecord(runs=4, passed=2, pass_rate=0.5, low=0.1, high=0.9,
                                confidence=0.95, min_pass_rate=0.8, within_noise=True,
                                flaky=True, inconclusive_passes=True)
    results = [case("a", "p", "passed"), case("a", "f", "failed"), case("a", "e", "error"),
               case("a", "t", "timeout"), case("a", "i", "inconclusive"),
               case("a", "ip", "inconclusive", repeat=inconclusive),
               case("a", "af", "failed", ADVISORY_SUITE),
               case("a", "ae", "error", ADVISORY_SUITE),
               case("a", "ai", "inconclusive", ADVISORY_SUITE),
               case("a", "judge", "failed", advisory="judge not aligned: κ 0.41 < 0.60"),
               case("a", "torn", "passed", teardown_error=ErrorInfo("OSError", "x"))]
    assert [page.category(r) for r in results] == [
        "passed", "failed", "error", "timeout", "inconclusive", "inconclusive", "advisory",
        "error", "advisory", "advisory", "passed"]
    assert summary_md.cell("a|b`c<i>") == "a\\|b\\`c&lt;i&gt;"
    assert page._esc('"<b>\u202e') == "&quot;&lt;b&gt;\\u202e"
    assert variants._cell is summary_md.cell
    assert variants._esc is page._esc


@pytest.mark.parametrize("verbose", [False, True])
def test_a_comparison_read_back_from_its_data_renders_the_same(verbose: bool) -> None:
    comparison, _ = _sample()
    again = Comparison.from_data(comparison.to_data())
    assert variants.terminal_lines(again, verbose) == variants.terminal_lines(comparison,
                                                                              verbose)
    assert variants.markdown(again) == variants.markdown(comparison)
