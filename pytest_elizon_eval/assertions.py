"""The ``expect`` assertions (SPEC §4): one small function each → :class:`AssertionResult`.

Each result says, in words a person reads in a failure message, what was
expected and what was found. No pytest import here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .calling import EntryCall
from .model import Expect

__all__ = ["AssertionResult", "check", "excerpt"]

_EXCERPT_CONTEXT = 40


@dataclass(frozen=True)
class AssertionResult:
    """One assertion of one case. ``passed`` is None when it could not be checked."""

    name: str
    passed: bool | None
    expected: str
    found: str

    def to_data(self) -> dict[str, Any]:
        return {"name": self.name, "passed": self.passed, "expected": self.expected,
                "found": self.found}

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> AssertionResult:
        return cls(data["name"], data["passed"], data["expected"], data["found"])


def excerpt(text: str, start: int, end: int, context: int = _EXCERPT_CONTEXT) -> str:
    """``…before[match]after…`` around ``text[start:end]``, on one line."""
    before = text[max(0, start - context):start]
    after = text[end:end + context]
    lead = "…" if start > context else ""
    tail = "…" if end + context < len(text) else ""
    shown = f"{lead}{before}[{text[start:end]}]{after}{tail}"
    return shown.replace("\r", "\\r").replace("\n", "\\n")


def _quoted(values: list[str]) -> str:
    return ", ".join(repr(v) for v in values)


def _find_casefold(text: str, needle: str) -> tuple[str, int, int] | None:
    """Where ``needle`` occurs ignoring case, as (text to excerpt from, start, end)."""
    folded = text.casefold()
    at = folded.find(needle.casefold())
    if at < 0:
        return None
    # casefold can change lengths (ß → ss); then excerpt the folded text instead.
    source = text if len(folded) == len(text) else folded
    return source, at, at + len(needle.casefold())


def _contains(values: list[str], text: str) -> AssertionResult:
    missing = [v for v in values if _find_casefold(text, v) is None]
    found = f"missing: {_quoted(missing)}" if missing else "all found"
    return AssertionResult("contains", not missing, f"every one of: {_quoted(values)}", found)


def _not_contains(values: list[str], text: str) -> AssertionResult:
    hits = []
    for value in values:
        where = _find_casefold(text, value)
        if where is not None:
            source, start, end = where
            hits.append(f"{value!r} at character {start}: {excerpt(source, start, end)}")
    found = "; ".join(hits) if hits else "none found"
    return AssertionResult("notContains", not hits, f"none of: {_quoted(values)}", found)


def _equals(value: str, text: str) -> AssertionResult:
    trimmed = text.strip()
    if trimmed == value:
        return AssertionResult("equals", True, repr(value), "equal")
    differs = next((i for i, (a, b) in enumerate(zip(trimmed, value, strict=False)) if a != b),
                   min(len(trimmed), len(value)))
    found = (f"{excerpt(trimmed, differs, differs + 1)} (trimmed output, {len(trimmed)} chars; "
             f"first difference at character {differs})")
    return AssertionResult("equals", False, repr(value), found)


def _max_latency(limit_ms: int, latency_ms: float) -> AssertionResult:
    return AssertionResult("maxLatencyMs", latency_ms <= limit_ms, f"at most {limit_ms} ms",
                           f"took {latency_ms:.1f} ms")


_TextCheck = Callable[[Any, str], AssertionResult]
_TEXT_CHECKS: tuple[tuple[str, str, _TextCheck], ...] = (
    ("contains", "contains", _contains),
    ("not_contains", "notContains", _not_contains),
    ("equals", "equals", _equals),
)


def check(expect: Expect | None, call: EntryCall) -> list[AssertionResult]:
    """Every assertion of ``expect`` against ``call``, in the order SPEC §4 lists them."""
    if expect is None:
        return []
    results: list[AssertionResult] = []
    for field, name, checker in _TEXT_CHECKS:
        wanted = getattr(expect, field)
        if wanted is None:
            continue
        if call.text is None:
            results.append(AssertionResult(name, None, _describe_wanted(wanted),
                                           "not checked: there is no output"))
        else:
            results.append(checker(wanted, call.text))
    if expect.max_latency_ms is not None:
        if call.latency_ms is None or call.text is None:  # timed out or raised
            results.append(AssertionResult("maxLatencyMs", None, f"at most "
                                           f"{expect.max_latency_ms} ms", "not checked"))
        else:
            results.append(_max_latency(expect.max_latency_ms, call.latency_ms))
    return results


def _describe_wanted(wanted: object) -> str:
    return _quoted(wanted) if isinstance(wanted, list) else repr(wanted)
