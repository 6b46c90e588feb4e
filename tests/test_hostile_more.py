"""Hostile inputs a review found after the first hardening pass: numbers JSON cannot hold in
a case's input, prices whose cost overflows, report paths that are links, and exceptions
whose message cannot be printed. Each reaches every report with a clear result."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_elizon_eval import cli

from .conftest import ECHO_APP, Packages


def _strict_json(path: Path) -> dict[str, Any]:
    """The file as JSON proper: ``NaN`` and ``Infinity`` are not JSON."""
    def refuse(constant: str) -> None:
        raise ValueError(f"{constant} is not JSON")

    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"), parse_constant=refuse)
    return data


def test_numbers_json_cannot_hold_in_an_input_keep_the_results_json_and_signed(
        packages: Packages, pytester: pytest.Pytester) -> None:
    packages.package(suite="""
        cases:
          - id: nan
            input: {text: nan, x: .nan}
            expect: {contains: [nan]}
          - id: inf
            input: {text: inf, x: -.inf}
            expect: {contains: [never]}
    """, app=ECHO_APP)
    packages.write("pkg/eval/rows.jsonl", '{"id": "big", "input": {"text": "big", "x": 1e999}}\n')
    manifest = pytester.path / "pkg/elizon.yaml"
    manifest.write_text(manifest.read_text().replace(
        "evaluation:\n  suite: ./eval/suite.yaml\n  gate: must-pass",
        "evaluation:\n  suites:\n    - {suite: ./eval/suite.yaml, gate: must-pass}\n"
        "    - {suite: ./eval/rows.jsonl, gate: must-pass}"))
    assert cli.main(["keygen", str(pytester.path / "keys")]) == 0
    result = pytester.runpytest("-p", "no:cacheprovider", "--elizon-results=out/r.json",
                                f"--elizon-sign-key={pytester.path / 'keys/elizon-eval.key'}")
    result.assert_outcomes(passed=2, failed=1)
    assert "cannot write" not in result.stdout.str()
    data = _strict_json(pytester.path / "out/r.json")
    cases = {c["id"]: c for s in data["suites"] for c in s["cases"]}
    assert cases["nan"]["input"] == {"text": "nan", "x": "NaN"}
    assert cases["inf"]["input"]["x"] == "-Infinity"
    assert cases["big"]["input"]["x"] == "Infinity"
    assert (pytester.path / "out/r.json.sig").is_file()
    assert cli.main(["verify", str(pytester.path / "out/r.json"), "--public-key",
                     str(pytester.path / "keys/elizon-eval.pub")]) == 0


def test_a_price_whose_cost_could_overflow_is_refused_at_its_line(
        packages: Packages, pytester: pytest.Pytester) -> None:
    packages.package(suite="cases:\n  - id: c\n    input: x\n", app=ECHO_APP)
    manifest = pytester.path / "pkg/elizon.yaml"
    manifest.write_text(manifest.read_text() + "prices:\n  m: {input: 1.0e+300, output: 0}\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(["*pkg/elizon.yaml:7: prices.m.input: must be at most 1000000*"])
    assert result.ret != 0


def test_an_ini_price_past_the_cap_is_a_usage_error(packages: Packages,
                                                    pytester: pytest.Pytester) -> None:
    packages.package(suite="cases:\n  - id: c\n    input: x\n", app=ECHO_APP)
    pytester.makeini("[pytest]\nelizon_prices = m 1e300 0\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.stderr.fnmatch_lines(["*elizon_prices*'m 1e300 0'*from 0 to 1,000,000*"])
    assert result.ret == pytest.ExitCode.USAGE_ERROR


def test_report_paths_that_are_links_are_replaced_not_written_through(
        packages: Packages, pytester: pytest.Pytester) -> None:
    packages.package(suite="cases:\n  - id: c\n    input: x\n", app=ECHO_APP)
    victim = pytester.path / "victim.txt"
    victim.write_text("keep me\n")
    (pytester.path / "out").mkdir()
    for name in ("r.json", "r.json.sig", "j.xml", "m.md", "r.html"):
        (pytester.path / "out" / name).symlink_to(victim)
    assert cli.main(["keygen", str(pytester.path / "keys")]) == 0
    result = pytester.runpytest(
        "-p", "no:cacheprovider", "--elizon-results=out/r.json", "--elizon-junit=out/j.xml",
        "--elizon-markdown=out/m.md", "--elizon-html=out/r.html",
        f"--elizon-sign-key={pytester.path / 'keys/elizon-eval.key'}")
    result.assert_outcomes(passed=1)
    assert victim.read_text() == "keep me\n"
    for name in ("r.json", "r.json.sig", "j.xml", "m.md", "r.html"):
        path = pytester.path / "out" / name
        assert not path.is_symlink(), name
        assert path.stat().st_size > 0, name


UNPRINTABLE = """
class BadStr(Exception):
    def __str__(self):
        raise RuntimeError("no text for you")
"""


def test_an_exception_that_cannot_be_printed_keeps_its_type(
        packages: Packages, pytester: pytest.Pytester) -> None:
    packages.package(suite="""
        cases:
          - id: expected
            input: x
            expect: {errorContains: [BadStr]}
          - id: unexpected
            input: y
    """, app=UNPRINTABLE + "\ndef answer(text):\n    raise BadStr()\n")
    result = pytester.runpytest("-p", "no:cacheprovider", "--elizon-results=r.json")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*unexpected*BadStr: <unprintable BadStr>*"])
    assert "did not handle" not in result.stdout.str()


def test_an_entry_module_whose_import_error_cannot_be_printed_is_named(
        packages: Packages, pytester: pytest.Pytester) -> None:
    packages.package(suite="cases:\n  - id: c\n    input: x\n",
                     app=UNPRINTABLE + "\nraise BadStr()\n")
    result = pytester.runpytest("-p", "no:cacheprovider", "--elizon-results=r.json")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*cannot import 'app'*BadStr: <unprintable BadStr>*"])
    data = json.loads((pytester.path / "r.json").read_text())
    assert data["suites"][0]["cases"][0]["outcome"] == "error"
