"""Checks written in Python (``expect.checks``): find them, and run them on an answer.

Owns what a check is (docs/contract.md#checks): a plain function, named in a suite
as ``module.path:function`` (imported like an entry point, from the package's
folder first) or by a name from the ``elizon_checks`` fixture's mapping. It asks
by parameter name for what it needs — ``output``, ``value``, ``input``,
``answer``, ``case`` — and passes by returning True, or None as a pytest test does
after its ``assert`` statements (None from a check with no ``assert`` is a forgotten
return: it fails); it fails by returning False or ``(False, "reason")``
or by raising ``AssertionError``; a float is a score held against the spec's
``threshold``, and must lie from 0 to 1. A check runs on
the deadline runner entry points use (:func:`~..bind.calling.run_blocking`), so a
hung one is abandoned at the case's deadline, which then makes the case a timeout.
Each check gets its own copy of ``value``, ``input`` and ``answer``, so one that
changes the answer changes nothing another check, a report or a cassette sees;
``case`` is copied once per run and shared by that run's checks (a copy per check
would copy a whole conversation at every turn). Whatever a check returns or
raises, however badly it prints, is read into a result and never escapes. Which
checks a suite names, with their lines, is read from the raw suite data
(:func:`check_refs`), so a ``module:function`` that cannot be imported is a
collection error at its line, unless its import exits (:class:`Unimportable`).
No pytest import here.
"""

from __future__ import annotations

import copy
import dis
import functools
import inspect
import threading
import time
import traceback
import types
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import errors
from ..errors import ElizonError
from ..load.documents import YamlMapping, YamlSequence
from ..load.runtime import Case, CheckSpec, Expect
from . import deadlines
from .assertions import AssertionResult
from .calls import EntryCall

__all__ = ["PARAMETERS", "CheckRef", "CheckResults", "Unimportable", "check_refs",
           "fixture_checks", "grade_checks", "names_checks", "refuse_unimportable",
           "resolve_specs", "signature_problem", "uses_fixture"]

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


@dataclass(frozen=True)
class Unimportable:
    """Stands in for a ``module:function`` check whose module's import ended the way a
    program ends (``sys.exit()``, another BaseException): each case that names it is an
    error at its setup (:func:`refuse_unimportable`), and the suite's other cases run."""

    problem: str

    def __call__(self, **_: object) -> object:
        raise RuntimeError(self.problem)  # never called: its cases stop at setup


def resolve_specs(refs: Sequence[CheckRef], folders: Sequence[Path], display: str
                  ) -> dict[str, CheckFunction]:
    """Import every ``module:function`` check of a suite; one ElizonError lists every one
    that cannot be used, at its line. A module whose import exits is kept as an
    :class:`Unimportable` instead (docs/contract.md#checks)."""
    from ..bind.binding import ImportExited, import_attribute  # deferred: binding loads every entry

    found: dict[str, CheckFunction] = {}
    problems: dict[str, str] = {}
    for ref in refs:
        if not is_spec(ref.name) or ref.name in found:
            continue
        if ref.name not in problems:
            try:
                function = import_attribute(ref.name, folders)
            except ImportExited as exc:
                found[ref.name] = Unimportable(str(exc))
                continue
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
    if not problems:
        return found
    # The suite is a collection error now: it names every check that cannot be used, those
    # whose import exited too, each at its line (docs/contract.md#checks).
    problems.update({n: f.problem for n, f in found.items() if isinstance(f, Unimportable)})
    lines = [f"{display}:{ref.line}: {ref.where}: check {ref.name!r} cannot be used: "
             f"{problems[ref.name]}" for ref in refs if ref.name in problems]
    raise ElizonError(errors.EVALUATION_SUITE_INVALID, lines)


def refuse_unimportable(case: Case, refs: Sequence[CheckRef],
                        functions: Mapping[str, CheckFunction], display: str) -> None:
    """ElizonError, at each line where ``case`` names it, for a check whose module's
    import exited (:class:`Unimportable`)."""
    broken = {n: f for n in _names(case) if isinstance(f := functions.get(n), Unimportable)}
    if not broken:
        return
    lines = [f"{display}:{ref.line}: {ref.where}: check {ref.name!r} cannot be used: "
             f"{broken[ref.name].problem}" for ref in refs
             if ref.case_id == case.id and ref.name in broken]
    raise ElizonError(errors.EVALUATION_SUITE_INVALID, lines or [
        f"{display}: case {case.id}: check {name!r} cannot be used: {f.problem}"
        for name, f in broken.items()])


def _names(case: Case) -> list[str]:
    expects = [case.expect, *(t.expect for t in case.turns or ())]
    return [c if isinstance(c, str) else c.check
            for e in expects if e is not None for c in e.checks or ()]


def names_checks(case: Case) -> bool:
    """Whether the case (or one of its turns) names any check."""
    if case.expect is not None and case.expect.checks:
        return True
    return any(t.expect is not None and t.expect.checks for t in case.turns or ())


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

#: How a check's argument is made for it, by parameter name (a fresh copy, where it can change).
_Makers = dict[str, Callable[[], object]]


class CaseCopy:
    """One copy of a case for the checks of one run, made when a check first asks for it.
    One per check would copy a whole conversation at each turn (docs/contract.md#checks)."""

    def __init__(self, case: Case) -> None:
        self._case = case
        self._copy: Case | None = None
        self._lock = threading.Lock()

    def get(self) -> Case:
        with self._lock:
            if self._copy is None:
                self._copy = copy.deepcopy(self._case)
            return self._copy


@dataclass(frozen=True)
class CheckResults:
    """The checks of one ``expect``: one result each, in order."""

    results: tuple[AssertionResult, ...]
    #: The case's time limit was reached in a check: the case is a timeout, as if the entry
    #: point had not answered (docs/contract.md#checks).
    out_of_time: bool = False


def _arguments(function: CheckFunction, offered: _Makers) -> _Makers:
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return {}
    if any(p.kind is p.VAR_KEYWORD for p in parameters):
        return dict(offered)
    return {p.name: offered[p.name] for p in parameters if p.name in offered}


async def _awaited(pending: Any) -> object:
    return await pending


def _type_name(value: object) -> str:
    try:
        return str.__str__(type(value).__name__)
    except BaseException:  # a metaclass may lie about its __name__ too
        return "object"


def _text_of(value: object, how: Callable[[object], object] = str) -> str:
    """``str`` (or ``repr``) of what a check gave, or ``<unprintable T>`` when that raises or
    is not text: a check's own printing must never stop its case being graded."""
    try:
        text = how(value)
        if isinstance(text, str):
            return str.__str__(text)  # a str subclass's own __str__ is not trusted either
    except BaseException:  # whatever printing raises, the check is still graded
        pass
    return f"<unprintable {_type_name(value)}>"


def _frame(exc: BaseException, function: CheckFunction) -> str:
    """The check's own frame (and the deepest one, if the error came from further in)."""
    try:
        frames = traceback.extract_tb(exc.__traceback__)
        code = getattr(function, "__code__", None)
        own = [f for f in frames if code is not None and f.filename == code.co_filename
               and f.name == code.co_name]
        shown = [f for f in (own[-1:] + frames[-1:]) if f is not None]
        parts = list(dict.fromkeys(f"{f.filename}:{f.lineno} in {f.name}: "
                                   f"{(f.line or '').strip()}" for f in shown))
    except Exception:  # a traceback that cannot be read: the error itself is still shown
        return "an unknown line"
    return " → ".join(parts)


def _one_line(text: str, limit: int = 500) -> str:
    joined = " ".join(part.strip() for part in text.splitlines() if part.strip())
    return joined if len(joined) <= limit else joined[:limit - 1] + "…"


def _number(score: float) -> str:
    try:
        return f"{float(score):g}"
    except OverflowError:  # an int beyond any float
        return "a whole number of more than 308 digits"


def _code_of(function: object) -> types.CodeType | None:
    """The code object a call of ``function`` runs, or None when there is none to read:
    through decorators' ``__wrapped__``, ``functools.partial``, bound methods and objects
    with a ``__call__`` (a builtin has no code)."""
    for _ in range(8):  # bounded: an object whose __call__ is an object again ends
        try:
            function = inspect.unwrap(function)  # type: ignore[arg-type]
        except ValueError:  # a __wrapped__ cycle
            return None
        code = getattr(function, "__code__", None)
        if isinstance(code, types.CodeType):
            return code
        if isinstance(function, functools.partial):
            function = function.func
        elif inspect.ismethod(function):
            function = function.__func__
        elif not inspect.isroutine(function) and callable(function):
            function = type(function).__call__  # the class's, as a call of it runs
        else:
            return None
    return None


def _asserts(function: object) -> bool:
    """Whether the check's own code has an ``assert`` (or raises AssertionError itself, as
    pytest's rewritten asserts do), so returning None means its asserts held."""
    try:
        code = _code_of(function)
    except Exception:  # a callable whose attributes raise: nothing to read
        return False
    if code is None:
        return False  # nothing to read: None stays a failure, as before asserting checks
    return any(i.opname == "LOAD_ASSERTION_ERROR"
               or (i.opname in ("LOAD_GLOBAL", "LOAD_NAME") and i.argval == "AssertionError")
               for i in dis.get_instructions(code))


def _judged(returned: object, threshold: float | None,
            function: object = None) -> tuple[bool, str, str]:
    """(passed, expected, found) from what ``function``, the check, returned."""
    if returned is None:
        # a check written as a pytest test: its asserts passed, as a test returning None
        # passes; one with no assert forgot its return, never a silent pass, and a check
        # that grades by score gave none (docs/contract.md#checks)
        if threshold is not None:
            return False, f"a score of at least {threshold:g}", (
                "returned None, but a threshold is given: return a score from 0 to 1")
        if _asserts(function):
            return True, "True", "returned None (no assert failed)"
        return False, "True", ("returned None without an assert (a forgotten return?): "
                               "return True/False, or assert")
    reason = ""
    if isinstance(returned, tuple) and len(returned) == 2 and isinstance(returned[1], str):
        pair: tuple[object, str] = returned
        returned, reason = pair[0], str.__str__(pair[1])
    said = f" — {reason}" if reason else ""
    if isinstance(returned, bool):
        expected = "True" if threshold is None else f"True or a score of at least {threshold:g}"
        return returned, expected, f"returned {returned}{said}"
    if isinstance(returned, (int, float)):
        # the plain number, whatever a subclass says of itself
        score = int.__int__(returned) if isinstance(returned, int) else float.__float__(returned)
        wanted = "True, or a score with a threshold" if threshold is None \
            else f"a score of at least {threshold:g}"
        if not 0 <= score <= 1:  # NaN fails this too: never "score inf" or a NaN pass
            return False, wanted, (f"returned the score {_number(score)}{said}; a score is a "
                                   "number from 0 to 1")
        if threshold is None:
            return False, wanted, (
                f"returned the score {score:g}, but no threshold is given: write "
                "{check: <name>, threshold: 0.8}")
        return score >= threshold, wanted, f"score {score:.2f}{said}"
    shown = f"returned {_type_name(returned)} {_text_of(returned, repr)}"[:200]
    return False, "True" if threshold is None else f"a score of at least {threshold:g}", (
        shown + "; a check returns True, False, (False, 'reason') or a score, or raises "
                "AssertionError")


def _raised(exc: BaseException, function: CheckFunction) -> str:
    if isinstance(exc, AssertionError):
        message = _one_line(_text_of(exc)) or "assert failed"
        return f"AssertionError: {message} (at {_frame(exc, function)})"
    return (f"the check raised {_type_name(exc)}: {_one_line(_text_of(exc), 300)} (at "
            f"{_frame(exc, function)})")


def _graded(function: CheckFunction, wanted: _Makers, threshold: float | None
            ) -> tuple[bool, str | None, str]:
    """(passed, expected or None for the usual, found): the check called on fresh copies of
    what it asks for, and what it did read into text. Never raises."""
    try:
        arguments = {name: make() for name, make in wanted.items()}
    except BaseException as exc:  # an answer no copy can be made of (it is the entry's)
        return False, None, (f"what the check asks for could not be copied for it: "
                             f"{_type_name(exc)}: {_one_line(_text_of(exc), 300)}")
    try:
        result = function(**arguments)
        if inspect.isawaitable(result):
            import asyncio  # deferred: only an async check needs an event loop

            result = asyncio.run(_awaited(result))
    except BaseException as exc:  # sys.exit() included: it is the check's failure
        return False, None, _raised(exc, function)
    try:
        return _judged(result, threshold, function)
    except BaseException as exc:  # a returned value that breaks even being compared
        return False, None, (f"returned {_type_name(result)}, which cannot be read: "
                             f"{_type_name(exc)}: {_one_line(_text_of(exc), 300)}")


def _call_by(function: CheckFunction, wanted: _Makers, threshold: float | None,
             deadline: float, name: str) -> tuple[bool, str | None, str] | None:
    """:func:`_graded` on the deadline runner entry points and judges use, so a hung check
    (or a hung ``__repr__`` of what it returned) is abandoned at the deadline, never waited
    for: None then. A check with too many calls still hung is not called again: it fails
    saying so (docs/contract.md#hung-calls)."""
    from ..bind.calling import run_blocking  # deferred: needed where a check runs

    refused = deadlines.hung.refusal(id(function), name)
    if refused is not None:
        return False, None, refused
    return run_blocking(lambda: _graded(function, wanted, threshold), deadline, id(function))


def grade_checks(expect: Expect | None, functions: Mapping[str, CheckFunction], case: Case,
                 case_input: object, call: EntryCall, deadline: float, *,
                 case_copy: CaseCopy | None = None) -> CheckResults:
    """One result per check of ``expect``, each named ``checks.<name>``, in order. Each check
    gets its own copy of ``value``, ``input`` and ``answer``; ``case`` is copied once per
    ``case_copy`` (a run). A check still running at the deadline ends the checks there."""
    if expect is None or not expect.checks:
        return CheckResults(())
    shown_case = case_copy or CaseCopy(case)
    # the output text is immutable; the rest is copied for each check, so what one check
    # changes no other check, report or cassette sees
    offered: _Makers = {"output": lambda: call.text, "value": lambda: copy.deepcopy(call.value),
                        "input": lambda: copy.deepcopy(case_input),
                        "answer": lambda: copy.deepcopy(call), "case": shown_case.get}
    results: list[AssertionResult] = []
    out_of_time = False
    for item in expect.checks:
        spec = item if isinstance(item, CheckSpec) else CheckSpec(check=item, threshold=None)
        name = f"checks.{spec.check}"
        wanted = "True" if spec.threshold is None else f"a score of at least {spec.threshold:g}"
        if call.text is None:
            results.append(AssertionResult(name, None, wanted, "not checked: there is no output"))
            continue
        if out_of_time:
            results.append(AssertionResult(name, None, wanted, "not checked: the case's time "
                                           "limit was reached"))
            continue
        function = functions[spec.check]
        left = deadline - time.monotonic()
        if deadlines.passed(deadline):
            out_of_time = True
            results.append(AssertionResult(name, False, wanted, "no time left within the "
                                           "case's time limit"))
            continue
        graded = _call_by(function, _arguments(function, offered), spec.threshold, deadline,
                          f"the check {spec.check}")
        if graded is None:
            out_of_time = True
            results.append(AssertionResult(name, False, wanted, f"gave no result within the "
                                           f"{left:.1f} s left of the case's time limit"))
            continue
        passed, expected, found = graded
        results.append(AssertionResult(name, passed, expected or wanted, found))
    return CheckResults(tuple(results), out_of_time)

