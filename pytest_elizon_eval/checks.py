"""Checks written in Python (``expect.checks``): find them, and run them on an answer.

Owns what a check is (docs/contract.md#checks): a plain function, named in a suite
as ``module.path:function`` (imported like an entry point, from the package's
folder first) or by a name from the ``elizon_checks`` fixture's mapping. It asks
by parameter name for what it needs — ``output``, ``value``, ``input``,
``answer``, ``case`` — and passes by returning True; it fails by returning False
or ``(False, "reason")`` or by raising ``AssertionError``; a float is a score
held against the spec's ``threshold``. A check runs in a thread of its own, so a
hung one is abandoned at the case's deadline; async checks get an event loop of
their own there. Which checks a suite names, with their lines, is read from the
raw suite data (:func:`check_refs`), so a ``module:function`` that cannot be
imported is a collection error at its line. No pytest import here.
"""

from __future__ import annotations

import inspect
import threading
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import errors
from .assertions import AssertionResult
from .calls import EntryCall
from .errors import ElizonError
from .loading import YamlMapping, YamlSequence
from .model import Case, CheckSpec, Expect

__all__ = ["PARAMETERS", "CheckRef", "check_refs", "fixture_checks", "resolve_specs",
           "run_checks", "signature_problem", "uses_fixture"]

#: What a check may ask for, by parameter name.
PARAMETERS = ("output", "value", "input", "answer", "case")
CheckFunction = Callable[..., object]


@dataclass(frozen=True)
class CheckRef:
    """A check named in a suite file: by which case, where, at which line."""

    case_id: str
    where: str
    line: int
    name: str


def _name(item: object) -> str | None:
    if isinstance(item, str):
        return item
    if isinstance(item, dict) and isinstance(item.get("check"), str):
        return str(item["check"])
    return None


def _refs_in(expect: object, case_id: str, where: str, fallback: int) -> list[CheckRef]:
    if not isinstance(expect, YamlMapping):
        return []
    listed = expect.get("checks")
    if not isinstance(listed, YamlSequence):
        return []
    found = []
    for index, item in enumerate(listed):
        name = _name(item)
        if name is not None:
            line = listed.item_lines[index] if index < len(listed.item_lines) else fallback
            found.append(CheckRef(case_id, f"{where}.expect.checks[{index}]", line, name))
    return found


def check_refs(data: Any) -> tuple[CheckRef, ...]:
    """Every check a (validated) suite's raw data names, with its line."""
    cases = data.get("cases") if isinstance(data, YamlMapping) else None
    if not isinstance(cases, YamlSequence):
        return ()
    found: list[CheckRef] = []
    for index, case in enumerate(cases):
        if not isinstance(case, YamlMapping):
            continue
        line = cases.item_lines[index]
        case_id = str(case.get("id"))
        found += _refs_in(case.get("expect"), case_id, f"cases[{index}]", line)
        turns = case.get("turns")
        if isinstance(turns, YamlSequence):
            for number, turn in enumerate(turns):
                if isinstance(turn, YamlMapping):
                    found += _refs_in(turn.get("expect"), case_id,
                                      f"cases[{index}].turns[{number}]", line)
    return tuple(found)


def is_spec(name: str) -> bool:
    """``module.path:function`` (imported) rather than a name from the fixture."""
    return ":" in name


def signature_problem(function: object) -> str | None:
    """What makes ``function`` unusable as a check, or None."""
    if not callable(function):
        return f"is {type(function).__name__}, not a function"
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):
        return None  # a builtin without a signature: it is called with nothing
    for parameter in signature.parameters.values():
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        if parameter.name not in PARAMETERS and parameter.default is parameter.empty:
            return (f"asks for {parameter.name!r}; a check asks by name for any of: "
                    f"{', '.join(PARAMETERS)}")
        if parameter.kind is parameter.POSITIONAL_ONLY and parameter.default is parameter.empty:
            return f"takes {parameter.name!r} by position only; it is passed by name"
    return None


def resolve_specs(refs: Sequence[CheckRef], folders: Sequence[Path], display: str
                  ) -> dict[str, CheckFunction]:
    """Import every ``module:function`` check of a suite; one ElizonError lists every one
    that cannot be used, at its line."""
    from .binding import import_attribute  # deferred: binding pulls in every entry kind

    found: dict[str, CheckFunction] = {}
    problems: dict[str, str] = {}
    for ref in refs:
        if not is_spec(ref.name) or ref.name in found:
            continue
        if ref.name not in problems:
            try:
                function = import_attribute(ref.name, folders)
            except ValueError as exc:
                problems[ref.name] = str(exc).replace(
                    "a {command: […]} or a {url: …} mapping", "or a name from the "
                    "elizon_checks fixture")
                continue
            problem = signature_problem(function)
            if problem is not None:
                problems[ref.name] = problem
                continue
            found[ref.name] = function  # type: ignore[assignment]
    lines = [f"{display}:{ref.line}: {ref.where}: check {ref.name!r} cannot be used: "
             f"{problems[ref.name]}" for ref in refs if ref.name in problems]
    if lines:
        raise ElizonError(errors.EVALUATION_SUITE_INVALID, lines)
    return found


def _names(case: Case) -> list[str]:
    expects = [case.expect, *(t.expect for t in case.turns or ())]
    return [c if isinstance(c, str) else c.check
            for e in expects if e is not None for c in e.checks or ()]


def uses_fixture(case: Case) -> bool:
    """Whether the case names a check from the ``elizon_checks`` fixture."""
    return any(not is_spec(n) for n in _names(case))


def fixture_checks(case: Case, refs: Sequence[CheckRef], given: object, where: str,
                   display: str) -> dict[str, CheckFunction]:
    """The case's checks named from the ``elizon_checks`` fixture's value ``given``
    (``where`` says which fixture definition gave it); ElizonError for a missing or bad one."""
    wanted = [n for n in dict.fromkeys(_names(case)) if not is_spec(n)]
    if not wanted:
        return {}
    if given is None:
        given = {}
    if not isinstance(given, Mapping):
        raise ElizonError(errors.EVALUATION_SUITE_INVALID, [
            f"{where} returned {type(given).__name__}, not a mapping of check names to "
            "functions"])
    lines: list[str] = []
    found: dict[str, CheckFunction] = {}
    for name in wanted:
        ref = next((r for r in refs if r.case_id == case.id and r.name == name), None)
        at = f"{display}:{ref.line}: {ref.where}" if ref else f"{display}: case {case.id}"
        if name not in given:
            known = ", ".join(sorted(map(str, given))) or "no checks"
            lines.append(f"{at}: no check named {name!r} in {where} (it has: {known}); name "
                         "a check from the fixture or write 'module.path:function'")
            continue
        problem = signature_problem(given[name])
        if problem is not None:
            lines.append(f"{at}: check {name!r} from {where} cannot be used: {problem}")
            continue
        found[name] = given[name]
    if lines:
        raise ElizonError(errors.EVALUATION_SUITE_INVALID, lines)
    return found


# -- running ------------------------------------------------------------------------------------

def _arguments(function: CheckFunction, offered: dict[str, object]) -> dict[str, object]:
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return {}
    if any(p.kind is p.VAR_KEYWORD for p in parameters):
        return dict(offered)
    return {p.name: offered[p.name] for p in parameters if p.name in offered}


async def _awaited(pending: Any) -> object:
    return await pending


def _call_by(function: CheckFunction, arguments: dict[str, object], deadline: float
             ) -> tuple[bool, object, BaseException | None]:
    """(finished in time, what it returned, what it raised): in a thread of its own, so a
    hung check is abandoned at the deadline, never waited for."""
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            result = function(**arguments)
            if inspect.isawaitable(result):
                import asyncio  # deferred: only an async check needs an event loop

                result = asyncio.run(_awaited(result))
            box["value"] = result
        except BaseException as exc:  # reported as the check's failure
            box["error"] = exc

    worker = threading.Thread(target=work, name="elizon-check", daemon=True)
    worker.start()
    worker.join(max(0.0, deadline - time.monotonic()))
    if worker.is_alive():
        return False, None, None
    return True, box.get("value"), box.get("error")


def _frame(exc: BaseException, function: CheckFunction) -> str:
    """The check's own frame (and the deepest one, if the error came from further in)."""
    frames = traceback.extract_tb(exc.__traceback__)
    code = getattr(function, "__code__", None)
    own = [f for f in frames if code is not None and f.filename == code.co_filename
           and f.name == code.co_name]
    shown = [f for f in (own[-1:] + frames[-1:]) if f is not None]
    parts = list(dict.fromkeys(f"{f.filename}:{f.lineno} in {f.name}: {(f.line or '').strip()}"
                               for f in shown))
    return " → ".join(parts)


def _one_line(text: str, limit: int = 500) -> str:
    joined = " ".join(part.strip() for part in text.splitlines() if part.strip())
    return joined if len(joined) <= limit else joined[:limit - 1] + "…"


def _judged(returned: object, threshold: float | None) -> tuple[bool, str, str]:
    """(passed, expected, found) from what a check returned."""
    reason = ""
    if isinstance(returned, tuple) and len(returned) == 2 and isinstance(returned[1], str):
        returned, reason = returned
    said = f" — {reason}" if reason else ""
    if isinstance(returned, bool):
        expected = "True" if threshold is None else f"True or a score of at least {threshold:g}"
        return returned, expected, f"returned {returned}{said}"
    if isinstance(returned, (int, float)):
        if threshold is None:
            return False, "True, or a score with a threshold", (
                f"returned the score {returned:g}, but no threshold is given: write "
                "{check: <name>, threshold: 0.8}")
        return (returned >= threshold, f"a score of at least {threshold:g}",
                f"score {returned:.2f}{said}")
    return False, "True" if threshold is None else f"a score of at least {threshold:g}", (
        f"returned {type(returned).__name__} {returned!r}"[:200]
        + "; a check returns True, False, (False, 'reason') or a score, or raises "
          "AssertionError")


def run_checks(expect: Expect | None, functions: Mapping[str, CheckFunction], case: Case,
               case_input: object, call: EntryCall, deadline: float) -> list[AssertionResult]:
    """One result per check of ``expect``, each named ``checks.<name>``, in order."""
    if expect is None or not expect.checks:
        return []
    offered: dict[str, object] = {"output": call.text, "value": call.value,
                                  "input": case_input, "answer": call, "case": case}
    results: list[AssertionResult] = []
    for item in expect.checks:
        spec = item if isinstance(item, CheckSpec) else CheckSpec(check=item, threshold=None)
        name = f"checks.{spec.check}"
        wanted = "True" if spec.threshold is None else f"a score of at least {spec.threshold:g}"
        if call.text is None:
            results.append(AssertionResult(name, None, wanted, "not checked: there is no output"))
            continue
        function = functions[spec.check]
        left = deadline - time.monotonic()
        if left <= 0:
            results.append(AssertionResult(name, False, wanted, "no time left within the "
                                           "case's time limit"))
            continue
        finished, returned, raised = _call_by(function, _arguments(function, offered), deadline)
        if not finished:
            results.append(AssertionResult(name, False, wanted, f"gave no result within the "
                                           f"{left:.1f} s left of the case's time limit"))
        elif isinstance(raised, AssertionError):
            message = _one_line(str(raised)) or "assert failed"
            results.append(AssertionResult(name, False, wanted,
                                           f"AssertionError: {message} (at "
                                           f"{_frame(raised, function)})"))
        elif raised is not None:
            results.append(AssertionResult(name, False, wanted, (
                f"the check raised {type(raised).__name__}: {_one_line(str(raised), 300)} (at "
                f"{_frame(raised, function)})")))
        else:
            passed, expected, found = _judged(returned, spec.threshold)
            results.append(AssertionResult(name, passed, expected, found))
    return results
