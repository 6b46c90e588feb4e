"""Issue 37 item 8, the rest: prompt-cache tokens priced at the provider's cache rates where
the prices give them (docs/contract.md#cost, docs/format.md ``prices``).

The answers are the ``anthropic`` SDK's own ``Message`` (its usage reports the cache reads
and writes apart from ``input_tokens``), returned by a Python entry of a package that
pytester runs as a user runs it; the rates come from a real ``elizon.yaml`` and a real ini
file. Every expected cost is worked out here, in whole millionths of a dollar, from the
token counts and the rates, not by the plugin's formula.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from pytest_elizon_eval.load import common_forms
from pytest_elizon_eval.load.packages import load_manifest
from pytest_elizon_eval.run.answers import priced
from pytest_elizon_eval.run.calls import Rates, Usage

from .conftest import ECHO_APP, Packages, validate_results
from .test_bad_files import error_lines

#: An Anthropic answer that read 5,000 tokens from the prompt cache and wrote 1,000 to it,
#: besides 82 uncached input tokens and 17 output tokens.
MESSAGE = {"id": "msg_01", "type": "message", "role": "assistant", "model": "claude-x",
           "stop_reason": "end_turn", "stop_sequence": None,
           "content": [{"type": "text", "text": "Refunds take 14 days."}],
           "usage": {"input_tokens": 82, "output_tokens": 17,
                     "cache_read_input_tokens": 5000, "cache_creation_input_tokens": 1000}}

#: The entry answers as the model its input names, so one package meets several prices.
APP = f"""
from anthropic.types import Message
MESSAGE = {MESSAGE!r}
def answer(text):
    return Message.model_validate({{**MESSAGE, "model": text}})
"""

#: Every case must cost at most $0.006: true at the cache rates, false at the input rate.
SUITE = """
cases:
  - id: {model}
    input: {model}
    expect: {{maxCostUsd: 0.006}}
"""

CACHE_RATED = "prices:\n  claude-x: {input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75}\n"


def _micro(fresh: int, read: int, written: int, out: int, rates: tuple[float, ...]) -> float:
    """The cost in dollars of these token counts at these rates (per 1M tokens), each count
    times its rate, summed as whole millionths of a dollar (the rates here are tenths and
    hundredths) and divided once."""
    total = sum(round(count * rate * 100) for count, rate in
                zip((fresh, read, written, out), rates, strict=True))
    return total / 100 / 1e6


#: The cost of MESSAGE's usage at the cache rates, and with every input token at the input rate.
AT_CACHE_RATES = _micro(82, 5000, 1000, 17, (3, 0.3, 3.75, 15))        # $0.005751
AT_INPUT_RATE = _micro(82, 5000, 1000, 17, (3, 3, 3, 15))              # $0.018501
READ_RATE_ONLY = _micro(82, 5000, 1000, 17, (3, 0.3, 3, 15))           # $0.005001


def _usages(pytester: pytest.Pytester) -> list[dict[str, Any]]:
    data = json.loads((pytester.path / "results.json").read_text())
    validate_results(data)
    return [c["usage"] for s in data["suites"] for c in s["cases"]]


def test_cache_rates_price_cache_reads_and_writes_in_the_manifest_and_the_ini(
        packages: Packages, pytester: pytest.Pytester) -> None:
    import anthropic.types  # noqa: F401 - imported here, kept for the inner run

    assert AT_CACHE_RATES == 0.005751  # the sums, checked by hand
    assert AT_INPUT_RATE == 0.018501
    # the manifest's rates (which win for its package over the ini's claude-x line)
    packages.package("yaml", suite=SUITE.format(model="claude-x"), app=APP)
    manifest = pytester.path / "yaml/elizon.yaml"
    manifest.write_text(manifest.read_text() + CACHE_RATED)
    # the ini's: with both cache rates, with none (the input rate), with the read rate only
    packages.write("ini/elizon.yaml", "name: ini\nentry: app:answer\nevaluation:\n"
                                      "  suites:\n    - suite: ./x.yaml\n    - suite: ./y.yaml\n"
                                      "    - suite: ./z.yaml\n")
    packages.write("ini/app.py", APP)
    for model in ("x", "y", "z"):
        packages.write(f"ini/{model}.yaml", SUITE.format(model=f"claude-{model}"))
    pytester.makeini("[pytest]\nelizon_prices =\n    claude-x 3 15 0.3 3.75\n"
                     "    claude-y 3 15\n    claude-z 3 15 0.3\n")
    result = pytester.runpytest("-v", "-p", "no:randomly", "--elizon-results=results.json")
    # maxCostUsd sees the cache-priced cost: only the answer priced at the input rate fails
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(["*ini/x.yaml::claude-x PASSED*$0.00575)*",
                                 "*ini/y.yaml::claude-y FAILED*$0.0185)*",
                                 "*ini/z.yaml::claude-z PASSED*$0.00500)*",
                                 "*yaml/eval/suite.yaml::claude-x PASSED*$0.00575)*"])
    result.stdout.fnmatch_lines(["*✗ maxCostUsd*", "*found: *$0.0185*"])
    usages = _usages(pytester)
    assert len(usages) == 4
    costs: dict[str, list[object]] = {u["model"]: [] for u in usages}
    for usage in usages:
        assert (usage["input_tokens"], usage["output_tokens"], usage["cache_read_tokens"],
                usage["cache_write_tokens"]) == (6082, 17, 5000, 1000)
        costs[usage["model"]].append(usage["cost_usd"])
    assert costs == {"claude-x": [pytest.approx(AT_CACHE_RATES, rel=1e-12)] * 2,
                     "claude-y": [pytest.approx(AT_INPUT_RATE, rel=1e-12)],
                     "claude-z": [pytest.approx(READ_RATE_ONLY, rel=1e-12)]}


def _cost(usage: Usage, prices: Mapping[str, Rates]) -> float | None:
    """The cost :func:`priced` gives ``usage``, having checked that it changed nothing else."""
    got = priced(usage, prices)
    assert got is not None
    assert replace(got, cost_usd=usage.cost_usd) == usage
    return got.cost_usd


def test_the_manifest_rates_are_read_as_written(tmp_path: Path) -> None:
    manifest = tmp_path / "elizon.yaml"
    manifest.write_text(CACHE_RATED + "  plain: {input: 0.15, output: 0.6}\n"
                        "  read: {input: 1, output: 2, cacheRead: 0, cacheWrite: null}\n")
    prices = load_manifest(manifest, "elizon.yaml").prices
    assert prices == {"claude-x": Rates(3.0, 15.0, 0.3, 3.75), "plain": Rates(0.15, 0.6),
                      "read": Rates(1.0, 2.0, 0.0, None)}
    # a free cache read (0) is a rate, not its absence; a null rate is an absent one
    assert _cost(Usage(6082, 17, None, "read", 5000, 1000), prices) \
        == pytest.approx(_micro(82, 5000, 1000, 17, (1, 0, 1, 2)), rel=1e-12)
    # prices are not in the fast common form: the models validate them
    assert common_forms.manifest({"prices": {"m": {"input": 1, "output": 2}}}) is None


def test_without_cache_rates_cache_tokens_cost_the_input_rate() -> None:
    usage = Usage(6082, 17, None, "claude-x", 5000, 1000)
    expected = pytest.approx(AT_INPUT_RATE, rel=1e-12)
    assert _cost(usage, {"claude-x": Rates(3, 15)}) == expected
    assert _cost(usage, {"claude-x": (3, 15)}) == expected  # type: ignore[dict-item]
    # no cache tokens: the cache rates change nothing
    assert _cost(Usage(82, 17, None, "claude-x"), {"claude-x": Rates(3, 15, 0.3, 3.75)}) \
        == pytest.approx(_micro(82, 0, 0, 17, (3, 0, 0, 15)), rel=1e-12)
    # a reported cost wins, and an unpriced model has none
    assert _cost(Usage(6082, 17, 0.5, "claude-x", 5000), {"claude-x": Rates(3, 15, 0.3)}) == 0.5
    assert _cost(usage, {"other": Rates(3, 15, 0.3)}) is None


def test_a_cost_is_never_negative_when_the_cache_counts_exceed_the_input() -> None:
    # answers refuse such usage (tests/test_answers_hostile.py); a Usage made by hand is priced
    # with no uncached input, never with a negative count of it
    assert _cost(Usage(100, 0, None, "m", 5000, 1000), {"m": Rates(3, 15, 0.3, 3.75)}) \
        == pytest.approx(_micro(0, 5000, 1000, 0, (3, 0.3, 3.75, 15)), rel=1e-12)


#: The line of the rate in the manifest below, and how a bad value is worded.
BAD_YAML = [
    ("-1", "must be at least 0.0, found -1"),
    (".inf", "must be a finite number, found infinity (.inf)"),
    (".nan", "must be a finite number, found not-a-number (.nan)"),
    ("1.0e+7", "must be at most 1000000.0, found 10000000.0"),
    ("cheap", "expected a number, found the text 'cheap'"),
]


@pytest.mark.parametrize("key", ["cacheRead", "cacheWrite"])
@pytest.mark.parametrize(("written", "message"), BAD_YAML)
def test_a_bad_cache_rate_is_an_error_at_its_line(tmp_path: Path, key: str, written: str,
                                                  message: str) -> None:
    manifest = f"prices:\n  m:\n    input: 3\n    output: 15\n    {key}: {written}\n" \
        "evaluation:\n  suite: ./eval/suite.yaml\n"
    suite = "cases:\n  - id: a\n    input: x\n"
    assert error_lines(tmp_path, suite, manifest) == [
        f"ELIZON_MANIFEST_INVALID: pkg/elizon.yaml:5: prices.m.{key}: {message}"]


def test_a_misspelled_cache_rate_names_the_key_it_meant(tmp_path: Path) -> None:
    manifest = "prices:\n  m: {input: 3, output: 15, cache_read: 0.3}\n" \
        "evaluation:\n  suite: ./eval/suite.yaml\n"
    lines = error_lines(tmp_path, "cases:\n  - id: a\n    input: x\n", manifest)
    assert lines == ["ELIZON_MANIFEST_INVALID: pkg/elizon.yaml:2: prices.m: unknown key "
                     "'cache_read' (did you mean 'cacheRead'?); allowed here: input, output, "
                     "cacheRead, cacheWrite"]


@pytest.mark.parametrize("line", [
    "m 3 15 -1",          # a negative cache read rate
    "m 3 15 0.3 inf",     # an infinite cache write rate
    "m 3 15 0.3 nan",
    "m 3 15 0.3 3.75 9",  # a fifth number
    "m 3 15 cheap",       # not a number
    "m 3 15 0.3 2e6",     # past the most a price may be
    "m 3 nan",            # an output rate that is not a number (min and max skip a NaN)
])
def test_a_bad_ini_cache_rate_is_a_usage_error_naming_the_option(
        packages: Packages, pytester: pytest.Pytester, line: str) -> None:
    packages.package(suite="cases:\n  - id: a\n    input: x\n", app=ECHO_APP)
    pytester.makeini(f"[pytest]\nelizon_prices =\n    ok 1 2 0.1 1.25\n    {line}\n")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*ini option elizon_prices in *: {line!r}: expected "
                                 "'MODEL INPUT OUTPUT' or 'MODEL INPUT OUTPUT CACHE_READ "
                                 "[[]CACHE_WRITE[]]' (*from 0 to 1,000,000*"])
