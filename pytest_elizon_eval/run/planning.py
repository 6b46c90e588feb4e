"""A case's plan, and its result once it ran — pure functions, no pytest here.

:func:`plan_case` turns a case, its suite, the session's settings and binder and the
fixture values into a :class:`~.running.CasePlan` (ElizonError when it cannot be made);
:func:`decided` turns a run and the checks plugins added (:class:`CaseChecks`) into the
case's result. :mod:`.collect` calls both from a case's setup and run.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..bind.binding import ENTRY, JUDGE, Binder, Kind, Source, precedence
from ..collect.options import Settings
from ..decide import outcomes
from ..decide.outcomes import CaseIdentity, CaseResult
from ..decide.results_data import JudgeRecord
from ..errors import EVALUATION_SUITE_INVALID, ElizonError
from ..history.resume import case_sha256 as case_sha256
from ..history.resume import stored_result as stored_result
from ..load.packages import LoadedSuite, Package, SuiteSpec
from ..load.runtime import Case, RepeatUntil
from ..redteam import pack as redteam
from ..sequential import DEFAULT_INDIFFERENCE, Sprt
from . import alignment, cassette_secrets, checks
from .assertions import AssertionResult
from .calls import ErrorInfo, Usage
from .cassette import CassetteMiss, recording
from .grade_cache import judge_identity
from .running import CasePlan, CaseRun

if TYPE_CHECKING:
    from ..bind.entries import Entry

__all__ = ["CHECKS_FIXTURE", "ENTRY_FIXTURE", "JUDGE_FIXTURE", "CaseChecks", "SuiteContext",
           "case_sha256", "check_labels", "decided", "effective", "plan_case", "recorded_input",
           "recording_of",
           "setup_failed", "sources", "stored_result", "suite_checks", "uses_checks_fixture"]

#: The fixtures that give a case its entry point and its judge.
ENTRY_FIXTURE, JUDGE_FIXTURE = ENTRY.fixture, JUDGE.fixture
#: The fixture that names Python checks (``expect.checks``) for a directory.
CHECKS_FIXTURE = "elizon_checks"


@dataclass(frozen=True)
class SuiteContext:
    """What the cases of one suite file share when they are planned."""

    package: Package
    spec: SuiteSpec
    #: The suite's path as reports show it, and its cassette key.
    display: str
    key: str
    #: The manifest as reports show it (None: the suite has no manifest).
    manifest_display: str | None = None
    #: The suite's ``module:function`` checks, imported at collection, and their references.
    check_functions: Mapping[str, checks.CheckFunction] = field(default_factory=dict)
    check_refs: tuple[checks.CheckRef, ...] = ()
    #: The entry point last bound for its cases, with the ``elizon_entry`` fixture value,
    #: settings and binder it was bound from: the next case with the very same ones takes
    #: it. One, not one per value: a function-scoped fixture's values are never kept.
    last_entry: list[tuple[object, Settings, Binder, Entry]] = field(
        default_factory=list, compare=False, repr=False)


@dataclass(frozen=True)
class CaseChecks:
    """What a ``pytest_elizon_case_checks`` implementation adds to a case that ran
    (docs/hooks.md)."""

    #: Whole-case checks, decided with the case's own.
    assertions: tuple[AssertionResult, ...] = ()
    #: The case's security record (``leaked``, a probe's ``probe``: docs/contract.md#security);
    #: the ``leaked`` of every implementation are reported together.
    security: dict[str, Any] | None = None
    #: Strings every report must show masked.
    redact: tuple[str, ...] = ()
    #: The case's snapshot record (docs/contract.md#snapshots), as plain data.
    snapshot: dict[str, Any] | None = None
    #: Task measures of the case (docs/contract.md#task-metrics), by the name of the
    #: :class:`~.results_data.CaseResult` field that keeps them (``label``, ``rag``,
    #: ``first_tool``); suite metrics are made of them.
    measures: dict[str, Any] | None = None
    #: Grades the implementation asked the bound judge for (``expect.rag``'s), and what
    #: they cost: added to the case's own, so the run's judge calls and usage count them.
    judges: tuple[JudgeRecord, ...] = ()
    judge_usage: Usage | None = None


def sources(kind: Kind, context: SuiteContext, settings: Settings, fixture_value: object,
            fixture_location: Callable[[str], str]) -> list[Source]:
    """Where ``kind`` may come from for a case, in binding's order of precedence."""
    package = context.package
    fixture_where = f"the {kind.fixture} fixture"
    if fixture_value is not None:
        fixture_where += f" ({fixture_location(kind.fixture)})"
    manifest_value, manifest_line = ((package.entry, package.entry_line) if kind is ENTRY
                                     else (package.judge, package.judge_line))
    where = context.manifest_display
    if where is None:
        manifest_where = f"{kind.key}: in a manifest (this suite has none)"
    else:
        manifest_where = (f"{kind.key}: in {where}:{manifest_line}" if manifest_line
                          else f"{kind.key}: in {where} (not set)")
    return precedence(cli=settings.cli[kind.key], fixture=Source(fixture_value, fixture_where),
                      manifest=Source(manifest_value, manifest_where),
                      ini=settings.ini[kind.key])


def uses_checks_fixture(case: Case) -> bool:
    """Whether ``case`` names a check from the ``elizon_checks`` fixture."""
    return checks.uses_fixture(case)


def recorded_input(case: Case) -> object:
    """What a cassette checks has not changed: the input, or every turn's input."""
    return {"turns": case.inputs} if case.conversation else case.input


def plan_case(case: Case, context: SuiteContext, settings: Settings, binder: Binder,
              values: Mapping[str, object], fixture_location: Callable[[str], str], *,
              judged: bool, judge_optional: bool = False) -> CasePlan:
    """The plan of ``case`` from the fixture values (by fixture name; ``fixture_location``
    says where a fixture is defined, for messages); ElizonError when it cannot be made.
    With ``judge_optional`` a judge that is not bound is none: its rubrics go ungraded."""
    package, spec = context.package, context.spec
    timeout_s, timeout_source = settings.timeout_s, settings.timeout_source
    repeat = case.repeat if case.repeat is not None else spec.repeat
    rate = case.min_pass_rate if case.min_pass_rate is not None \
        else spec.min_pass_rate if spec.min_pass_rate is not None else 1.0
    rule, runs = repeat_rule(repeat, rate, settings.confidence)
    if case.expect is not None and case.expect.across_runs and runs < 2:
        raise ElizonError(EVALUATION_SUITE_INVALID, [
            f"{context.display}: case {case.id}: "
            "expect.deterministic and expect.stable compare the runs of a repeated case; "
            "give it (or its suite) repeat: 2 or more, or repeat: {max: N, until: decided}"])
    entry = replay = None
    if settings.replay is not None:  # answered from the cassette: no entry point is called
        try:
            replay, recorded_limit = settings.replay.answers(
                context.key, case.id, recorded_input(case), runs, at_most=rule is not None)
        except CassetteMiss as exc:
            raise ElizonError(exc.code, [str(exc)]) from None
        if recorded_limit is not None:
            timeout_s, timeout_source = recorded_limit, "the limit it was recorded under"
    else:
        given = values[ENTRY.fixture]
        last = context.last_entry
        if last and last[0][0] is given and last[0][1] is settings and last[0][2] is binder:
            entry = last[0][3]  # the suite's cases before it bound it from the same sources
        else:
            entry = binder.entry(sources(ENTRY, context, settings, given, fixture_location),
                                 package.folder, package.output)
            last[:] = [(given, settings, binder, entry)]
    judge = None
    if judged:
        try:
            judge = binder.judge(sources(JUDGE, context, settings, values[JUDGE.fixture],
                                         fixture_location), package.folder)
        except ElizonError as exc:
            if not judge_optional or exc.code != JUDGE.unbound:
                raise
    functions: Mapping[str, checks.CheckFunction] = context.check_functions
    if checks.names_checks(case):  # most cases name none: nothing to look up
        checks.refuse_unimportable(case, context.check_refs, functions, context.display)
        if checks.uses_fixture(case):
            functions = {**functions, **checks.fixture_checks(
                case, context.check_refs, values.get(CHECKS_FIXTURE),
                f"the {CHECKS_FIXTURE} fixture ({fixture_location(CHECKS_FIXTURE)})",
                context.display)}
    record = advisory = None
    if judge is not None:
        record = alignment.measured_or_kept(
            judge, package, settings.alignment_folder, align=settings.align,
            cache=settings.grade_cache, timeout_s=settings.timeout_s)
        if spec.gate != "advisory" or settings.strict:  # only a must-pass suite is gated
            advisory = alignment.advisory_reason(record, package.alignment,
                                                 settings.require_alignment)
    return CasePlan(
        grade_cache=settings.grade_cache, judge_advisory=advisory, alignment=record,
        case=case, entry=entry, judge=judge,
        entry_description=entry.description if entry else "cassette",
        timeout_s=timeout_s, timeout_source=timeout_source, route_key=settings.route_key,
        repeat=runs, min_pass_rate=rate, replay=replay,
        prices={**settings.prices, **package.prices}, checks=functions,
        sequential=rule, run_width=settings.concurrency, confidence=settings.confidence,
        inconclusive_passes=settings.inconclusive_passes)


def effective(plan: CasePlan) -> dict[str, Any]:
    """What the plan adds to the case as its suite file says it — the suite's defaults and
    the session's settings as resolved for this case — that can change its result: part
    of the case's effective content, which ``--elizon-resume`` compares
    (docs/contract.md#resume). The entry point is compared apart, by its identity."""
    rule = plan.sequential
    # tuples, written as JSON arrays: the whole is hashable, so its text is made once
    # for all the cases that share it (history/resume.py)
    return {
        "repeat": plan.repeat, "min_pass_rate": plan.min_pass_rate,
        "until_decided": None if rule is None else (rule.min_pass_rate, rule.indifference,
                                                     rule.confidence),
        "timeout_s": plan.timeout_s, "confidence": plan.confidence,
        "inconclusive_passes": plan.inconclusive_passes, "route_key": plan.route_key,
        "judge": None if plan.judge is None else judge_identity(plan.judge),
        "judge_advisory": plan.judge_advisory,
        "prices": tuple(sorted(plan.prices.items())), "checks": tuple(sorted(plan.checks)),
    }


def repeat_rule(repeat: int | RepeatUntil | None, min_pass_rate: float, confidence: float
                ) -> tuple[Sprt | None, int]:
    """The stopping rule (None for a fixed count) and the most runs, from ``repeat:``."""
    if isinstance(repeat, RepeatUntil):
        return Sprt(min_pass_rate, repeat.indifference or DEFAULT_INDIFFERENCE,
                    confidence), repeat.max
    return None, repeat or 1


def suite_checks(refs: tuple[checks.CheckRef, ...], folders: Sequence[Path], display: str
                 ) -> dict[str, checks.CheckFunction]:
    """A suite's ``module:function`` checks, imported once at collection."""
    return checks.resolve_specs(refs, folders, display) if refs else {}


def check_labels(package: Package, loaded: LoadedSuite) -> None:
    """A labels row of the package's ``alignment:`` that no rubric fits is the judged
    suite's collection error, at the row's line (docs/format.md#judge-alignment), before
    any case runs."""
    if package.alignment is not None and any(
            e is not None and e.rubrics for c in loaded.cases
            for e in (c.expect, *(t.expect for t in c.turns or ()))):
        alignment.resolve_rubrics(package, package.alignment)


def decided(identity: CaseIdentity, plan: CasePlan, run: CaseRun,
            added: Sequence[CaseChecks]) -> CaseResult:
    """The result of a case that ran, with the checks plugins added, every string they name
    masked."""
    also = tuple(a for found in added for a in found.assertions)
    security: dict[str, Any] | None = None
    for found in added:
        if found.security is not None:  # one record: the leaks of every plugin, together
            leaked = [*(security or {}).get("leaked", ()), *found.security.get("leaked", ())]
            security = {**(security or {}), **found.security, "leaked": leaked}
    snapshot = next((found.snapshot for found in added if found.snapshot is not None), None)
    result = outcomes.decide(identity, plan, run, also=also, security=security,
                             snapshot=snapshot)
    measured = {k: v for found in added for k, v in (found.measures or {}).items()}
    if measured:
        result = replace(result, **measured)
    graded = tuple(j for found in added for j in found.judges)
    if graded:
        spent = [u for u in (result.judge_usage, *(f.judge_usage for f in added)) if u]
        result = replace(result, judges=(*result.judges, *graded),
                         judge_usage=sum(spent[1:], spent[0]) if spent else None)
    return redteam.redact(result, [v for found in added for v in found.redact])


def setup_failed(identity: CaseIdentity, settings: Settings, exc: BaseException
                 ) -> CaseResult:
    """The result of a case whose setup raised ``exc``: an ElizonError as its code and
    message, anything else as its type and description."""
    error = (ErrorInfo(exc.code, "\n".join(exc.messages)) if isinstance(exc, ElizonError)
             else ErrorInfo(type(exc).__name__, outcomes.described(exc)))
    return outcomes.setup_error(identity, (settings.timeout_s, settings.timeout_source), error)


def recording_of(identity: CaseIdentity, case: Case, plan: CasePlan, run: CaseRun,
                 secrets: Sequence[str] = ()) -> dict[str, Any]:
    """The case's cassette entry (``--elizon-record``), every declared secret in it a
    placeholder, so the cassette can be committed (docs/contract.md#record-and-replay)."""
    return cassette_secrets.scrub(recording(
        identity.suite.key, case.id, recorded_input(case),
        [list(a.entry_calls) for a in run.attempts], plan.timeout_s,
        conversation=case.conversation), secrets)
