"""The copy of a case's data that shares its strings (decide/plain_data.py)."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_elizon_eval.decide.plain_data import plain_copy
from pytest_elizon_eval.decide.results_data import CaseResult, SuiteInfo, encodable
from pytest_elizon_eval.reporting.aggregate import Aggregate

from .conftest import Packages

#: Answers its input, after a lone surrogate for "lone" (data that must be escaped).
SURROGATE_APP = """
def answer(text):
    return text + (" \\ud800" if text == "lone" else "")
"""


class Mapping(dict):  # type: ignore[type-arg]
    """A mapping subclass, as the YAML loader's (copied as a plain dict)."""


def test_plain_data_is_what_the_round_trip_makes_sharing_its_strings() -> None:
    text = "a long output string, " * 5
    value: dict[str, Any] = {"output": text, "input": Mapping(request=text),
                             "runs": [{"n": 1, "ok": True, "x": 0.1, "z": None}]}
    copy = plain_copy(value)
    assert copy == encodable(value)
    assert type(copy["input"]) is dict
    assert copy["output"] is text
    assert copy["input"]["request"] is text
    assert copy["runs"] is not value["runs"]
    assert copy["runs"][0] is not value["runs"][0]


@pytest.mark.parametrize("value", [
    {"output": "lone \ud800 surrogate"}, {"score": math.nan}, {"score": math.inf},
    {"pair": ("a", "b")}, {1: "int key"}, {"date": object()}, {"big": 10 ** 5000},
])
def test_what_only_the_round_trip_can_make_is_left_to_it(value: object) -> None:
    assert plain_copy(value) is None


def test_a_cycle_is_left_to_the_round_trip() -> None:
    value: list[object] = []
    value.append(value)
    assert plain_copy(value) is None


def test_the_reporter_keeps_the_cases_own_result_and_the_data_its_strings(
        packages: Packages, pytester: pytest.Pytester) -> None:
    """One copy of each case in the process that ran it: the run's results are the items'
    own, and their reports' data share the results' strings."""
    packages.package(suite="cases:\n  - id: plain\n    input: hello\n"
                           "    expect: {contains: [hello]}\n"
                           "  - id: escaped\n    input: lone\n"
                           "    expect: {contains: [lone]}\n", app=SURROGATE_APP)
    pytester.makeconftest("""
        import pytest
        seen = {}

        @pytest.hookimpl(trylast=True)
        def pytest_runtest_logreport(report):
            if report.when == "call":
                seen[report.nodeid] = report.elizon

        def pytest_sessionfinish(session):
            results = session.config.pluginmanager.get_plugin("elizon-reporter").aggregate
            for item in session.items:
                kept = results._results[item.nodeid]
                print("KEPT", item.name, kept is item.result,
                      seen[item.nodeid]["output"] is item.result.output)
    """)
    result = pytester.runpytest("-p", "no:cacheprovider", "-s")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*KEPT plain True True*", "*KEPT escaped False False*"])


def test_cases_from_report_data_share_their_suites_record() -> None:
    """An xdist worker's reports each carry the suite: the run keeps one record of it."""
    suite = SuiteInfo(path="pkg/eval/s.yaml", package="pkg", sha256="ab", gate="must-pass",
                      advisory=False)
    other = SuiteInfo(path="pkg/eval/s.yaml", package="pkg", sha256="cd", gate="must-pass",
                      advisory=False)
    aggregate = Aggregate()
    for n, info in enumerate((suite, suite, other)):
        aggregate.add(CaseResult(nodeid=f"pkg/eval/s.yaml::c{n}", case_id=f"c{n}", line=n,
                                 suite=info, outcome="passed").to_data())
    first, second, changed = (aggregate._results[f"pkg/eval/s.yaml::c{n}"].suite
                              for n in range(3))
    assert first is second
    assert first == suite
    assert changed == other  # a suite whose data differs keeps its own record


_SCALAR_VALUES = (st.none() | st.booleans() | st.floats() | st.text()
                  | st.integers(min_value=-2 ** 70, max_value=2 ** 70)
                  | st.sampled_from(["lone \ud800", ("a", "b"), Mapping(a=1)]))
_VALUES = st.recursive(_SCALAR_VALUES, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
    st.text(max_size=5) | st.sampled_from(["\udc80", 1]), inner, max_size=4), max_leaves=12)


def _shared_strings(copy: object, value: object) -> bool:
    if isinstance(copy, str):
        return copy is value
    if isinstance(copy, dict):
        assert isinstance(value, dict)
        return all(_shared_strings(copy[key], value[key]) for key in copy)
    if isinstance(copy, list):
        assert isinstance(value, list)
        return all(_shared_strings(c, v) for c, v in zip(copy, value, strict=True))
    return True


@given(_VALUES)
@settings(max_examples=300, deadline=None)
def test_the_copy_is_the_round_trip_whenever_it_is_made(value: object) -> None:
    copy = plain_copy(value)
    if value is None:  # its copy is None too: the caller's round trip makes it alike
        return
    if copy is not None:  # the round trip's own result, with the value's own strings
        assert copy == encodable(value)
        assert _shared_strings(copy, value)
        json.dumps(copy, ensure_ascii=False, allow_nan=False).encode("utf-8")
        return
    # left to the round trip only for what it alone can make: no plain value is refused
    plain = True
    try:
        json.dumps(value, ensure_ascii=False, allow_nan=False).encode("utf-8")
    except (UnicodeEncodeError, TypeError, ValueError, RecursionError):
        plain = False
    assert not plain or _checked_the_long_way(value), value


def _checked_the_long_way(value: object) -> bool:
    """A value that is plain but that the copy leaves to the round trip: a tuple, a dict
    subclass, a key that is not a string (JSON writes it as one), an integer past 64
    bits."""
    if type(value) is int:
        return abs(value) >= 2 ** 63
    if type(value) is list:
        return any(_checked_the_long_way(item) for item in value)
    if type(value) is dict:
        return any(type(key) is not str or _checked_the_long_way(item)
                   for key, item in value.items())
    return isinstance(value, (tuple, dict))
