"""A case's result as typed frozen records, and their one JSON serialisation.

:class:`CaseResult` and its parts (runs, turns, tool calls, usage, security findings,
assertions, errors) are dataclasses; :func:`to_data` and :func:`from_data` turn any of
them into plain JSON data and back, driven by the fields and their type hints. So the
data that crosses xdist, fills results files and comes back from them as evidence has
one source: a new reported field is a record field plus its entry in
``results.schema.json``. A field's name is its JSON key. No pytest import here.

Rules of the serialisation: a field with ``compare=False`` (runtime steering, such as
:attr:`~.calls.ErrorInfo.retryable`) or ``metadata={DATA: False}`` is not data; one with
``metadata={OMIT_NONE: True}`` is left out while None (so results without it keep their
shape); reading, unknown keys are ignored and a missing key takes the field's default.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import re
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any, TypeVar

from ..run.assertions import AssertionResult
from ..run.calls import ErrorInfo, ToolCall, Usage
from ..text import named

__all__ = [
    "DATA",
    "ERROR",
    "FAILED",
    "INCONCLUSIVE",
    "OMIT_NONE",
    "OUTPUT_KEPT",
    "PASSED",
    "TIMEOUT",
    "WORKER_CRASH",
    "CaseIdentity",
    "CaseResult",
    "JudgeRecord",
    "LabelRecord",
    "LeakRecord",
    "ProbeRecord",
    "PromptRecord",
    "RagRecord",
    "RepeatRecord",
    "RunRecord",
    "SecurityRecord",
    "SnapshotRecord",
    "SuiteInfo",
    "ToolCallRecord",
    "ToolCountRecord",
    "TurnRecord",
    "case_of_file",
    "data_fields",
    "encodable",
    "file_case",
    "from_data",
    "records",
    "to_data",
]

PASSED, FAILED, TIMEOUT, ERROR = "passed", "failed", "timeout", "error"
#: A ``repeat: {until: decided}`` case still undecided at ``max`` (docs/contract.md#outcomes).
INCONCLUSIVE = "inconclusive"
#: Characters of output (and of a tool call's part) kept on a report; the length is kept too.
OUTPUT_KEPT = 64 * 1024
#: The error type of a case whose xdist worker died.
WORKER_CRASH = "WorkerCrash"
#: Field metadata keys (see the module's rules).
DATA, OMIT_NONE = "data", "omit_none"

_R = TypeVar("_R")

# -- the one serialisation ------------------------------------------------------------------

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _escape_surrogate(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def encodable(value: Any) -> Any:
    """A copy of ``value`` as plain JSON data with every lone surrogate in its strings
    written as a visible ``\\udXXX``: such a string cannot be encoded as UTF-8, so it could
    not cross to the xdist controller (the case would vanish from the run) nor be written to
    a report. What JSON cannot hold (YAML gives dates in an input) becomes its text, and so
    does a number that is not finite (a ``.nan`` in an input): no report holds ``NaN``,
    which is not JSON, and signing refuses."""
    try:  # the common case, at C speed: nothing to escape, so a JSON round trip copies it
        text = json.dumps(value, ensure_ascii=False, default=str, allow_nan=False)
        text.encode("utf-8")
    except (UnicodeEncodeError, TypeError, ValueError, RecursionError):
        try:
            return json.loads(json.dumps(_escaped(value), default=str))
        except RecursionError:  # nested past what any report can hold (inputs are capped)
            return "<nested too deeply to report>"
    return json.loads(text)


#: Bits of the largest int written as a number: Python writes at most 4,300 digits.
_INT_BITS_WRITTEN = 14_000


def _escaped(value: Any) -> Any:
    if isinstance(value, str):
        try:
            value.encode("utf-8")
            return value
        except UnicodeEncodeError:
            return _LONE_SURROGATE.sub(_escape_surrogate, value)
    if isinstance(value, dict):  # a key JSON cannot hold (a date, a tuple) becomes its text
        return {_escaped(k if isinstance(k, str) else str(k)): _escaped(v)
                for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_escaped(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return json.dumps(value)  # NaN, Infinity or -Infinity, as text
    if isinstance(value, int) and value.bit_length() > _INT_BITS_WRITTEN:
        return f"<an integer of {value.bit_length():,} bits>"  # past what JSON text holds
    return value


def _identity(value: Any) -> Any:
    return value


def _unwrapped(hint: Any) -> Any:
    """``X`` for ``X | None``; other hints as they are."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return hint


# The type hints are read once per record class and turned into one converter per field,
# so a case's data costs no more than the hand-written serialisers did.

@functools.cache
def _dumper(hint: Any) -> Callable[[Any], Any]:
    hint = _unwrapped(hint)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return _dump_record
    if typing.get_origin(hint) is tuple:
        item = _dumper(typing.get_args(hint)[0])
        return lambda value: [None if v is None else item(v) for v in value]
    if typing.get_origin(hint) is dict:
        return dict
    return _identity  # plain JSON values (and Any) as they are: encodable copies them


@functools.cache
def _loader(hint: Any) -> Callable[[Any], Any]:
    hint = _unwrapped(hint)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        record = hint
        return lambda value: from_data(record, value) if isinstance(value, Mapping) else value
    if typing.get_origin(hint) is tuple:
        item = _loader(typing.get_args(hint)[0])
        return lambda value: tuple(None if v is None else item(v) for v in value)
    if typing.get_origin(hint) is dict:
        return dict
    if hint is bool:
        return bool
    return _identity


_Plan = tuple[tuple[str, Callable[[Any], Any], Callable[[Any], Any], bool], ...]


@functools.cache
def _plan(cls: type) -> _Plan:
    """Each data field of record ``cls``: its name, how to dump and load its value, and
    whether it is left out while None."""
    hints = typing.get_type_hints(cls)
    return tuple((f.name, _dumper(hints[f.name]), _loader(hints[f.name]),
                  bool(f.metadata.get(OMIT_NONE)))
                 for f in fields(cls) if f.compare and f.metadata.get(DATA, True))


def data_fields(cls: type) -> tuple[str, ...]:
    """The names (JSON keys) of record ``cls``'s fields that are data."""
    return tuple(name for name, *_ in _plan(cls))


def _dump_record(value: Any) -> Any:
    if not dataclasses.is_dataclass(value) or isinstance(value, type):
        return value  # already plain data (a hand-made result may hold it)
    data: dict[str, Any] = {}
    for name, dump, _, omit_none in _plan(type(value)):
        part = getattr(value, name)
        if part is None:
            if not omit_none:
                data[name] = None
        else:
            data[name] = dump(part)
    return data


def to_data(record: Any) -> dict[str, Any]:
    """``record`` (any record of this module, or one it holds) as plain data; strings are
    not yet made encodable (:func:`encodable` does that once, for the whole)."""
    data: dict[str, Any] = _dump_record(record)
    return data


def from_data(cls: type[_R], data: Mapping[str, Any]) -> _R:
    """A ``cls`` record from plain data (unknown keys ignored, missing ones defaulted)."""
    given = {name: None if data[name] is None else load(data[name])
             for name, _, load, _ in _plan(typing.cast(type, cls)) if name in data}
    return cls(**given)


# -- the records ----------------------------------------------------------------------------

@dataclass(frozen=True)
class ToolCallRecord:
    """One tool call as reports keep it: an argument, result or error longer than
    :data:`OUTPUT_KEPT` characters (as JSON text) keeps its first ones as text, and
    ``<part>_length`` says how long it was — as an output does."""

    name: str
    arguments: Any = None
    result: Any = None
    error: Any = None
    arguments_length: int | None = field(default=None, metadata={OMIT_NONE: True})
    result_length: int | None = field(default=None, metadata={OMIT_NONE: True})
    error_length: int | None = field(default=None, metadata={OMIT_NONE: True})
    #: The id the model gave the call, when it gave one (docs/contract.md#sdk-answers).
    id: str | None = field(default=None, metadata={OMIT_NONE: True})

    @classmethod
    def of(cls, call: ToolCall, limit: int = OUTPUT_KEPT) -> ToolCallRecord:
        """``call`` as kept: each part at most ``limit`` characters (a case's budget,
        docs/contract.md#results-json), its name and id at most ``NAME_KEPT``."""
        parts: dict[str, Any] = {}
        for part in ("arguments", "result", "error"):
            value = getattr(call, part)
            parts[part] = value
            if value is None or isinstance(value, (bool, int, float)):
                continue
            try:
                text = value if isinstance(value, str) else json.dumps(
                    value, ensure_ascii=False, default=str)
            except (ValueError, RecursionError):  # not JSON data: kept as its length only
                parts[part], parts[f"{part}_length"] = "<not representable as JSON>", 0
                continue
            if len(text) > limit:
                parts[part], parts[f"{part}_length"] = text[:limit], len(text)
        return cls(named(call.name), **parts, id=None if call.id is None else named(call.id))

    @property
    def call(self) -> ToolCall:
        """The call as :func:`~.assertions.calls_text` shows it (the kept parts)."""
        return ToolCall(self.name, self.arguments, self.result, self.error)


@dataclass(frozen=True)
class ToolCountRecord:
    """How many calls of one tool an answer made, and how many of them carried an error:
    counted from every call, past those a case's budget keeps (docs/contract.md#agent-metrics).
    ``name`` is None for the tools past the first :data:`~.outcomes.TOOL_CALLS_KEPT`
    names, counted together."""

    name: str | None
    calls: int
    errors: int = 0


@dataclass(frozen=True)
class JudgeRecord:
    """One rubric's grade of one answer (docs/contract.md#judge-grades): which judge, its
    samples and their spread, what the grade cache gave, and why a failure was advisory."""

    #: The assertion line's name: ``judge`` or ``judge.NAME``.
    name: str
    #: The judge's identity (:func:`~..run.grade_cache.judge_identity`).
    judge: str
    threshold: float
    #: The mean of the sample scores; None when the judge gave no score.
    score: float | None = None
    scores: tuple[float, ...] = ()
    std_dev: float | None = None
    min: float | None = None
    max: float | None = None
    range: float | None = None
    tolerance: float = 0.1
    #: Whether the samples' range is within ``tolerance`` (None for fewer than 2 scores).
    consistent: bool | None = None
    #: Samples answered from the grade cache, and judge calls made.
    cached: int = 0
    calls: int = 0
    #: Why this rubric's failure is reported but not counted ("judge not aligned: …").
    advisory: str | None = None
    #: 1-based run (``repeat``) and turn (conversation) it was graded in, when there are several.
    run: int | None = None
    turn: int | None = None


@dataclass(frozen=True)
class RunRecord:
    """One run of a ``repeat`` case."""

    outcome: str
    latency_ms: float | None = None
    assertions: tuple[AssertionResult, ...] = ()
    output: str | None = None
    error: ErrorInfo | None = None
    judge_score: float | None = None


@dataclass(frozen=True)
class RepeatRecord:
    """A repeated case's pass rate with its Wilson interval, whether its runs disagree, how
    it was decided and how much its outputs varied (docs/contract.md#repeat-runs)."""

    runs: int
    passed: int
    pass_rate: float
    #: The Wilson score interval of the pass rate at ``confidence``.
    low: float
    high: float
    confidence: float
    min_pass_rate: float
    #: The interval holds ``min_pass_rate``: these runs cannot tell the rate from it.
    within_noise: bool
    #: Some runs passed and some did not.
    flaky: bool
    #: ``fixed`` (``repeat: n``) or ``sequential`` (``repeat: {until: decided}``).
    rule: str = "fixed"
    #: Distinct outputs over the runs (a run without output counts as one more).
    unique_outputs: int = 1
    #: Sequential only: ``max``, the method, the zone's half-width, ``above``, ``below`` or
    #: None (inconclusive), and the run at which it decided.
    max_runs: int | None = field(default=None, metadata={OMIT_NONE: True})
    method: str | None = field(default=None, metadata={OMIT_NONE: True})
    indifference: float | None = field(default=None, metadata={OMIT_NONE: True})
    decision: str | None = field(default=None, metadata={OMIT_NONE: True})
    decided_at: int | None = field(default=None, metadata={OMIT_NONE: True})
    #: ini ``elizon_inconclusive = pass`` applied to this case.
    inconclusive_passes: bool | None = field(default=None, metadata={OMIT_NONE: True})
    #: With ``expect.deterministic`` or ``expect.stable``: the text variance (mean over all
    #: pairs of runs of 1 − similarity) and the least similar pair's similarity.
    variance: float | None = field(default=None, metadata={OMIT_NONE: True})
    min_similarity: float | None = field(default=None, metadata={OMIT_NONE: True})


@dataclass(frozen=True)
class TurnRecord:
    """One turn of a conversation as it went: what was said, the answer and its checks."""

    turn: int
    input: Any = None
    outcome: str = PASSED
    output: str | None = None
    output_length: int = 0
    latency_ms: float | None = None
    assertions: tuple[AssertionResult, ...] = ()
    error: ErrorInfo | None = None
    tool_calls: tuple[ToolCallRecord, ...] = ()
    usage: Usage | None = None
    judge_score: float | None = None
    #: How many tools the turn's answer called, when more than ``tool_calls`` keeps
    #: (docs/contract.md#results-json); None (and not in the data) otherwise.
    tool_calls_total: int | None = field(default=None, metadata={OMIT_NONE: True})


@dataclass(frozen=True)
class LeakRecord:
    """What leaked, masked (first and last two characters, never the whole value)."""

    kind: str
    masked: str
    #: In a conversation: the 1-based turn whose answer first held it.
    turn: int | None = field(default=None, metadata={OMIT_NONE: True})


@dataclass(frozen=True)
class ProbeRecord:
    """Where a red-team probe came from, and how bad its getting through is."""

    category: str
    severity: str
    source: str
    manifest: str
    manifest_line: int


@dataclass(frozen=True)
class SecurityRecord:
    """A case's canary and secret checks (docs/contract.md#security)."""

    leaked: tuple[LeakRecord, ...] = ()
    probe: ProbeRecord | None = field(default=None, metadata={OMIT_NONE: True})


@dataclass(frozen=True)
class SnapshotRecord:
    """A case's snapshot check (docs/contract.md#snapshots): ``new``, ``match`` or
    ``changed``, in which file (and at which line its pin is), whether this run wrote it,
    why it changed and the unified diff of the pinned output against this run's."""

    status: str
    file: str
    line: int | None = None
    updated: bool = False
    note: str | None = field(default=None, metadata={OMIT_NONE: True})
    diff: str | None = field(default=None, metadata={OMIT_NONE: True})


@dataclass(frozen=True)
class LabelRecord:
    """A classified case's labels (docs/contract.md#classification): the one its
    ``expect.route`` or ``expect.label`` names, and the one its answer gave (None: none)."""

    expected: str
    predicted: str | None = None


@dataclass(frozen=True)
class RagRecord:
    """A case's RAG scores (docs/contract.md#rag), each None where not measured."""

    faithfulness: float | None = None
    answer_relevancy: float | None = None
    context_precision: float | None = None
    context_recall: float | None = None
    #: How many passages the answer came with, and how many ``relevant:`` names.
    contexts: int = 0
    relevant: int = 0


@dataclass(frozen=True)
class SuiteInfo:
    """What every case of a suite shares, carried with each case so reports need no files."""

    path: str
    package: str
    gate: str
    #: Effective: gate advisory and not overridden by ``--elizon-strict``.
    advisory: bool
    baseline: dict[str, float] = field(default_factory=dict)
    sha256: str = ""
    #: How cassettes name the suite (see :func:`~.cassette.suite_key`); not in report data.
    key: str = field(default="", metadata={DATA: False})
    #: The suite's cases: how many its file holds (selected or not) and their content hash
    #: (``sha256:…``, docs/format.md#dataset-hash); None where not known (the probe pack).
    case_count: int | None = field(default=None, metadata={OMIT_NONE: True})
    content_hash: str | None = field(default=None, metadata={OMIT_NONE: True})
    #: ``authorBaseline.datasetHash``: the content hash of the cases the author's baseline
    #: was measured on; None when the manifest does not say.
    baseline_dataset_hash: str | None = field(default=None, metadata={OMIT_NONE: True})
    #: The variants its cases ran under, in order, the reference first, and those that are
    #: advisory (docs/format.md#variants); None (and not in the data) without variants.
    variants: tuple[str, ...] | None = field(default=None, metadata={OMIT_NONE: True})
    advisory_variants: tuple[str, ...] | None = field(default=None,
                                                      metadata={OMIT_NONE: True})

    @property
    def item_count(self) -> int | None:
        """How many items its file's cases make: each case once per variant (None where
        the case count is not known)."""
        if self.case_count is None:
            return None
        return self.case_count * len(self.variants) if self.variants else self.case_count

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> SuiteInfo:
        return from_data(cls, data)


@dataclass(frozen=True)
class CaseIdentity:
    """Who a case is: joined to what happened when report data is built."""

    nodeid: str
    case_id: str
    #: 1-based line of the case's ``- id:`` in the suite file.
    line: int
    suite: SuiteInfo
    #: The package variant it runs under (docs/format.md#variants); None without variants.
    variant: str | None = None


@dataclass(frozen=True)
class PromptRecord:
    """A registry prompt the case rendered (docs/format.md#prompts): which, and exactly
    what text, so a results file says which prompt scored what."""

    name: str
    version: str
    #: SHA-256 of the version's template text (UTF-8), hex.
    sha256: str


@dataclass(frozen=True)
class CaseResult:
    """Everything known about one case of the run, as reports need it."""

    nodeid: str
    case_id: str
    line: int
    suite: SuiteInfo
    outcome: str
    assertions: tuple[AssertionResult, ...] = ()
    latency_ms: float | None = None
    output: str | None = None
    output_length: int = 0
    error: ErrorInfo | None = None
    timeout_s: float = 0.0
    timeout_source: str = ""
    entry: str = ""
    judge_score: float | None = None
    judge_reasoning: str | None = None
    #: Every run of a ``repeat`` case; empty for a single run.
    runs: tuple[RunRecord, ...] = ()
    passed_runs: int | None = None
    min_pass_rate: float | None = None
    #: Answered from a cassette: the latency is the recorded one.
    replayed: bool = False
    #: The case's ``input`` as plain JSON-like data (for reports that show it), or None.
    input: Any = None
    #: The tools the entry point called (every turn's, for a conversation).
    tool_calls: tuple[ToolCallRecord, ...] = ()
    #: Tokens and cost of the entry point's answer(s), when reported; the judge's apart.
    usage: Usage | None = None
    judge_usage: Usage | None = None
    #: A conversation's turns as they went, and the 1-based number of the turn that did
    #: not pass, if one did.
    turns: tuple[TurnRecord, ...] = ()
    failed_turn: int | None = None
    #: How many turns the conversation has (those that ran are in ``turns``); 0 for none.
    turn_count: int = 0
    #: The canary and secret checks; None where not checked (and then not in the data).
    security: SecurityRecord | None = field(default=None, metadata={OMIT_NONE: True})
    #: Calls made to the entry point (1 + its retries; every run's and turn's), retries
    #: after a refusal (the judge's included), seconds spent waiting between them, and
    #: whether a call was refused with a rate limit (docs/contract.md#retries).
    attempts: int = 1
    retries: int = 0
    waited_s: float = 0.0
    rate_limited: bool = False
    #: The ``expect.snapshot`` check; None where the case has none (and then not in the data).
    snapshot: SnapshotRecord | None = field(default=None, metadata={OMIT_NONE: True})
    #: Each rubric's grade of each run and turn (docs/contract.md#judge-grades).
    judges: tuple[JudgeRecord, ...] = ()
    #: The package judge's alignment with human labels, as the case's judge was measured
    #: (docs/contract.md#judge-alignment); None when not measured or no judge graded.
    alignment: dict[str, Any] | None = field(default=None, metadata={OMIT_NONE: True})
    #: A repeated case's pass rate, interval, flakiness and decision; None for a single run.
    repeat: RepeatRecord | None = field(default=None, metadata={OMIT_NONE: True})
    #: Task measures (docs/contract.md#task-metrics), each left out while None: the labels
    #: of a classified case, the RAG scores, the first tool ``expect.toolCalls.order`` names.
    label: LabelRecord | None = field(default=None, metadata={OMIT_NONE: True})
    rag: RagRecord | None = field(default=None, metadata={OMIT_NONE: True})
    first_tool: str | None = field(default=None, metadata={OMIT_NONE: True})
    #: The compliance controls the case declares (``controls:``; a probe's pack's too).
    controls: tuple[str, ...] = ()
    #: Taken from the history store's unfinished run by ``--elizon-resume``, not run again
    #: (docs/contract.md#resume); None (and not in the data) for a case that ran.
    resumed: bool | None = field(default=None, metadata={OMIT_NONE: True})
    #: Why the case's failure does not fail the run though its suite is must-pass: only
    #: its judge failed it, and that judge is not aligned ("judge not aligned: κ 0.41 <
    #: 0.60"; docs/contract.md#judge-alignment). None (and not in the data) otherwise.
    advisory: str | None = field(default=None, metadata={OMIT_NONE: True})
    #: How many tools the answer called, when more than ``tool_calls`` keeps (a case's
    #: budget, docs/contract.md#results-json); None (and not in the data) otherwise.
    tool_calls_total: int | None = field(default=None, metadata={OMIT_NONE: True})
    #: With ``tool_calls_total``: every call counted per tool (its calls and errors), as
    #: the agent metrics count them (docs/contract.md#agent-metrics); None (and not in the
    #: data) when ``tool_calls`` holds every call.
    tool_counts: tuple[ToolCountRecord, ...] | None = field(default=None,
                                                             metadata={OMIT_NONE: True})
    #: What a fixture's teardown raised after the case ran (pytest's ERROR at teardown):
    #: the outcome stays, but the run failed (docs/contract.md#reports); None otherwise.
    teardown_error: ErrorInfo | None = field(default=None, metadata={OMIT_NONE: True})
    #: The package variant it ran under (docs/format.md#variants); None (and not in the
    #: data) for a package without variants.
    variant: str | None = field(default=None, metadata={OMIT_NONE: True})
    #: The registry prompts it rendered, in order, each once (docs/format.md#prompts);
    #: None (and not in the data) when it rendered none.
    prompts: tuple[PromptRecord, ...] | None = field(default=None, metadata={OMIT_NONE: True})

    @property
    def crashed(self) -> bool:
        """The xdist worker running the case died (nothing the case did was seen)."""
        return self.error is not None and self.error.type == WORKER_CRASH

    @property
    def expected_error(self) -> bool:
        """The error, if any, is what an ``errorContains`` assertion looked for."""
        return any(a.name == "errorContains" for a in self.assertions)

    def to_data(self) -> dict[str, Any]:
        """Plain data; every string encodable (it crosses xdist and goes into files). Data
        that is plain already is copied sharing the record's own strings (see
        :func:`.plain_data.plain_copy`), else made plain by :func:`encodable`."""
        from .plain_data import plain_copy  # small, stdlib only; kept apart from the records

        raw = to_data(self)
        data: dict[str, Any] | None = plain_copy(raw)
        if data is None:
            data = encodable(raw)
        return data

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> CaseResult:
        return from_data(cls, data)


def file_case(result: CaseResult) -> dict[str, Any]:
    """A case as results files keep it: its one serialisation, with its id as ``id`` and
    without the suite (the file's suite entry holds it)."""
    data = result.to_data()
    del data["suite"]
    data["id"] = data.pop("case_id")
    return data


def case_of_file(suite: Mapping[str, Any], case: Mapping[str, Any]) -> dict[str, Any]:
    """A results file's case as report data again: the inverse of :func:`file_case`."""
    data = dict(case)
    data["case_id"] = data.pop("id")
    outcome = data.get("outcome")
    if isinstance(outcome, str) and outcome.startswith("advisory_"):
        # the file names it as reports do (wording.outcome_name); the record holds the
        # outcome, and the suite's gate or the case's ``advisory`` says why it is advisory
        data["outcome"] = outcome.removeprefix("advisory_")
    # a file written before a field was added lacks its key: the field's default
    data["suite"] = {name: suite[name] for name in data_fields(SuiteInfo) if name in suite}
    return data


def records() -> tuple[type, ...]:
    """Every record a case result is made of (for the schema's own test)."""
    return (CaseResult, SuiteInfo, RunRecord, TurnRecord, ToolCallRecord, SecurityRecord,
            LeakRecord, ProbeRecord, AssertionResult, ErrorInfo, Usage, JudgeRecord,
            RepeatRecord, LabelRecord, RagRecord, ToolCountRecord, PromptRecord)
