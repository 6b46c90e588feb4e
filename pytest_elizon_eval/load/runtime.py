"""What a run reads of a validated manifest or suite: plain classes, no pydantic.

:mod:`.model` stays the validator of record (its pydantic models say what a
valid file is, and every error message); :func:`from_model` turns what it
validated into these classes, with the same names and attributes, and the
properties a run asks (the models keep only what their validators use). The
rest of the plugin (collection, binding, running, deciding, reporting) reads
only these, so a session whose files come from the suite
cache (:mod:`.suite_cache`) never imports pydantic or builds its models.
Frozen slotted records: small, immutable like the models they mirror, and
picklable for the cache. No pytest or pydantic import here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeVar

from .limits import MAX_LABEL, MAX_PRICE

if TYPE_CHECKING:
    from typing_extensions import dataclass_transform
else:  # the decorator only tells type checkers how these classes are built
    def dataclass_transform(**_: Any) -> Callable[[Any], Any]:
        return lambda cls: cls

__all__ = [
    "MAX_LABEL",
    "MAX_PRICE",
    "AlignmentSpec",
    "AuthorBaseline",
    "Case",
    "CheckSpec",
    "CommandEntry",
    "EntrySpec",
    "Evaluation",
    "Expect",
    "JudgeEndpoint",
    "JudgeExpect",
    "Manifest",
    "Price",
    "RagExpect",
    "RepeatUntil",
    "StableExpect",
    "Suite",
    "SuiteRef",
    "ToolCallPattern",
    "ToolCallsExpect",
    "Turn",
    "UrlEntry",
    "VariantSpec",
    "from_model",
]

OutputMode = Literal["text", "json", "openai", "answer"]
Gate = Literal["advisory", "must-pass"]

_PlainT = TypeVar("_PlainT", bound="_Plain")


@dataclass_transform(frozen_default=True)
class _Fields(type):
    """Makes each class a frozen, slotted record of its annotated fields, as
    ``@dataclass(frozen=True, slots=True)`` would, without generating and compiling code
    for every class (that is most of what importing a module of dataclasses costs, and
    this module is imported by every run)."""

    def __new__(mcs, name: str, bases: tuple[type, ...], namespace: dict[str, Any]
                ) -> _Fields:
        notes = namespace.get("__annotations__", {})
        names = tuple(n for n, note in notes.items() if not str(note).startswith("ClassVar"))
        defaults = {n: namespace.pop(n) for n in names if n in namespace}
        namespace["__slots__"] = names
        cls = super().__new__(mcs, name, bases, namespace)
        cls._FIELDS = names  # type: ignore[attr-defined]
        cls._DEFAULTS = defaults  # type: ignore[attr-defined]
        return cls


def _rebuild(cls: type[_PlainT], values: tuple[Any, ...]) -> _PlainT:
    """An instance from its field values, as pickle rebuilds one (no checks: ours)."""
    value = object.__new__(cls)
    for name, item in zip(cls._FIELDS, values, strict=True):
        object.__setattr__(value, name, item)
    return value


class _Plain(metaclass=_Fields):
    """What every runtime class shares: construction from its fields, equality, hashing,
    its repr and pickling like a frozen dataclass; the model's aliases, ``model_validate``
    and ``model_dump``."""

    #: The field names in order, and the defaults of those that have one.
    _FIELDS: ClassVar[tuple[str, ...]] = ()
    _DEFAULTS: ClassVar[dict[str, Any]] = {}
    #: field name → the key a file writes it as, where they differ.
    ALIASES: ClassVar[dict[str, str]] = {}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        names, defaults = self._FIELDS, self._DEFAULTS
        if len(args) > len(names):
            raise TypeError(f"{type(self).__name__}() takes {len(names)} arguments")
        given = dict(zip(names, args, strict=False))
        for name, value in kwargs.items():
            if name not in names or name in given:
                raise TypeError(f"{type(self).__name__}() got an unexpected or repeated "
                                f"argument {name!r}")
            given[name] = value
        for name in names:
            if name in given:
                object.__setattr__(self, name, given[name])
            elif name in defaults:
                object.__setattr__(self, name, defaults[name])
            else:
                raise TypeError(f"{type(self).__name__}() missing argument {name!r}")

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self._FIELDS)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"cannot assign to field {name!r}: {type(self).__name__} is "
                             "frozen")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}: {type(self).__name__} is frozen")

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        shown = ", ".join(f"{n}={getattr(self, n)!r}" for n in self._FIELDS)
        return f"{type(self).__name__}({shown})"

    def __reduce__(self) -> tuple[Any, ...]:
        return _rebuild, (type(self), self._values())

    @classmethod
    def model_validate(cls: type[_PlainT], data: Any) -> _PlainT:
        """``data`` validated by the model of the same name (pydantic's ValidationError if it
        is not valid), as this class."""
        from . import model  # deferred: pydantic, only where data is validated at run time

        value: _PlainT = from_model(getattr(model, cls.__name__).model_validate(data))
        return value

    def model_dump(self, *, by_alias: bool = True, exclude_none: bool = True,
                   exclude_defaults: bool = False, warnings: bool = False) -> dict[str, Any]:
        """The fields as pydantic's ``model_dump(by_alias=True, exclude_none=True)`` gives
        them, except that an ``output: null`` that was written is kept: it is an assertion
        (resume and the dataset hash read a case by it, so warm and cold runs must agree,
        and a case that gained ``output: null`` is not the case it was). With
        ``exclude_defaults``, a field whose value is its default is left out too: the case
        as written, whatever defaults this version of the plugin fills in."""
        del warnings  # pydantic's argument, accepted so callers need not know which it is
        out: dict[str, Any] = {}
        defaults = self._DEFAULTS
        for name in self._FIELDS:
            if name == "output_given":
                continue
            value = getattr(self, name)
            asserted = name == "output" and getattr(self, "output_given", False)
            if value is None and exclude_none and not asserted:
                continue
            if exclude_defaults and not asserted and name in defaults \
                    and _same_value(value, defaults[name]):
                continue
            key = self.ALIASES.get(name, name) if by_alias else name
            out[key] = _dump(value, by_alias, exclude_none, exclude_defaults)
        return out


def _same_value(value: Any, default: Any) -> bool:
    """``value`` is ``default`` as data: of one type and equal (``True`` is not ``1``)."""
    return type(value) is type(default) and bool(value == default)


def _dump(value: Any, by_alias: bool, exclude_none: bool, exclude_defaults: bool = False
          ) -> Any:
    if isinstance(value, _Plain):
        return value.model_dump(by_alias=by_alias, exclude_none=exclude_none,
                                exclude_defaults=exclude_defaults)
    if type(value) is list:
        return [_dump(v, by_alias, exclude_none, exclude_defaults) for v in value]
    if type(value) is tuple:
        return tuple(_dump(v, by_alias, exclude_none, exclude_defaults) for v in value)
    if type(value) is dict:
        return {k: _dump(v, by_alias, exclude_none, exclude_defaults) for k, v in value.items()}
    return value


class JudgeExpect(_Plain):
    """``judge:`` in ``expect`` (docs/format.md#judge)."""

    rubric: str
    threshold: float
    name: str | None = None
    samples: int = 1
    tolerance: float = 0.1

    @property
    def assertion(self) -> str:
        """The name of its assertion line: ``judge``, or ``judge.NAME`` when named."""
        return "judge" if self.name is None else f"judge.{self.name}"


class AlignmentSpec(_Plain):
    """``alignment:`` in ``elizon.yaml``."""

    ALIASES: ClassVar[dict[str, str]] = {"min_kappa": "minKappa"}
    labels: str
    min_kappa: float | None = None
    threshold: float = 0.5
    rubric: str | None = None


class ToolCallPattern(_Plain):
    """One ``calledWith`` entry."""

    name: str
    arguments: dict[str, Any] | None = None


class ToolCallsExpect(_Plain):
    """``toolCalls:`` in ``expect``."""

    ALIASES: ClassVar[dict[str, str]] = {
        "not_called": "notCalled", "called_with": "calledWith",
        "all_succeeded": "allSucceeded", "max_calls": "maxCalls"}
    called: list[str] | None = None
    not_called: list[str] | None = None
    called_with: list[ToolCallPattern] | None = None
    order: list[str] | None = None
    all_succeeded: bool | None = None
    max_calls: int | None = None


class CheckSpec(_Plain):
    """``{check: name, threshold: 0.8}`` in ``expect.checks``."""

    check: str
    threshold: float | None = None


class RepeatUntil(_Plain):
    """``repeat: {max: N, until: decided}``."""

    max: int
    until: Literal["decided"]
    indifference: float | None = None


class StableExpect(_Plain):
    """``stable:`` in a case's ``expect``."""

    ALIASES: ClassVar[dict[str, str]] = {"max_unique_outputs": "maxUniqueOutputs",
                                         "min_similarity": "minSimilarity"}
    max_unique_outputs: int | None = None
    min_similarity: float | None = None


class RagExpect(_Plain):
    """``rag:`` in ``expect``."""

    ALIASES: ClassVar[dict[str, str]] = {
        "answer_relevancy": "answerRelevancy", "context_precision": "contextPrecision",
        "context_recall": "contextRecall"}
    faithfulness: float | None = None
    answer_relevancy: float | None = None
    context_precision: float | None = None
    context_recall: float | None = None
    relevant: list[str] | None = None

    @property
    def judged(self) -> bool:
        return self.faithfulness is not None or self.answer_relevancy is not None


class Expect(_Plain):
    """The assertions of one case (or of one turn of a conversation)."""

    ALIASES: ClassVar[dict[str, str]] = {
        "not_contains": "notContains", "max_latency_ms": "maxLatencyMs",
        "error_contains": "errorContains", "json_schema": "jsonSchema",
        "tool_calls": "toolCalls", "max_tokens": "maxTokens", "max_cost_usd": "maxCostUsd",
        "contains_any": "containsAny", "contains_exact": "containsExact",
        "starts_with": "startsWith", "is_json": "isJson"}
    contains: list[str] | None = None
    not_contains: list[str] | None = None
    equals: str | None = None
    max_latency_ms: int | None = None
    matches: list[str] | None = None
    route: str | None = None
    output: Any = None
    error_contains: list[str] | None = None
    json_schema: dict[str, Any] | None = None
    judge: JudgeExpect | list[JudgeExpect] | None = None
    tool_calls: ToolCallsExpect | None = None
    max_tokens: int | None = None
    max_cost_usd: float | None = None
    contains_any: list[str] | None = None
    contains_exact: list[str] | None = None
    starts_with: str | None = None
    is_json: bool | None = None
    path: str | None = None
    checks: list[str | CheckSpec] | None = None
    snapshot: bool | None = None
    deterministic: bool | None = None
    stable: StableExpect | None = None
    label: str | None = None
    rag: RagExpect | None = None
    #: Whether ``output:`` was written (it may be null): the model's ``model_fields_set``.
    output_given: bool = False

    @property
    def across_runs(self) -> bool:
        """Whether it checks the runs of a repeated case together (deterministic, stable)."""
        return bool(self.deterministic) or self.stable is not None

    @property
    def checks_output(self) -> bool:
        """Whether ``output:`` was given (it may be null)."""
        return self.output_given

    @property
    def rubrics(self) -> tuple[JudgeExpect, ...]:
        """``judge:`` as a list: the one mapping, or each rubric of the list."""
        if self.judge is None:
            return ()
        return tuple(self.judge) if isinstance(self.judge, list) else (self.judge,)


class Turn(_Plain):
    """One turn of a conversation."""

    ALIASES: ClassVar[dict[str, str]] = {"tool_results": "toolResults"}
    input: Any
    expect: Expect | None = None
    tool_results: dict[str, Any] | None = None


class Case(_Plain):
    """One test case of a suite file: an ``input``, or a conversation of ``turns``."""

    ALIASES: ClassVar[dict[str, str]] = {"min_pass_rate": "minPassRate"}
    id: str
    description: str | None = None
    input: Any = None
    turns: list[Turn] | None = None
    expect: Expect | None = None
    tags: list[str] | None = None
    repeat: int | RepeatUntil | None = None
    min_pass_rate: float | None = None
    controls: list[str] | None = None

    @property
    def conversation(self) -> bool:
        return self.turns is not None

    @property
    def inputs(self) -> list[Any]:
        """What the entry point is given, turn by turn (one item for a single call)."""
        return [t.input for t in self.turns] if self.turns is not None else [self.input]

    @property
    def judged(self) -> bool:
        expects = [self.expect, *(t.expect for t in self.turns or ())]
        return any(e is not None and e.judge is not None for e in expects) or bool(
            self.expect and self.expect.rag and self.expect.rag.judged)


class Suite(_Plain):
    """A suite file."""

    cases: list[Case]


class AuthorBaseline(_Plain):
    """``authorBaseline:``: the author's own results by metric name, and the content hash of
    the cases they were measured on (``datasetHash``, docs/format.md#dataset-hash)."""

    ALIASES: ClassVar[dict[str, str]] = {"dataset_hash": "datasetHash"}
    #: Metric name to the author's number, in the file's order (the model's extra keys).
    metrics: dict[str, float]
    dataset_hash: str | None = None

    def model_dump(self, *, by_alias: bool = True, exclude_none: bool = True,
                   exclude_defaults: bool = False, warnings: bool = False) -> dict[str, Any]:
        """The mapping as the file writes it: the metrics, and ``datasetHash`` if given."""
        del warnings, exclude_defaults  # pydantic's arguments: nothing here has a default
        out: dict[str, Any] = dict(self.metrics)
        if self.dataset_hash is not None or not exclude_none:
            out["datasetHash" if by_alias else "dataset_hash"] = self.dataset_hash
        return out


class SuiteRef(_Plain):
    """One test set named by a manifest: a suite file, or the probe pack."""

    ALIASES: ClassVar[dict[str, str]] = {"input_name": "inputName",
                                         "author_baseline": "authorBaseline",
                                         "min_pass_rate": "minPassRate"}
    suite: str | None = None
    probes: tuple[str, ...] | None = None
    input_name: str | None = None
    author_baseline: AuthorBaseline | None = None
    gate: Gate = "must-pass"
    repeat: int | RepeatUntil | None = None
    min_pass_rate: float | None = None


class Evaluation(_Plain):
    """A manifest's ``evaluation`` block: one suite, or a ``suites:`` list."""

    ALIASES: ClassVar[dict[str, str]] = {"author_baseline": "authorBaseline",
                                         "min_pass_rate": "minPassRate"}
    suite: str | None = None
    author_baseline: AuthorBaseline | None = None
    gate: Gate | None = None
    repeat: int | RepeatUntil | None = None
    min_pass_rate: float | None = None
    suites: list[SuiteRef] | None = None

    def refs(self) -> list[SuiteRef]:
        """The test sets, whichever form the manifest used."""
        if self.suites is not None:
            return list(self.suites)
        assert self.suite is not None  # guaranteed by manifest_shape
        return [SuiteRef(suite=self.suite, author_baseline=self.author_baseline,
                         gate=self.gate or "must-pass", repeat=self.repeat,
                         min_pass_rate=self.min_pass_rate, input_name=None)]


class CommandEntry(_Plain):
    """``entry: {command: [argv…], cwd?, env?}``."""

    command: list[str]
    cwd: str | None = None
    env: dict[str, str] | None = None
    output: OutputMode | None = None


class UrlEntry(_Plain):
    """``entry: {url, method?, headers?, timeout?}``."""

    url: str
    method: Literal["POST", "PUT", "PATCH"] = "POST"
    headers: dict[str, str] | None = None
    timeout: float | None = None
    output: OutputMode | None = None
    model: str | None = None
    system: str | None = None
    tools: list[Any] | str | None = None
    body: dict[str, Any] | None = None


EntrySpec = str | CommandEntry | UrlEntry


class JudgeEndpoint(_Plain):
    """An OpenAI-compatible chat-completions endpoint that grades answers."""

    ALIASES: ClassVar[dict[str, str]] = {"api_key_env": "apiKeyEnv"}
    url: str
    model: str
    api_key_env: str | None = None


class Price(_Plain):
    """What a model costs, in US dollars per 1M input and output tokens, and per 1M prompt
    cache reads and writes when given."""

    ALIASES: ClassVar[dict[str, str]] = {"cache_read": "cacheRead", "cache_write": "cacheWrite"}
    input: float
    output: float
    cache_read: float | None = None
    cache_write: float | None = None


class VariantSpec(_Plain):
    """One of ``variants:`` (docs/format.md#variants): what differs in its runs."""

    name: str
    reference: bool = False
    gate: Gate | None = None
    entry: EntrySpec | None = None
    params: dict[str, Any] | None = None
    prompts: dict[str, str] | None = None
    model: str | None = None
    body: dict[str, Any] | None = None


class Manifest(_Plain):
    """``elizon.yaml``."""

    name: str | None = None
    version: str | None = None
    description: str | None = None
    entry: EntrySpec | None = None
    output: OutputMode = "text"
    judge: str | JudgeEndpoint | None = None
    evaluation: Evaluation | None = None
    prices: dict[str, Price] | None = None
    secrets: list[str] | None = None
    alignment: AlignmentSpec | None = None
    variants: list[VariantSpec] | None = None


#: The runtime class of each model, by the model's class name.
_CLASSES: dict[str, type[_Plain]] = {
    cls.__name__: cls for cls in (
        JudgeExpect, AlignmentSpec, ToolCallPattern, ToolCallsExpect, CheckSpec, RepeatUntil,
        StableExpect, RagExpect, Expect, Turn, Case, Suite, AuthorBaseline, SuiteRef, Evaluation,
        CommandEntry, UrlEntry, JudgeEndpoint, Price, VariantSpec, Manifest)}


def from_model(value: Any) -> Any:
    """``value`` with every pydantic model of :mod:`.model` in it as its runtime class.

    Duck-typed on ``model_fields`` so this module never imports pydantic; values the models
    hold as given (``input``, ``output``: YAML data with its lines) are kept as they are.
    """
    kind = type(value)
    if kind is list:
        return [from_model(v) for v in value]
    if kind is tuple:
        return tuple(from_model(v) for v in value)
    if kind is dict:
        return {k: from_model(v) for k, v in value.items()}
    names = getattr(kind, "model_fields", None)
    if names is None:
        return value
    cls = _CLASSES[kind.__name__]
    given = {name: from_model(getattr(value, name)) for name in names}
    if cls is Expect:
        given["output_given"] = "output" in value.model_fields_set
    elif cls is AuthorBaseline:  # the metrics are the model's extra keys, any name
        given["metrics"] = dict(value.model_extra or {})
    return cls(**given)
