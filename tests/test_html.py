"""The HTML report (--elizon-html): the renderer directly, through pytest (serial, xdist,
ini, baseline, pytest-html), and the rendered page in headless Chromium."""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import itertools
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_elizon_eval.decide.outcomes import CaseResult, SuiteInfo
from pytest_elizon_eval.reporting import html as page
from pytest_elizon_eval.reporting.aggregate import Aggregate
from pytest_elizon_eval.run.assertions import AssertionResult
from pytest_elizon_eval.run.calls import ErrorInfo

from . import browser
from . import test_html_glance as glance
from .conftest import Packages

CORE = SuiteInfo("pkg/eval/core.yaml", "demo", "must-pass", False,
                 {"pass_rate": 1.0, "p95_latency_ms": 50.0, "made_up": 2.0})
EXTRA = SuiteInfo("pkg/eval/extra.yaml", "demo", "advisory", True, {})
HOSTILE = ("<script>window.__pwned=1</script></textarea></pre></details></div>"
           "<img src=x onerror=\"window.__pwned=2\"><a href=\"javascript:window.__pwned=3\">x</a>"
           "<svg onload=\"window.__pwned=4\"></svg>\x00\x1b[31m\u202e"
           "<script>document.title='pwned'</script>")


#: Inner runs load only the plugins named (tests/conftest.py): these also load pytest-html,
#: by the names its entry points give it, as a user's run with it installed does.
INNER_ENTRY_POINTS = (("metadata", "html", "html_fixtures")
                      if importlib.util.find_spec("pytest_html") else ())

_LINES = itertools.count(2)


def result(case_id: str, outcome: str = "passed", suite: SuiteInfo = CORE, *,
           latency: float | None = 12.0, output: str | None = "fine",
           checks: tuple[AssertionResult, ...] = (), **fields: Any) -> CaseResult:
    line = fields.pop("line", next(_LINES))  # file order: each case below the one before
    return CaseResult(nodeid=f"{suite.path}::{case_id}", case_id=case_id, line=line, suite=suite,
                      outcome=outcome, assertions=checks, latency_ms=latency, output=output,
                      output_length=len(output or ""), timeout_s=90.0,
                      timeout_source="the 90 s hard limit", **fields)


def aggregate(*results: CaseResult) -> Aggregate:
    agg = Aggregate()
    for r in results:
        agg.add(r.to_data())
    return agg


LIMIT = AssertionResult("maxLatencyMs", True, "at most 40 ms", "took 12.0 ms")
WRONG = AssertionResult("contains", False, "every one of: 'delta'", "missing: 'delta'")


def mixed() -> Aggregate:
    return aggregate(
        result("ok-one", checks=(LIMIT,), input={"request": "alpha"}),
        result("ok-two", latency=30.0, checks=(LIMIT,)),
        result("wrong", "failed", checks=(WRONG,), input="gamma", judge_score=0.4,
               judge_reasoning="too short"),
        result("too-slow", "timeout", latency=None, output=None),
        result("broke", "error", latency=None, output=None,
               error=ErrorInfo("RuntimeError", "boom", "Traceback ...")),
        result("fine", suite=EXTRA, latency=5.0),
        result("drifted", "failed", EXTRA, checks=(WRONG,), latency=7.0),
        result("repeated", "failed", checks=(WRONG,), passed_runs=1, min_pass_rate=1.0,
               runs=({"outcome": "passed", "latency_ms": 1.0, "assertions": [], "output": "a",
                      "error": None, "judge_score": None},
                     {"outcome": "failed", "latency_ms": 2.0, "assertions": [WRONG.to_data()],
                      "output": "b", "error": None, "judge_score": None})),
    )


def hostile() -> Aggregate:
    return aggregate(
        result("evil", "failed", output=HOSTILE + "\ud800" + "y" * 5_000_000,
               checks=(AssertionResult("contains", False, HOSTILE, HOSTILE),),
               input={"request": HOSTILE}, judge_score=0.1, judge_reasoning=HOSTILE,
               error=ErrorInfo("ValueError", HOSTILE, HOSTILE)),
        result("calm", output="ok"),
    )


# -- the renderer, directly ------------------------------------------------------------------

def test_page_is_one_self_contained_file_whose_only_assets_the_csp_allows() -> None:
    text = page.render(mixed())
    assert text.startswith("<!DOCTYPE html>")
    # nothing from the network: no URLs but the SVG namespace, no external assets
    assert set(re.findall(r"https?://[^\s\"'<>]+", text)) == {"http://www.w3.org/2000/svg"}
    assert not re.search(r"<(link|iframe|object|embed|img)\b|\bsrc=|@import|url\(", text)
    csp = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]+)">', text)
    assert csp is not None
    assert "default-src 'none'" in csp.group(1)
    for tag in ("style", "script"):
        bodies = re.findall(rf"<{tag}>(.*?)</{tag}>", text, re.S)
        assert len(bodies) == 1
        digest = base64.b64encode(hashlib.sha256(bodies[0].encode()).digest()).decode()
        assert f"{tag}-src 'sha256-{digest}'" in csp.group(1)
    assert ' style="' not in text  # inline style attributes would need 'unsafe-inline'


def test_overview_cards_counts_and_baseline_side_by_side() -> None:
    text = page.render(mixed())
    assert "<h1>Elizon eval: FAIL</h1>" in text
    card = re.search(r'<div class="card fail" data-path="pkg/eval/core.yaml">(.*?)</details>'
                     r"</div>", text, re.S)
    assert card is not None
    body = card.group(1)
    for badge in ("2 passed", "2 failed", "1 timeout", "1 error", "0 advisory"):
        assert badge in body
    assert "pass rate <b>33.3%</b>" in body
    assert "<td>pass_<wbr>rate</td><td class=n>1.000</td><td class=n>0.333</td>" in body
    assert "<td>made_<wbr>up</td><td class=n>2.000</td><td class=n>—</td>" in body
    assert "not measured by this run" in body
    assert '<div class="card advisory" data-path="pkg/eval/extra.yaml">' in text
    assert "1 advisory</span>" in text


def test_charts_bars_latency_marks_and_metrics() -> None:
    text = page.render(mixed())
    segs = re.findall(r'<rect class="seg" data-outcome="(\w+)" data-count="(\d+)"', text)
    assert segs == [("passed", "2"), ("failed", "2"), ("timeout", "1"), ("error", "1"),
                    ("passed", "1"), ("advisory", "1")]
    latency = text.split('<figure class="chart-latency">')[1].split("</figure>")[0]
    assert sum(map(int, re.findall(r'class="bin" data-count="(\d+)"', latency))) == 4
    assert re.findall(r'<line class="limit" data-ms="([\d.]+)"', latency) == ["40.0"]
    assert re.findall(r'<line class="p(50|95)" data-ms="([\d.]+)"', latency) == [
        ("50", "12.0"), ("95", "30.0")]
    metrics = text.split('<figure class="chart-metrics">')[1].split("</figure>")[0]
    assert re.findall(r'<rect class="base" data-metric="(\w+)"', metrics) == [
        "pass_rate", "p95_latency_ms", "made_up"]
    assert re.findall(r'<rect class="run" data-metric="(\w+)"', metrics) == [
        "pass_rate", "p95_latency_ms"]
    assert "chart-regression" not in text
    assert "chart-cost" not in text


def test_cases_failures_first_with_every_detail() -> None:
    text = page.render(mixed())
    core = text.split('data-path="pkg/eval/core.yaml">')[-1].split("</section>")[0]
    order = re.findall(r'data-outcome="(\w+)" data-id="([\w-]+)"', core)
    assert order == [("failed", "wrong"), ("failed", "repeated"), ("timeout", "too-slow"),
                     ("error", "broke"), ("passed", "ok-one"), ("passed", "ok-two")]
    wrong = core.split('data-id="wrong"')[1].split("</details>")[0]
    assert "<pre>gamma</pre>" in wrong  # input
    assert '<li class="ko">✗ <b>contains</b>' in wrong
    assert "score 0.400<pre>too short</pre>" in wrong
    ok = core.split('data-id="ok-one"')[1].split("</details>")[0]
    assert '<li class="ok">✓ <b>maxLatencyMs</b>' in ok
    assert "&quot;request&quot;: &quot;alpha&quot;" in ok
    repeated = core.split('data-id="repeated"')[1].split("</details>")[0]
    assert "1/2 runs passed; minPassRate 1 needs 2" in repeated
    broke = core.split('data-id="broke"')[1].split("</details>")[0]
    assert "RuntimeError: boom" in broke
    assert "Traceback ..." in broke


def test_hostile_text_is_inert_visible_and_capped() -> None:
    text = page.render(hostile())
    assert text.count("<script") == 1
    assert text.count("</script>") == 1
    assert "<img" not in text
    assert "<svg onload" not in text
    assert "</textarea>" not in text
    assert 'href="javascript' not in text
    assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in text
    assert "\\x00" in text
    assert "\\x1b[31m" in text
    assert "\\u202e" in text
    assert "\x00" not in text
    assert "\u202e" not in text
    assert len(text.encode("utf-8")) < 200_000  # the 5 MB output is capped …
    assert re.search(r"output \(5,000,\d{3} characters, first 4,000 shown\)", text)


def test_ten_thousand_cases_stay_under_five_megabytes() -> None:
    suite = SuiteInfo("bench/eval/suite.yaml", "bench", "must-pass", False, {"pass_rate": 1.0})
    checks = (AssertionResult("contains", True, "every one of: 'routine'", "all found"),
              AssertionResult("notContains", True, "none of: 'immediate'", "none found"))

    def case(i: int, **fields: Any) -> CaseResult:
        return result(f"case-{i:06d}", suite=suite, latency=0.01 * (i % 7), checks=checks,
                      output=f"Priority: routine. Please look at ticket {i} about the belt.",
                      input={"request": f"Please look at ticket {i} about the conveyor belt."},
                      **fields)

    # The results as the plugin hands them over (CaseResult.to_data): the first converted,
    # the others that data with what differs per case, as converting each one would give
    # (the spot checks show it), in a fraction of the time.
    first = case(0).to_data()

    def data(i: int) -> dict[str, Any]:
        output = f"Priority: routine. Please look at ticket {i} about the belt."
        return {**first, "nodeid": f"{suite.path}::case-{i:06d}", "case_id": f"case-{i:06d}",
                "line": first["line"] + i, "latency_ms": 0.01 * (i % 7), "output": output,
                "output_length": len(output),
                "input": {"request": f"Please look at ticket {i} about the conveyor belt."}}

    for i in (1, 17, 9_999):
        assert data(i) == case(i, line=first["line"] + i).to_data()
    results = [data(i) for i in range(10_000)]
    results[17] = result("case-000017", "failed", suite, checks=(WRONG,),
                         output="x" * 60_000).to_data()
    agg = Aggregate()
    for item in results:
        agg.add(item)
    text = page.render(agg)
    size = len(text.encode("utf-8"))
    assert size < 5_000_000
    assert text.count('<details class="case"') == 10_000
    # the failure's details are always there; passing ones as far as they fit, with a note
    assert '<li class="ko">✗ <b>contains</b>' in text
    left_out = re.search(r'id="left-out">The details of ([\d,]+) cases', text)
    assert left_out is None or int(left_out.group(1).replace(",", "")) < 10_000


def test_regression_and_cost_charts_when_there_is_something_to_show() -> None:
    from pytest_elizon_eval.reporting.regression import compare

    before = {"suites": [{"path": CORE.path, "sha256": "", "cases": [
        {"nodeid": f"{CORE.path}::ok-one", "outcome": "failed"},
        {"nodeid": f"{CORE.path}::wrong", "outcome": "passed"},
        {"nodeid": f"{CORE.path}::gone", "outcome": "passed"}]}]}
    agg = mixed()
    text = page.render(agg, compare(before, agg, "old.json"))
    bars = dict(re.findall(r'class="change" data-change="(\w+)" data-count="(\d+)"', text))
    assert bars == {"regressed": "1", "improved": "1", "new": "6", "removed": "1",
                    "unchanged": "0"}
    assert "Changes since old.json" in text


def test_extra_fields_of_a_case_are_shown(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fields a case gains (usage, tool calls, turns) are shown as they are, and usage with a
    cost gives a cost chart."""
    plain = CaseResult.to_data

    def more(self: CaseResult) -> dict[str, Any]:
        return {**plain(self), "usage": {"cost_usd": 0.25, "input_tokens": 10},
                "tool_calls": [{"name": "<lookup>"}]}

    monkeypatch.setattr(CaseResult, "to_data", more)
    text = page.render(aggregate(result("agent")))
    assert "<dt>tool calls</dt>" in text
    assert "&lt;lookup&gt;" in text
    assert '<rect class="cost"' in text
    assert "$0.250" in text  # three significant digits


def test_fragment_for_pytest_html_is_escaped() -> None:
    text = page.fragment(hostile().suites()[0].results[0])
    assert text.startswith('<div class="elizon"><dl>')
    assert "<script" not in text


# -- through pytest --------------------------------------------------------------------------

APP = '''
def answer(text):
    if text == "hostile":
        return HOSTILE
    return "answer: " + text

HOSTILE = {hostile!r}
'''
SUITE = """
cases:
  - id: ok-one
    input: alpha
    expect: {contains: [alpha], maxLatencyMs: 5000}
  - id: ok-two
    input: beta
  - id: wrong
    input: gamma
    expect: {contains: [delta]}
  - id: hostile
    input: hostile
    expect: {notContains: [script]}
"""


def package(packages: Packages) -> None:
    packages.package(suite=SUITE, app=APP.format(hostile=HOSTILE), baseline="pass_rate: 1.0")


def cases_of(text: str) -> list[str]:
    return re.findall(r'<details class="case" id="c\d+" data-outcome="\w+" data-id="([\w-]+)"',
                      text)


def test_option_writes_the_page_and_says_so(pytester: pytest.Pytester,
                                            packages: Packages) -> None:
    package(packages)
    run = pytester.runpytest("--elizon-html=out/report.html", "-p", "no:cacheprovider")
    run.assert_outcomes(passed=2, failed=2)
    run.stdout.fnmatch_lines(["*generated HTML report: *out*report.html*"])
    text = (pytester.path / "out" / "report.html").read_text(encoding="utf-8")
    assert sorted(cases_of(text)) == ["hostile", "ok-one", "ok-two", "wrong"]
    assert "&lt;script&gt;window.__pwned=1" in text
    assert text.count("<script") == 1


def test_ini_key_names_the_page(pytester: pytest.Pytester, packages: Packages) -> None:
    package(packages)
    pytester.makeini("[pytest]\nelizon_html = reports/page.html\n")
    pytester.runpytest("-p", "no:cacheprovider")
    assert (pytester.path / "reports" / "page.html").is_file()


def test_baseline_run_shows_regressed_and_improved(pytester: pytest.Pytester,
                                                   packages: Packages) -> None:
    package(packages)
    pytester.runpytest("--elizon-results=before.json", "-p", "no:cacheprovider")
    packages.write("pkg/app2.py", APP.format(hostile="fine").replace(
        '"answer: " + text', '"delta " + text[::-1]'))
    pytester.runpytest("--elizon-baseline=before.json", "--elizon-html=after.html",
                       "--elizon-entry=app2:answer", "-p", "no:cacheprovider")
    text = (pytester.path / "after.html").read_text(encoding="utf-8")
    bars = dict(re.findall(r'class="change" data-change="(\w+)" data-count="(\d+)"', text))
    assert bars["improved"] == "2"  # wrong now says delta; hostile no longer says script
    assert bars["regressed"] == "1"  # ok-one no longer contains alpha


def test_pytest_html_rows_carry_elizon_details_and_summary(pytester: pytest.Pytester,
                                                           packages: Packages) -> None:
    pytest.importorskip("pytest_html")
    package(packages)
    run = pytester.runpytest("--html=ph.html", "--self-contained-html", "-p", "no:cacheprovider")
    run.assert_outcomes(passed=2, failed=2)
    text = (pytester.path / "ph.html").read_text(encoding="utf-8")
    blob = re.search(r'data-jsonblob="([^"]*)"', text)
    assert blob is not None
    import html as html_module

    data = json.loads(html_module.unescape(blob.group(1)))
    extras = {nodeid: [e for row in rows for e in row.get("extras", [])]
              for nodeid, rows in data["tests"].items()}
    wrong = extras["pkg/eval/suite.yaml::wrong"]
    assert any(e["format_type"] == "html" and "✗ <b>contains</b>" in e["content"]
               for e in wrong)
    hostile_extras = " ".join(e["content"] for e in extras["pkg/eval/suite.yaml::hostile"])
    assert "<script" not in hostile_extras
    assert "&lt;script&gt;" in hostile_extras
    assert "Elizon eval: FAIL" in text
    assert "pkg/eval/suite.yaml [must-pass]: 2 passed, 2 failed" in text


def test_without_pytest_html_nothing_is_registered(pytester: pytest.Pytester,
                                                   packages: Packages) -> None:
    package(packages)
    pytester.makeconftest("""
        def pytest_configure(config):
            config._elizon_glue = config.pluginmanager.get_plugin("elizon-pytest-html")
        def pytest_unconfigure(config):
            assert config._elizon_glue is None
    """)
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=2, failed=2)


# -- in a real browser -----------------------------------------------------------------------

@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    problem = browser.missing()
    if problem:
        pytest.skip(f"browser test skipped: {problem}")
    with browser.session() as driver:
        yield driver


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("pages")
    out = {"mixed": root / "mixed.html", "hostile": root / "hostile.html"}
    out["mixed"].write_text(page.render(mixed()), encoding="utf-8")
    out["hostile"].write_text(page.render(hostile()), encoding="utf-8", errors="backslashreplace")
    return out


def _open(driver: Any, path: Path) -> None:
    driver.get(path.resolve().as_uri())


def _shown(driver: Any) -> list[str]:
    return [str(x) for x in driver.execute_script(
        "return Array.from(document.querySelectorAll('details.case'))"
        ".filter(function(d){return !d.hidden && d.offsetParent !== null})"
        ".map(function(d){return d.getAttribute('data-id')})")]


def test_browser_every_case_and_filters(chromium: Any, pages: dict[str, Path]) -> None:
    from selenium.webdriver.common.by import By

    _open(chromium, pages["mixed"])
    assert len(_shown(chromium)) == 8
    assert chromium.find_element(By.ID, "status").text == "8 of 8 cases shown"
    chromium.find_element(By.CSS_SELECTOR, 'input[data-outcome="passed"]').click()
    assert sorted(_shown(chromium)) == ["broke", "drifted", "repeated", "too-slow", "wrong"]
    chromium.find_element(By.ID, "q").send_keys("DELTA")
    assert sorted(_shown(chromium)) == ["drifted", "repeated", "wrong"]
    chromium.find_element(By.CSS_SELECTOR, 'input[data-outcome="advisory"]').click()
    assert sorted(_shown(chromium)) == ["repeated", "wrong"]
    chromium.find_element(By.ID, "q").clear()
    chromium.find_element(By.CSS_SELECTOR, 'input[data-outcome="passed"]').click()
    chromium.find_element(By.ID, "q").send_keys(" ")  # an input event with an empty filter
    assert len(_shown(chromium)) == 7


def test_browser_row_expands_and_copies_its_node_id(chromium: Any,
                                                    pages: dict[str, Path]) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.wait import WebDriverWait

    _open(chromium, pages["mixed"])
    case = chromium.find_element(By.CSS_SELECTOR, 'details.case[data-id="wrong"]')
    detail = case.find_element(By.CSS_SELECTOR, "div.d")
    assert not detail.is_displayed()
    case.find_element(By.CSS_SELECTOR, "summary span").click()
    assert case.get_attribute("open") is not None
    assert detail.is_displayed()
    assert "✗ contains" in detail.text
    assert "too short" in detail.text
    before = chromium.find_element(By.ID, "status").text
    case.find_element(By.CSS_SELECTOR, "a.cp").click()
    # The page says what it copied once the clipboard answers (a promise), not during the
    # click: wait for the status to change (the bound is for safety only).
    status = WebDriverWait(chromium, 60).until(
        lambda driver: driver.find_element(By.ID, "status").text != before
        and driver.find_element(By.ID, "status").text)
    assert status.endswith("pkg/eval/core.yaml::wrong")
    assert case.get_attribute("open") is not None  # the link did not toggle the row


def test_browser_charts_have_a_bar_per_count(chromium: Any, pages: dict[str, Path]) -> None:
    _open(chromium, pages["mixed"])
    count = chromium.execute_script
    assert count("return document.querySelectorAll('g.suite-bar').length") == 2
    assert count("return document.querySelectorAll('rect.seg').length") == 6
    assert count("return Array.from(document.querySelectorAll('.chart-latency rect.bin'))"
                 ".reduce(function(n,r){return n+Number(r.getAttribute('data-count'))},0)") == 6
    assert count("return document.querySelectorAll('line.p50').length") == 2
    assert count("return document.querySelectorAll('line.limit').length") == 1
    assert count("return document.querySelectorAll('.chart-metrics rect').length") == 5
    width = count("return document.querySelector('rect.seg').getBBox().width")
    assert width > 0


def test_browser_hostile_page_ran_no_script_and_kept_its_layout(
        chromium: Any, pages: dict[str, Path]) -> None:
    from selenium.webdriver.common.by import By

    _open(chromium, pages["hostile"])
    js = chromium.execute_script
    assert js("return typeof window.__pwned") == "undefined"
    assert chromium.title == "Elizon eval: FAIL"
    assert js("return document.querySelectorAll('img, iframe, textarea').length") == 0
    assert js("return document.querySelectorAll('a[href^=\"javascript\"]').length") == 0
    assert js("return document.querySelectorAll('script').length") == 1
    assert len(_shown(chromium)) == 2  # the page's own script ran (the CSP hash is right)
    assert chromium.find_element(By.ID, "status").text == "2 of 2 cases shown"
    chromium.find_element(By.CSS_SELECTOR, 'details.case[data-id="evil"] summary span').click()
    assert js("return document.documentElement.scrollWidth <= window.innerWidth")
    assert js("return document.querySelectorAll('details.case').length") == 2
    assert "<script>window.__pwned=1</script>" in chromium.find_element(
        By.CSS_SELECTOR, 'details.case[data-id="evil"] pre').text


def test_cli_show_renders_the_same_page_from_a_results_file(pytester: pytest.Pytester,
                                                            packages: Packages) -> None:
    cli = pytest.importorskip("pytest_elizon_eval.cli")
    package(packages)
    pytester.runpytest("--elizon-results=r.json", "--elizon-html=run.html",
                       "-p", "no:cacheprovider", "--elizon-history=off")  # no trend strip
    out = pytester.path / "shown.html"
    assert cli.main(["show", str(pytester.path / "r.json"), "--html", str(out)]) == 0
    assert out.read_text(encoding="utf-8") == (pytester.path / "run.html").read_text(
        encoding="utf-8")


@pytest.fixture(scope="module")
def glance_page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("glance") / "report.html"
    path.write_text(page.render(glance.realistic()), encoding="utf-8")
    return path


@pytest.mark.parametrize("width", glance.WIDTHS)
def test_browser_nothing_overflows_a_card_and_no_chart_label_overlaps(
        chromium: Any, glance_page: Path, width: int,
        tmp_path_factory: pytest.TempPathFactory) -> None:
    """At each width, a screenshot (kept where ELIZON_SCREENSHOTS says, to look at), and from
    the DOM: no element outside its card (every metric table open), no chart label over
    another or outside its chart, no sideways scrolling."""
    shots = Path(os.environ.get("ELIZON_SCREENSHOTS") or tmp_path_factory.mktemp("shots"))
    browser.screenshot(chromium, glance_page, shots / f"report-{width}.png", width)
    for card in chromium.find_elements("css selector", ".card details"):
        chromium.execute_script("arguments[0].open = true", card)
    assert chromium.execute_script("return document.querySelectorAll('.card').length") == 4
    assert chromium.execute_script(glance.OVERFLOWING) == []
    assert chromium.execute_script(glance.COLLIDING) == []
    assert chromium.execute_script(glance.BROKEN) == []
    assert chromium.execute_script(
        "return document.documentElement.scrollWidth <= window.innerWidth")

