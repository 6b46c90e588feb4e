"""A case's plan, and its result once it ran — pure functions, no pytest here.

:func:`plan_case` turns a case, its suite, the session's settings and binder and the
fixture values into a :class:`~.running.CasePlan` (ElizonError when it cannot be made);
:func:`decided` turns a run and the checks plugins added (:class:`CaseChecks`) into the
case's result. :mod:`.collect` calls both from a case's setup and run.
"""

from __future__ import annotations

import json
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
from ..load.packages import (
    LoadedSuite,
    Package,
    SuiteSpec,
    Variant,
    checked_pins,
    run_variants,
)
from ..load.runtime import Case, CommandEntry, RepeatUntil, UrlEntry
from ..redteam import pack as redteam
from ..sequential import DEFAULT_INDIFFERENCE, Sprt
from ..text import without_userinfo
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
    last_entry: list[tuple[object, Settings, Binder, Entry, Variant | None]] = field(
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
            fixture_location: Callable[[str], str], variant: Variant | None = None
            ) -> list[Source]:
    """Where ``kind`` may come from for a case, in binding's order of precedence; a
    variant's own ``entry`` takes the manifest's place (docs/format.md#variants)."""
    package = context.package
    fixture_where = f"the {kind.fixture} fixture"
    if fixture_value is not None:
        fixture_where += f" ({fixture_location(kind.fixture)})"
    manifest_value, manifest_line = ((package.entry, package.entry_line) if kind is ENTRY
                                     else (package.judge, package.judge_line))
    where = context.manifest_display
    if kind is ENTRY and variant is not None and variant.entry is not None:
        manifest = Source(variant.entry, f"variant {variant.name}'s entry ({variant.where})")
    elif where is None:
        manifest = Source(manifest_value, f"{kind.key}: in a manifest (this suite has none)")
    else:
        manifest = Source(manifest_value, f"{kind.key}: in {where}:{manifest_line}"
                          if manifest_line else f"{kind.key}: in {where} (not set)")
    found = precedence(cli=settings.cli[kind.key],
                       fixture=Source(fixture_value, fixture_where), manifest=manifest,
                       ini=settings.ini[kind.key])
    if kind is ENTRY and variant is not None and (variant.model or variant.body):
        found = [variant_request(source, variant, package.output) for source in found]
    return found


def variants_of(package: Package, settings: Settings, display: Callable[[Path], str]
                ) -> tuple[Variant, ...]:
    """The variants ``package``'s cases run under this session, each prompt version they
    pin checked (docs/format.md#variants); ``display`` names a path in messages."""
    found = run_variants(package, settings.variants_selected, settings.variants_added)
    checked_pins(package, found, display)
    return found


def variant_key(variant: Variant) -> str:
    """Everything a variant changes in its cases' runs, as one text: part of their
    effective content, so ``--elizon-resume`` runs them again when it changed
    (docs/contract.md#resume)."""
    return json.dumps({"name": variant.name, "params": variant.params,
                       "prompts": variant.prompts, "entry": repr(variant.entry),
                       "model": variant.model, "body": variant.body}, sort_keys=True,
                      ensure_ascii=False, default=repr)


def variant_request(source: Source, variant: Variant, output: str) -> Source:
    """``source`` with a variant's ``model`` and ``body`` in its chat-completions request:
    they apply to an ``output: openai`` URL entry only (docs/format.md#variants)."""
    value = source.value
    if value is None:
        return source
    if not isinstance(value, UrlEntry) or (value.output or output) != "openai":
        # named by its kind: an entry's URL, headers or environment may hold secrets
        bound = ("an HTTP entry whose output is not openai" if isinstance(value, UrlEntry)
                 else "a command entry" if isinstance(value, CommandEntry)
                 else f"{without_userinfo(value)!r}" if isinstance(value, str)
                 else f"a Python callable ({getattr(value, '__qualname__', type(value).__name__)})"
                 if callable(value) else "a mapping")
        raise ElizonError(ENTRY.invalid, [
            f"variant {variant.name} ({variant.where}) gives model/body, which set the "
            f"request of an output: openai URL entry, but {source.where} binds {bound}; "
            "give the variant params instead (keyword arguments of a Python entry point)"])
    body = {**(value.body or {}), **(variant.body or {})}
    if variant.model is not None:
        body.pop("model", None)
    fields = {name: getattr(value, name) for name in value._FIELDS}
    fields.update(model=variant.model or value.model, body=body or None)
    return Source(UrlEntry(**fields), f"{source.where}, with variant {variant.name}'s request")


def uses_checks_fixture(case: Case) -> bool:
    """Whether ``case`` names a check from the ``elizon_checks`` fixture."""
    return checks.uses_fixture(case)


def recorded_input(case: Case, variant: Variant | None = None) -> object:
    """What a cassette checks has not changed: the input, or every turn's input, and what
    the case's variant changes (its params, prompts, entry: docs/format.md#variants)."""
    given = {"turns": case.inputs} if case.conversation else case.input
    return given if variant is None else {"input": given, "variant": variant_key(variant)}


def plan_case(case: Case, context: SuiteContext, settings: Settings, binder: Binder,
              values: Mapping[str, object], fixture_location: Callable[[str], str], *,
              judged: bool, judge_optional: bool = False, variant: Variant | None = None
              ) -> CasePlan:
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
                context.key, cassette_case(case.id, variant.name if variant else None),
                recorded_input(case, variant), runs, at_most=rule is not None)
        except CassetteMiss as exc:
            raise ElizonError(exc.code, [str(exc)]) from None
        if recorded_limit is not None:
            timeout_s, timeout_source = recorded_limit, "the limit it was recorded under"
    else:
        given = values[ENTRY.fixture]
        last = context.last_entry
        if last and last[0][0] is given and last[0][1] is settings and last[0][2] is binder \
                and last[0][4] is variant:
            entry = last[0][3]  # the suite's cases before it bound it from the same sources
        else:
            entry = binder.entry(sources(ENTRY, context, settings, given, fixture_location,
                                         variant), package.folder, package.output)
            if variant is not None:
                entry = binder.variant_entry(entry, variant)
            last[:] = [(given, settings, binder, entry, variant)]
        taken = getattr(entry, "params", None)
        if taken:  # a case never runs with a param in place of its input: it is an error
            for given_input in case.inputs if case.conversation else [case.input]:
                clash = sorted(str(k) for k in given_input if k in taken) \
                    if isinstance(given_input, Mapping) else []
                if clash:
                    raise ElizonError(ENTRY.invalid, [
                        f"{context.display}: case {case.id}: its input {clash[0]!r} is also "
                        f"a param of variant {variant.name if variant else ''} "
                        f"({variant.where if variant else ''}): both are keyword arguments "
                        "of the entry point, and neither may replace the other; rename one"])
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


def cassette_case(case_id: str, variant: str | None) -> str:
    """A case's name in the cassette: a variant's runs are its own recordings
    (docs/format.md#variants), named as its node id names it."""
    return case_id if variant is None else f"{case_id}[{variant}]"


def recording_of(identity: CaseIdentity, case: Case, plan: CasePlan, run: CaseRun,
                 secrets: Sequence[str] = (), variant: Variant | None = None
                 ) -> dict[str, Any]:
    """The case's cassette entry (``--elizon-record``), every declared secret in it a
    placeholder, so the cassette can be committed (docs/contract.md#record-and-replay)."""
    return cassette_secrets.scrub(recording(
        identity.suite.key, cassette_case(case.id, identity.variant),
        recorded_input(case, variant),
        [list(a.entry_calls) for a in run.attempts], plan.timeout_s,
        conversation=case.conversation), secrets)
