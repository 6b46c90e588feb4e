"""The ``expect`` assertions: one small function each → :class:`AssertionResult`.

When each passes is docs/contract.md#assertions.

Each result says, in words a person reads in a failure message, what was
expected and what was found. No pytest import here.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from dataclasses import field as dataclass_field
from typing import TYPE_CHECKING, Any

from ..reporting.usage_text import dollars
from ..text import named
from . import answer_parts
from .answer_parts import PathMissing, json_from_text, select
from .calls import EntryCall, ErrorInfo, ToolCall, Usage

if TYPE_CHECKING:  # types only: reports read assertions without loading the models
    from ..load.runtime import Expect, ToolCallsExpect

__all__ = ["ASSERTION_TEXT_KEPT", "REGEX_TEXT_CAP", "REGEX_TIMEOUT_S", "AssertionResult",
           "calls_text", "check", "excerpt", "first_mismatch"]

_EXCERPT_CONTEXT = 40
#: A regex sees at most this many characters of the output ...
REGEX_TEXT_CAP = 1_000_000
#: ... and gives up after this long, so a pathological pattern cannot hang a run.
REGEX_TIMEOUT_S = 1.0
#: Characters of an assertion's ``expected`` and of its ``found`` a record keeps, its
#: length note included: a case's budget (docs/contract.md#results-json), as every run of a
#: repeat and every turn copies its assertions.
ASSERTION_TEXT_KEPT = 4000


def _kept(text: str) -> str:
    """``text`` within :data:`ASSERTION_TEXT_KEPT` characters, saying how long it was when
    cut (a text already cut stays as it is: a record read back is the record written)."""
    if not isinstance(text, str) or len(text) <= ASSERTION_TEXT_KEPT:
        return text
    note = f"… ({len(text):,} characters)"
    return text[:ASSERTION_TEXT_KEPT - len(note)] + note


@dataclass(frozen=True)
class AssertionResult:
    """One assertion of one case. ``passed`` is None when it could not be checked.
    ``expected`` and ``found`` are kept within :data:`ASSERTION_TEXT_KEPT` characters."""

    name: str
    passed: bool | None
    expected: str
    found: str
    #: A judge's failure counted as advisory (its judge is not aligned: docs/contract.md
    #: #judge-alignment): shown failed, yet no outcome counts it — the case's result says
    #: why (``CaseResult.advisory``), so it is not kept in the data.
    advisory: bool = dataclass_field(default=False, compare=False)

    def __post_init__(self) -> None:
        # every check, a plugin's and a judge's too, builds one: capped here, once
        if len(self.expected) > ASSERTION_TEXT_KEPT or len(self.found) > ASSERTION_TEXT_KEPT:
            object.__setattr__(self, "expected", _kept(self.expected))  # frozen: set once
            object.__setattr__(self, "found", _kept(self.found))

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


#: Characters of a list of names an answer gave (the calls that failed…) a text shows.
_NAMES_SHOWN = 1000


def _quoted_names(values: Sequence[str]) -> str:
    """Names an answer gave, quoted: each within :func:`~..text.named`'s length, as many as
    fit in :data:`_NAMES_SHOWN` characters (one at least), then how many more there were."""
    shown: list[str] = []
    size = 0
    for value in values:
        part = repr(named(value))
        if shown and size + len(part) > _NAMES_SHOWN:
            break
        shown.append(part)
        size += len(part) + 2
    more = len(values) - len(shown)
    return ", ".join(shown) + (f", and {more:,} more" if more else "")


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


def _max_latency(limit_ms: int, latency_ms: float, replayed: bool) -> AssertionResult:
    took = f"took {latency_ms:.1f} ms" + (" (recorded latency, replayed)" if replayed else "")
    return AssertionResult("maxLatencyMs", latency_ms <= limit_ms, f"at most {limit_ms} ms",
                           took)


def _matches(patterns: list[str], text: str) -> AssertionResult:
    import regex  # deferred: costs import time on every run, needed by few

    seen = text[:REGEX_TEXT_CAP]
    missing: list[str] = []
    for pattern in patterns:
        try:
            if regex.search(pattern, seen, timeout=REGEX_TIMEOUT_S) is None:
                missing.append(repr(pattern))
        except TimeoutError:
            missing.append(f"{pattern!r} (gave up after {REGEX_TIMEOUT_S:g} s: the pattern "
                           "backtracks too much on this output)")
    found = f"no match for: {', '.join(missing)}" if missing else "all found"
    return AssertionResult("matches", not missing, f"every regex of: {_quoted(patterns)}", found)


def _json(value: object, limit: int = 80) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _route(expected: str, value: object, key: str) -> AssertionResult:
    wanted = f"route ({key}) exactly {expected!r}"
    if not isinstance(value, dict):
        kind = "text" if isinstance(value, str) else type(value).__name__
        return AssertionResult("route", False, wanted,
                               f"the output is {kind}, not a mapping: {_json(value)}")
    node: Any = value
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            keys = ", ".join(map(str, node)) if isinstance(node, dict) else _json(node)
            return AssertionResult("route", False, wanted,
                                   f"no key {part!r} in the output (it has: {keys})")
        node = node[part]
    return AssertionResult("route", node == expected and isinstance(node, str), wanted,
                           f"route {_json(node)}")


def _same_scalar(expected: object, actual: object) -> bool:
    if isinstance(expected, bool) or isinstance(actual, bool):
        return expected is actual  # JSON true is not 1
    if isinstance(expected, (int, float)) and isinstance(actual, (int, float)):
        return expected == actual
    return type(expected) is type(actual) and expected == actual


def _key_path(path: str, key: str) -> str:
    return f"{path}.{key}" if key.isidentifier() else f"{path}[{json.dumps(key)}]"


def first_mismatch(expected: object, actual: object, path: str = "$") -> str | None:
    """smithers' rule: mappings and lists by subset (lists position by position), scalars by
    equality. The first place they differ, as ``$.items[2].status: expected …, found …``."""
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return f"{path}: expected a mapping, found {_json(actual)}"
        for key, want in expected.items():
            if key not in actual:
                return f"{_key_path(path, key)}: missing (expected {_json(want)})"
            found = first_mismatch(want, actual[key], _key_path(path, key))
            if found:
                return found
        return None
    if isinstance(expected, list):
        if not isinstance(actual, list):
            return f"{path}: expected a list, found {_json(actual)}"
        if len(actual) < len(expected):
            return f"{path}: expected at least {len(expected)} items, found {len(actual)}"
        for index, want in enumerate(expected):
            found = first_mismatch(want, actual[index], f"{path}[{index}]")
            if found:
                return found
        return None
    if _same_scalar(expected, actual):
        return None
    return f"{path}: expected {_json(expected)}, found {_json(actual)}"


def _output(expected: object, value: object) -> AssertionResult:
    mismatch = first_mismatch(expected, value)
    return AssertionResult("output", mismatch is None, f"output matching {_json(expected)}",
                           mismatch or "matches")


def _error_contains(values: list[str], error: ErrorInfo | None) -> AssertionResult:
    wanted = f"an error containing every one of: {_quoted(values)}"
    if error is None:
        return AssertionResult("errorContains", False, wanted,
                               "the entry point returned normally (no error)")
    folded = error.text.casefold()
    missing = [v for v in values if v.casefold() not in folded]
    found = (f"missing {_quoted(missing)} in: {error.text[:200]}" if missing
             else f"raised {error.text[:200]}")
    return AssertionResult("errorContains", not missing, wanted, found)


def _json_schema(schema: dict[str, Any], value: object) -> AssertionResult:
    import jsonschema  # deferred: costs import time on every run, needed by few

    wanted = "output valid against the JSON Schema"
    if isinstance(value, str):  # JSON written as text is read first (plain prose fails)
        read = json_from_text(value)
        if read.error is not None:
            return AssertionResult("jsonSchema", False, wanted, read.error)
        value = read.value
    validator = jsonschema.Draft202012Validator(schema)
    error = jsonschema.exceptions.best_match(validator.iter_errors(value))
    if error is None:
        return AssertionResult("jsonSchema", True, wanted, "valid")
    where = "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}"
                          for p in error.absolute_path)
    return AssertionResult("jsonSchema", False, wanted, f"at {where}: {error.message[:300]}")


_NO_OUTPUT = "not checked: there is no output"
#: Characters of a tool call's arguments shown, and of the whole list of calls.
_ARGUMENTS_SHOWN = 200
_CALLS_SHOWN = 1500


def _call_text(call: ToolCall) -> str:
    arguments = _json(call.arguments, _ARGUMENTS_SHOWN)
    return f"{named(call.name)}({arguments})" + (
        f" error: {call.error[:200]}" if call.error else "")


def calls_text(calls: Sequence[ToolCall]) -> str:
    """The calls that happened, in order, on one line (cut to a bounded length)."""
    if not calls:
        return "no tool was called"
    parts: list[str] = []
    size = len("calls: ")
    for call in calls:  # only what can be shown is built: an answer may call 10,000 tools
        parts.append(_call_text(call))
        size += len(parts[-1]) + 2
        if size > _CALLS_SHOWN:
            break
    text = "calls: " + "; ".join(parts)
    return text if len(text) <= _CALLS_SHOWN else text[:_CALLS_SHOWN - 1] + "…"


def _names(calls: Sequence[ToolCall]) -> list[str]:
    return [c.name for c in calls]


def _tool_calls(rules: ToolCallsExpect, calls: Sequence[ToolCall]) -> list[AssertionResult]:
    """One result per rule of ``toolCalls``; a failing one lists the calls that happened."""
    names = _names(calls)
    seen = calls_text(calls)
    results: list[AssertionResult] = []

    def rule(name: str, passed: bool, wanted: str, problem: str) -> None:
        found = f"{problem}; {seen}" if not passed else f"{len(calls)} calls"
        results.append(AssertionResult(f"toolCalls.{name}", passed, wanted, found))

    if rules.called is not None:
        missing = [n for n in rules.called if n not in names]
        rule("called", not missing, f"each called at least once: {_quoted(rules.called)}",
             f"never called: {_quoted(missing)}")
    if rules.not_called is not None:
        hit = [n for n in rules.not_called if n in names]
        rule("notCalled", not hit, f"none called of: {_quoted(rules.not_called)}",
             f"called: {_quoted(hit)}")
    for pattern in rules.called_with or ():
        wanted_args = pattern.arguments or {}
        same = [c for c in calls if c.name == pattern.name]
        mismatches = [first_mismatch(wanted_args, c.arguments) for c in same]
        rule("calledWith", any(m is None for m in mismatches),
             f"a call of {pattern.name} with arguments matching {_json(wanted_args)}",
             f"{pattern.name} was never called" if not same
             else f"no call of {pattern.name} matches ({mismatches[0]})")
    if rules.order is not None:
        position, missing_at = 0, None
        for index, want in enumerate(rules.order):
            found_at = next((i for i in range(position, len(names)) if names[i] == want), None)
            if found_at is None:
                missing_at = index
                break
            position = found_at + 1
        rule("order", missing_at is None, f"called in this relative order: {_quoted(rules.order)}",
             "" if missing_at is None else
             f"{rules.order[missing_at]!r} was not called after {rules.order[:missing_at]!r}")
    if rules.all_succeeded is not None:
        failed = [c.name for c in calls if c.error is not None]
        passed = not failed if rules.all_succeeded else bool(failed)
        rule("allSucceeded", passed,
             "no call carries an error" if rules.all_succeeded else "some call fails",
             f"calls with an error: {_quoted_names(failed)}" if failed else "no call failed")
    if rules.max_calls is not None:
        rule("maxCalls", len(calls) <= rules.max_calls, f"at most {rules.max_calls} calls",
             f"{len(calls)} calls")
    return results


def _max_tokens(limit: int, usage: Usage | None) -> AssertionResult:
    wanted = f"at most {limit:,} tokens (input + output)"
    if usage is None or usage.tokens is None:
        why = usage.missing if usage is not None and usage.missing else (
            "the entry point reported no token counts (return an Answer with usage)")
        return AssertionResult("maxTokens", False, wanted, f"usage unknown: {why}")
    return AssertionResult("maxTokens", usage.tokens <= limit, wanted,
                           f"{usage.tokens:,} tokens ({usage.input_tokens or 0:,} in, "
                           f"{usage.output_tokens or 0:,} out)")


def _max_cost(limit: float, usage: Usage | None) -> AssertionResult:
    wanted = f"at most ${limit:g}"
    if usage is None or usage.cost_usd is None:
        why = ("the entry point reported no usage" if usage is None else
               usage.missing if usage.missing else  # e.g. a stream not asked for its usage
               f"no cost reported and no price for model {named(usage.model)!r}" if usage.model
               else "no cost reported, and no model named to price the tokens")
        return AssertionResult("maxCostUsd", False, wanted, f"cost unknown: {why}")
    return AssertionResult("maxCostUsd", usage.cost_usd <= limit, wanted,
                           dollars(usage.cost_usd))


_Check = Callable[[Any, EntryCall, str], AssertionResult]
_Describe = Callable[[Any, str], str]

#: (expect field, assertion name, check, what it expects — for "not checked" lines), in
#: the documented order. A check runs only when there is an output, except errorContains.
_CHECKS: tuple[tuple[str, str, _Check, _Describe], ...] = (
    ("contains", "contains", lambda w, c, k: _contains(w, c.text or ""),
     lambda w, k: f"every one of: {_quoted(w)}"),
    ("not_contains", "notContains", lambda w, c, k: _not_contains(w, c.text or ""),
     lambda w, k: f"none of: {_quoted(w)}"),
    ("equals", "equals", lambda w, c, k: _equals(w, c.text or ""), lambda w, k: repr(w)),
    ("max_latency_ms", "maxLatencyMs",
     lambda w, c, k: _max_latency(w, c.latency_ms or 0.0, c.replayed),
     lambda w, k: f"at most {w} ms"),
    ("matches", "matches", lambda w, c, k: _matches(w, c.text or ""),
     lambda w, k: f"every regex of: {_quoted(w)}"),
    ("route", "route", lambda w, c, k: _route(w, c.value, k),
     lambda w, k: f"route ({k}) exactly {w!r}"),
    ("output", "output", lambda w, c, k: _output(w, c.value),
     lambda w, k: f"output matching {_json(w)}"),
    ("error_contains", "errorContains", lambda w, c, k: _error_contains(w, c.error), str),
    ("json_schema", "jsonSchema", lambda w, c, k: _json_schema(w, c.value),
     lambda w, k: "output valid against the JSON Schema"),
    ("max_tokens", "maxTokens", lambda w, c, k: _max_tokens(w, c.usage), str),
    ("max_cost_usd", "maxCostUsd", lambda w, c, k: _max_cost(w, c.usage), str),
    ("contains_any", "containsAny",
     lambda w, c, k: AssertionResult("containsAny", *answer_parts.contains_any(w, c.text or "")),
     lambda w, k: f"at least one of: {_quoted(w)}"),
    ("contains_exact", "containsExact",
     lambda w, c, k: AssertionResult("containsExact",
                                     *answer_parts.contains_exact(w, c.text or "")),
     lambda w, k: f"every one of, case-sensitive: {_quoted(w)}"),
    ("starts_with", "startsWith",
     lambda w, c, k: AssertionResult("startsWith", *answer_parts.starts_with(w, c.text or "")),
     lambda w, k: f"text starting with {w!r}"),
    ("is_json", "isJson",
     lambda w, c, k: AssertionResult("isJson", *answer_parts.is_json(w, c.text or "")),
     lambda w, k: "text that reads as JSON" if w else "text that is not JSON"),
)
#: Checked whenever the call did not time out: they read the error, the usage, the calls.
_WITHOUT_OUTPUT = frozenset({"error_contains", "max_tokens", "max_cost_usd"})
#: With ``expect.path``, these read the part of the answer at the path, not the whole.
_READS_PATH = frozenset({"contains", "not_contains", "equals", "matches", "json_schema",
                         "contains_any", "contains_exact", "starts_with", "is_json"})


def _part(path: str, call: EntryCall) -> EntryCall | str:
    """The call as the path-reading assertions see it, or why the path is missing."""
    value = call.value
    if isinstance(value, str):  # a structured answer written as JSON text
        read = json_from_text(value)
        if read.error is not None:
            return f"the answer is text, not structured: {read.error}"
        value = read.value
    try:
        found = select(value, path)
    except PathMissing as exc:
        return str(exc)
    text = found if isinstance(found, str) else json.dumps(found, ensure_ascii=False)
    return replace(call, value=found, text=text)


def check(expect: Expect | None, call: EntryCall, route_key: str = "route"
          ) -> list[AssertionResult]:
    """Every assertion of ``expect`` against ``call`` (the judge aside), in the documented order."""
    if expect is None:
        return []
    results: list[AssertionResult] = []
    part: EntryCall | str = call
    if expect.path is not None and call.text is not None:
        part = _part(expect.path, call)
        if isinstance(part, str):
            results.append(AssertionResult("path", False, f"a value at {expect.path}", part))
    for field, name, checker, describe in _CHECKS:
        wanted = getattr(expect, field)
        if wanted is None and not (field == "output" and expect.checks_output):
            continue
        if field in _READS_PATH and part is not call:
            if isinstance(part, str):
                results.append(AssertionResult(name, None, describe(wanted, route_key),
                                               "not checked: the path is missing"))
            else:
                results.append(checker(wanted, part, route_key))
        elif field in _WITHOUT_OUTPUT:
            if not call.timed_out:
                results.append(checker(wanted, call, route_key))
        elif call.text is None:
            results.append(AssertionResult(name, None, describe(wanted, route_key), _NO_OUTPUT))
        else:
            results.append(checker(wanted, call, route_key))
    if expect.tool_calls is not None and not call.timed_out:
        results.extend(_tool_calls(expect.tool_calls, call.tool_calls))
    return results
