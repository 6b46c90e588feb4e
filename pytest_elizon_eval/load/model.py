"""The Elizon file formats as strict pydantic models, and their error messages.

Owns what a valid ``elizon.yaml`` and a valid suite file are (docs/format.md)
and turns every way a file can be wrong into a :class:`~.documents.Problem`
with a line number and a sentence a person can act on. Unknown keys are
errors (with a "did you mean" hint), types are strict (``contains: 3`` is
not silently a list). No pytest import here.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Annotated, Any, Literal, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    StringConstraints,
    Tag,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import ErrorDetails, PydanticCustomError

from ..redteam.probe_names import CATEGORIES
from ..run.answer_parts import parse_path
from ..run.chat_body import check_body, check_tools
from .documents import Problem, YamlMapping, YamlSequence, line_of
from .limits import (
    CASE_ID_PATTERN,
    DATASET_HASH_PATTERN,
    MAX_LABEL,
    MAX_PRICE,
    MAX_REPEAT,
    RESERVED_TAGS,
    TAG_PATTERN,
    VARIANT_NAME,
)

__all__ = [
    "CASE_ID_PATTERN",
    "CONTROL_PATTERN",
    "AlignmentSpec",
    "AuthorBaseline",
    "Case",
    "CheckSpec",
    "CommandEntry",
    "Evaluation",
    "Expect",
    "JudgeEndpoint",
    "JudgeExpect",
    "Manifest",
    "RagExpect",
    "RepeatUntil",
    "StableExpect",
    "Suite",
    "SuiteRef",
    "UrlEntry",
    "check_control",
    "duplicate_case_ids",
    "manifest_shape",
    "suite_checks",
    "validate",
]

_ModelT = TypeVar("_ModelT", bound=BaseModel)


class _Strict(BaseModel):
    # allow_inf_nan=False: YAML reads .inf and .nan as floats; no limit, price or rate is
    # meant by them, and NaN passes every range check by failing each comparison.
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True, populate_by_name=False,
                              allow_inf_nan=False)


def _check_regex(pattern: str) -> str:
    import regex  # deferred: costs import time on every run, needed by few

    try:
        regex.compile(pattern)
    except regex.error as exc:
        raise ValueError(f"invalid regex {pattern!r}: {exc}") from None
    return pattern


def _check_schema(schema: dict[str, Any]) -> dict[str, Any]:
    import jsonschema  # deferred: costs import time on every run, needed by few

    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError as exc:
        where = "/".join(str(p) for p in exc.path)
        raise ValueError(f"invalid JSON Schema{f' at {where}' if where else ''}: "
                         f"{exc.message}") from None
    return schema


#: Most grades ``samples`` may ask of a judge for one answer.
MAX_SAMPLES = 20
JUDGE_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_-]*$"


class JudgeExpect(_Strict):
    """``judge:`` in ``expect``: a rubric and the score that passes; graded ``samples``
    times (their mean is the grade, consistent when their range is within ``tolerance``).
    In a list each one has a ``name``: its assertion is ``judge.NAME``."""

    rubric: str = Field(min_length=1)
    threshold: float = Field(ge=0.0, le=1.0)
    name: str | None = Field(None, pattern=JUDGE_NAME_PATTERN)
    samples: int = Field(1, ge=1, le=MAX_SAMPLES)
    tolerance: float = Field(0.1, ge=0.0, le=1.0)


def _judge_form(value: Any) -> str:
    return "judge-list" if isinstance(value, list) else "judge-mapping"


def _named_rubrics(rubrics: list[JudgeExpect]) -> list[JudgeExpect]:
    if not rubrics:
        raise ValueError("a list of rubrics needs at least one {name, rubric, threshold}")
    names = [r.name for r in rubrics]
    if None in names:
        raise ValueError(f"rubric {names.index(None) + 1} of the list has no name; in a list "
                         "each rubric is named (its assertion is judge.NAME)")
    repeated = sorted({n for n in names if names.count(n) > 1 and n is not None})
    if repeated:
        raise ValueError(f"the rubric name {repeated[0]!r} is used twice")
    return rubrics


class AlignmentSpec(_Strict):
    """``alignment:`` in ``elizon.yaml``: human-labelled examples for the package's judge."""

    labels: str = Field(min_length=1)
    min_kappa: float | None = Field(None, alias="minKappa", ge=-1.0, le=1.0)
    #: The score at or above which a grade (and a human score) counts as a pass.
    threshold: float = Field(0.5, ge=0.0, le=1.0)
    #: The rubric for rows that name none: its text, or the name of a suite's rubric.
    rubric: str | None = Field(None, min_length=1)


class ToolCallPattern(_Strict):
    """One ``calledWith`` entry: a tool's name and a subset of its arguments."""

    name: str = Field(min_length=1)
    arguments: dict[str, Any] | None = None


class ToolCallsExpect(_Strict):
    """``toolCalls:`` in ``expect``: rules about the tools an agent called."""

    called: list[str] | None = None
    not_called: list[str] | None = Field(None, alias="notCalled")
    called_with: list[ToolCallPattern] | None = Field(None, alias="calledWith")
    order: list[str] | None = None
    all_succeeded: bool | None = Field(None, alias="allSucceeded")
    max_calls: int | None = Field(None, alias="maxCalls", ge=0)


class CheckSpec(_Strict):
    """``{check: name, threshold: 0.8}`` in ``expect.checks``: a check whose float result is
    a score that must reach ``threshold``."""

    check: str = Field(min_length=1)
    threshold: float | None = Field(None, ge=0.0, le=1.0)


class RepeatUntil(_Strict):
    """``repeat: {max: N, until: decided}``: run the case again only while the sequential
    test cannot yet tell its pass rate from ``minPassRate`` (docs/format.md#repeat)."""

    max: int = Field(ge=2, le=MAX_REPEAT)
    until: Literal["decided"]
    #: Half-width of the indifference zone around ``minPassRate`` (default 0.1).
    indifference: float | None = Field(None, gt=0.0, lt=0.5)


def _repeat_form(value: Any) -> str:
    return "repeat-until" if isinstance(value, dict) else "repeat-count"


#: ``repeat:`` — a number of runs, or the sequential form.
RepeatSpec = Annotated[
    Annotated[Annotated[int, Field(ge=1, le=MAX_REPEAT)], Tag("repeat-count")]
    | Annotated[RepeatUntil, Tag("repeat-until")],
    Discriminator(_repeat_form),
]


class StableExpect(_Strict):
    """``stable:`` in a case's ``expect``: how much a repeated case's outputs may vary."""

    max_unique_outputs: int | None = Field(None, alias="maxUniqueOutputs", ge=1)
    #: The least similarity (difflib's ratio, 0 to 1) any two runs' outputs may have.
    min_similarity: float | None = Field(None, alias="minSimilarity", ge=0.0, le=1.0)

    @model_validator(mode="after")
    def _something(self) -> StableExpect:
        if self.max_unique_outputs is None and self.min_similarity is None:
            raise ValueError("stable needs maxUniqueOutputs, minSimilarity or both")
        return self

#: Longest ``relevant:`` passage (and MAX_LABEL, the longest label ``expect.label`` /
#: ``expect.route`` may name): both are shown in every report's tables.
MAX_PASSAGE = 20_000


def _check_label(label: str) -> str:
    if not label.strip() or label != label.strip() or "\n" in label:
        raise ValueError(f"label {label[:40]!r} must be a word or phrase on one line, with no "
                         "surrounding spaces: reports name it in their tables")
    return label


class RagExpect(_Strict):
    """``rag:`` in ``expect``: the least score of each RAG metric (docs/contract.md#rag), and
    the passages a good retrieval finds."""

    faithfulness: float | None = Field(None, ge=0.0, le=1.0)
    answer_relevancy: float | None = Field(None, alias="answerRelevancy", ge=0.0, le=1.0)
    context_precision: float | None = Field(None, alias="contextPrecision", ge=0.0, le=1.0)
    context_recall: float | None = Field(None, alias="contextRecall", ge=0.0, le=1.0)
    relevant: list[Annotated[str, Field(min_length=1, max_length=MAX_PASSAGE)]] | None = Field(
        None, min_length=1)

    @model_validator(mode="after")
    def _relevant_for_context_metrics(self) -> RagExpect:
        if (self.context_precision is not None or self.context_recall is not None) \
                and self.relevant is None:
            raise ValueError("contextPrecision and contextRecall are measured against the "
                             "passages that should be retrieved: add 'relevant:' with them")
        return self


def _check_path(path: str) -> str:

    parse_path(path)  # ValueError says what is wrong
    return path


def _check_form(value: Any) -> str:
    return "check-mapping" if isinstance(value, dict) else "check-name"


class Expect(_Strict):
    """The assertions of one case (or of one turn of a conversation)."""

    contains: list[str] | None = None
    not_contains: list[str] | None = Field(None, alias="notContains")
    equals: str | None = None
    max_latency_ms: int | None = Field(None, alias="maxLatencyMs", ge=0)
    matches: list[Annotated[str, AfterValidator(_check_regex)]] | None = None
    # a route is a label of the classification report (docs/contract.md#classification):
    # the same limits, as every report's tables name it
    route: Annotated[str, Field(min_length=1, max_length=MAX_LABEL),
                     AfterValidator(_check_label)] | None = None
    #: Any JSON-like value, null included: whether it was given is ``"output" in fields_set``.
    output: Any = None
    error_contains: list[str] | None = Field(None, alias="errorContains")
    json_schema: Annotated[dict[str, Any], AfterValidator(_check_schema)] | None = Field(
        None, alias="jsonSchema")
    judge: Annotated[
        Annotated[JudgeExpect, Tag("judge-mapping")]
        | Annotated[list[JudgeExpect], AfterValidator(_named_rubrics), Tag("judge-list")],
        Discriminator(_judge_form),
    ] | None = None
    tool_calls: ToolCallsExpect | None = Field(None, alias="toolCalls")
    max_tokens: int | None = Field(None, alias="maxTokens", ge=0)
    max_cost_usd: float | None = Field(None, alias="maxCostUsd", ge=0)
    # Issue 11: text assertions, JSON written as text, a part of the answer, Python checks.
    contains_any: list[str] | None = Field(None, alias="containsAny")
    contains_exact: list[str] | None = Field(None, alias="containsExact")
    starts_with: str | None = Field(None, alias="startsWith")
    is_json: bool | None = Field(None, alias="isJson")
    path: Annotated[str, AfterValidator(_check_path)] | None = None
    checks: list[Annotated[
        Annotated[str, Tag("check-name")] | Annotated[CheckSpec, Tag("check-mapping")],
        Discriminator(_check_form),
    ]] | None = None
    # Issue 24: the output pinned in the suite's __snapshots__ file (docs/contract.md#snapshots).
    snapshot: bool | None = None

    # Issue 21: every run of a repeated case gives the same output / outputs that vary little.
    deterministic: bool | None = None
    stable: StableExpect | None = None

    @property
    def across_runs(self) -> bool:
        """Whether it checks the runs of a repeated case together (deterministic, stable)."""
        return bool(self.deterministic) or self.stable is not None

    # Issue 25: task measures (docs/contract.md#task-metrics).
    label: Annotated[str, Field(min_length=1, max_length=MAX_LABEL),
                     AfterValidator(_check_label)] | None = None
    rag: RagExpect | None = None


def _check_input(value: object) -> object:
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return value
    if value is None:  # `input:` with nothing after it is null too
        raise ValueError("input is null; give a string or a mapping of named inputs "
                         "(quote 'null' if you mean the text)")
    raise ValueError(
        f"input must be a string or a mapping of named inputs, found {_describe(value)}")


def _check_tag(tag: str) -> str:
    if not TAG_PATTERN.fullmatch(tag):  # match() would let a final newline through
        raise ValueError(f"tag {tag!r} must be a word (letters, digits, '_' or '-', "
                         "not starting with a digit) so it can be a pytest marker")
    if tag in RESERVED_TAGS:
        raise ValueError(f"tag {tag!r} is a pytest marker with its own meaning; pick another")
    return tag


#: A control id (docs/format.md#controls): SOC 2 ``CC6.1``, ISO 27001 ``A.8.12``, OWASP
#: ``LLM01``; no spaces, so reports and ``-k`` can name it.
CONTROL_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:/-]{0,63}$")


def check_control(value: str) -> str:
    if not CONTROL_PATTERN.fullmatch(value):
        raise ValueError(f"control {value!r} must be an identifier such as LLM01 or CC6.1 "
                         "(letters, digits and . _ : / -, at most 64 characters)")
    return value


class Turn(_Strict):
    """One turn of a conversation: a user message and what its answer must satisfy."""

    input: Any
    expect: Expect | None = None
    #: Results for the tools the previous answer called, by call id or tool name: sent as
    #: ``tool`` messages before this turn's input (docs/format.md#turns). *Extension.*
    tool_results: dict[str, Any] | None = Field(None, alias="toolResults")

    _input_shape = field_validator("input", mode="before")(_check_input)

    @field_validator("tool_results", mode="before")
    @classmethod
    def _tool_results_given(cls, value: object) -> object:
        if value is None:  # only a written null reaches a before-validator
            raise ValueError("toolResults is null; give a mapping of tool name or call id to "
                             "its result, e.g. {get_weather: {temp_c: 21}}")
        return value

    @model_validator(mode="after")
    def _whole_case_only(self) -> Turn:
        if self.expect is not None and self.expect.across_runs:
            raise ValueError("deterministic and stable compare the runs of the whole case; "
                             "put them in the case's own expect, not a turn's")
        return self

    @field_validator("expect")
    @classmethod
    def _measures_are_the_cases(cls, value: Expect | None) -> Expect | None:
        # a conversation is one case of a classification or RAG report: its own expect
        if value is not None and (value.label is not None or value.rag is not None):
            raise ValueError("label and rag are measured once per case: put them in the "
                             "case's own expect (they read the conversation's last answer)")
        return value


class Case(_Strict):
    """One test case of a suite file: an ``input``, or a conversation of ``turns``."""

    id: str
    description: str | None = None
    input: Any = None
    turns: list[Turn] | None = Field(None, min_length=1)
    expect: Expect | None = None
    tags: list[Annotated[str, AfterValidator(_check_tag)]] | None = None
    repeat: RepeatSpec | None = None
    min_pass_rate: float | None = Field(None, alias="minPassRate", ge=0.0, le=1.0)
    #: Compliance controls the case evidences (docs/format.md#controls).
    controls: list[Annotated[str, AfterValidator(check_control)]] | None = None

    @field_validator("id")
    @classmethod
    def _id_shape(cls, value: str) -> str:
        if not CASE_ID_PATTERN.fullmatch(value):  # match() would let a final newline through
            raise ValueError(
                f"id {value!r} must be lowercase words joined by hyphens "
                "(^[a-z0-9]+(-[a-z0-9]+)*$)")
        return value

    # Before-validators see only keys that were written: a null here is an explicit one,
    # reported at its own key rather than as a case with neither input nor turns.
    _input_shape = field_validator("input", mode="before")(_check_input)

    @field_validator("turns", mode="before")
    @classmethod
    def _turns_given(cls, value: object) -> object:
        if value is None:
            raise ValueError("turns is null; give a list of turns, each with an 'input'")
        return value

    @model_validator(mode="after")
    def _input_or_turns(self) -> Case:
        if (self.input is None) == (self.turns is None):
            raise ValueError(INPUT_OR_TURNS)
        if self.turns and self.turns[0].tool_results is not None:
            raise ValueError("the first turn has toolResults, but no earlier answer called a "
                             "tool; give toolResults on the turn after the answer that "
                             "called it")
        return self

    @model_validator(mode="after")
    def _snapshot_of_case(self) -> Case:
        if any(t.expect is not None and t.expect.snapshot for t in self.turns or ()):
            raise ValueError("snapshot: is a key of the case's own expect, not of a turn's "
                             "(a conversation's snapshot pins every turn's answer)")
        return self


class Suite(_Strict):
    """A suite file: a mapping with a non-empty ``cases`` list."""

    cases: list[Case] = Field(min_length=1)


Gate = Literal["advisory", "must-pass"]


def _check_probes(value: object) -> object:
    """``probes:`` — ``all`` or a list of the pack's categories (docs/format.md#probes)."""
    if value == "all":
        return CATEGORIES
    if not isinstance(value, list) or not value:
        raise ValueError(f"expected 'all' or a non-empty list of categories "
                         f"({', '.join(CATEGORIES)}), found {_describe(value)}")
    return tuple(value)  # each item is checked on its own, so its error has its line


#: An error in one item of a list, said as ``list: item N: …`` at the item's line.
_LIST_ITEM = "list_item"


def _check_category(item: object) -> object:
    """One item of a ``probes:`` list: a category, or the operator's own probe file."""
    if isinstance(item, str) and (item in CATEGORIES or item.endswith((".yaml", ".yml"))):
        return item
    shown = _describe(item) if not isinstance(item, str) else repr(item)
    # No template context: the message is final, braces in the item stay as written.
    raise PydanticCustomError(_LIST_ITEM, f"unknown category {shown}; the categories are "
                              f"{', '.join(CATEGORIES)}, or 'all' (or a path to your own "
                              "probe file ending in .yaml)")


def _check_secret(value: str) -> str:
    # The message never quotes the value: it is a secret.
    if len(value.strip()) < 8 or value != value.strip():
        raise ValueError(f"a secret must be at least 8 characters with no surrounding spaces "
                         f"(this one has {len(value)}), so reports can show it masked")
    return value


#: What a ``datasetHash`` must look like, said the same for every wrong value.
DATASET_HASH_RULE = ("must be 'sha256:' followed by 64 lowercase hex digits, as "
                     "'elizon-eval dataset hash' prints it")


class AuthorBaseline(_Strict):
    """``authorBaseline:``: the author's own results, any metric name to a number, and the
    content hash of the cases they were measured on (docs/format.md#dataset-hash)."""

    # Extra keys are the metrics (any name, as before ``datasetHash``): each a finite number.
    model_config = ConfigDict(extra="allow")  # merged with _Strict's
    # a bare annotation: pydantic 2.5 (the oldest supported) refuses a Field() default here
    __pydantic_extra__: dict[str, float]
    dataset_hash: str | None = Field(None, alias="datasetHash")

    @field_validator("dataset_hash", mode="before")
    @classmethod
    def _dataset_hash_shape(cls, value: object) -> object:
        # a before-validator sees only a written key: a null here was written as one
        if not isinstance(value, str) or not DATASET_HASH_PATTERN.fullmatch(value):
            raise ValueError(f"{DATASET_HASH_RULE}; found {_describe(value)}")
        return value


class SuiteRef(_Strict):
    """One test set named by a manifest: a suite file, or the probe pack (``probes:``)."""

    suite: str | None = None
    #: Categories of the shipped probe pack (docs/format.md#probes); ``all`` is every one.
    probes: Annotated[tuple[Annotated[str, BeforeValidator(_check_category)], ...],
                      BeforeValidator(_check_probes)] | None = None
    #: The named input a probe's text is given as (default: one string input).
    input_name: str | None = Field(None, alias="inputName", min_length=1)
    author_baseline: AuthorBaseline | None = Field(None, alias="authorBaseline")
    gate: Gate = "must-pass"
    #: Suite defaults for the cases' ``repeat`` and ``minPassRate``.
    repeat: RepeatSpec | None = None
    min_pass_rate: float | None = Field(None, alias="minPassRate", ge=0.0, le=1.0)


class Evaluation(_Strict):
    """A manifest's ``evaluation`` block: one suite, or a ``suites:`` list."""

    suite: str | None = None
    author_baseline: AuthorBaseline | None = Field(None, alias="authorBaseline")
    gate: Gate | None = None
    repeat: RepeatSpec | None = None
    min_pass_rate: float | None = Field(None, alias="minPassRate", ge=0.0, le=1.0)
    suites: list[SuiteRef] | None = Field(None, min_length=1)

    def refs(self) -> list[SuiteRef]:
        """The test sets, whichever form the manifest used."""
        if self.suites is not None:
            return list(self.suites)
        assert self.suite is not None  # guaranteed by manifest_shape
        return [SuiteRef(suite=self.suite, authorBaseline=self.author_baseline,
                         gate=self.gate or "must-pass", repeat=self.repeat,
                         minPassRate=self.min_pass_rate, inputName=None)]


#: Tags of union members: pydantic puts them in error locations; messages leave them out.
_UNION_TAGS: set[str] = set()


def _text_or_mapping(text_tag: str, mapping_tag: str) -> Callable[[Any], str]:
    """A discriminator: a string is one form, a mapping the other (errors name one form)."""
    _UNION_TAGS.update((text_tag, mapping_tag))
    return lambda value: mapping_tag if isinstance(value, dict) else text_tag


def _entry_form(value: Any) -> str:
    if not isinstance(value, dict):
        return "entry-spec"
    return "entry-url" if "url" in value else "entry-command"


_UNION_TAGS.update(("entry-spec", "entry-url", "entry-command"))
_UNION_TAGS.update(("check-name", "check-mapping", "judge-mapping", "judge-list"))
_UNION_TAGS.update(("repeat-count", "repeat-until"))


#: How a command's stdout or a service's reply is read (docs/format.md#output-mode).
OutputMode = Literal["text", "json", "openai", "answer"]


def _checked_body(value: dict[str, Any] | None) -> dict[str, Any] | None:
    """A chat-completions request body template (docs/format.md#request-body), checked."""
    if value is not None:
        check_body(value)
    return value


class CommandEntry(_Strict):
    """``entry: {command: [argv…], cwd?, env?}``: the application as a process."""

    command: list[str] = Field(min_length=1)
    cwd: str | None = None
    #: Values may name the operator's variables as ``${NAME}``.
    env: dict[str, str] | None = None
    #: How stdout is read: as text, or parsed as JSON (default: the manifest's ``output``).
    output: OutputMode | None = None


class UrlEntry(_Strict):
    """``entry: {url, method?, headers?, timeout?}``: the application as an HTTP service."""

    url: str = Field(pattern=r"^https?://")
    method: Literal["POST", "PUT", "PATCH"] = "POST"
    #: Values may name the operator's variables as ``${NAME}``.
    headers: dict[str, str] | None = None
    timeout: float | None = Field(None, gt=0, le=90)
    #: ``json``: every reply is parsed as JSON (default: JSON replies by their content type).
    output: OutputMode | None = None
    #: With ``output: openai``: the ``model`` of the chat-completions request body.
    model: str | None = None
    #: With ``output: openai``: a system prompt, sent first in every request's messages.
    system: str | None = None
    #: With ``output: openai``: tool definitions, or the path of a JSON/YAML file of them
    #: (relative to the package folder).
    tools: list[Any] | str | None = None
    #: With ``output: openai``: other request fields, a template (docs/format.md#entry-url).
    body: dict[str, Any] | None = None

    _body_template = field_validator("body")(_checked_body)

    @field_validator("tools")
    @classmethod
    def _tool_definitions(cls, value: list[Any] | str | None) -> list[Any] | str | None:
        if isinstance(value, list):
            check_tools(value)
        elif isinstance(value, str) and not value.strip():
            raise ValueError("tools is an empty path; give a list of tool definitions or "
                             "the path of a JSON or YAML file of them")
        return value

    @model_validator(mode="after")
    def _one_place_each(self) -> UrlEntry:
        for key in ("model", "tools"):
            if self.body is not None and key in self.body and getattr(self, key) is not None:
                raise ValueError(f"{key} is given twice, as the entry's {key} and as "
                                 f"body.{key}; keep one")
        return self


EntrySpec = Annotated[
    Annotated[str, Tag("entry-spec")]
    | Annotated[CommandEntry, Tag("entry-command")]
    | Annotated[UrlEntry, Tag("entry-url")],
    Discriminator(_entry_form),
]


class JudgeEndpoint(_Strict):
    """An OpenAI-compatible chat-completions endpoint that grades answers."""

    url: str = Field(pattern=r"^https?://")
    model: str = Field(min_length=1)
    #: The name of the environment variable holding the API key (never the key itself).
    api_key_env: str | None = Field(None, alias="apiKeyEnv")



class Price(_Strict):
    """What a model costs, in US dollars per 1M input and output tokens, and per 1M prompt
    cache reads and writes where the provider bills them apart (docs/format.md, the
    ``prices`` row; absent: the input rate)."""

    input: float = Field(ge=0, le=MAX_PRICE)
    output: float = Field(ge=0, le=MAX_PRICE)
    cache_read: float | None = Field(None, alias="cacheRead", ge=0, le=MAX_PRICE)
    cache_write: float | None = Field(None, alias="cacheWrite", ge=0, le=MAX_PRICE)


def _non_finite(value: object) -> float | None:
    """The first number in ``value`` (mappings and lists walked) that is not finite."""
    if isinstance(value, float) and not math.isfinite(value):
        return value
    parts = value.values() if isinstance(value, dict) else value \
        if isinstance(value, list) else ()
    return next((bad for part in parts if (bad := _non_finite(part)) is not None), None)


def check_variant_name(value: str) -> str:
    if not VARIANT_NAME.fullmatch(value):
        raise ValueError(
            f"variant name {value!r} must be 1-64 letters, digits, '_', '.' or '-', starting "
            "with a letter or digit: it is the pytest id in case[name]")
    return value


class VariantSpec(_Strict):
    """One of ``variants:`` (docs/format.md#variants): a name and what differs in its runs."""

    name: Annotated[str, AfterValidator(check_variant_name)]
    #: The variant the others are compared with (at most one; default: the first).
    reference: bool = False
    #: ``advisory``: its failures never fail the run.
    gate: Gate | None = None
    #: Another entry point for its runs (any entry form).
    entry: EntrySpec | None = None
    #: Keyword arguments of a Python entry point (and of the ``elizon_variant`` fixture).
    params: dict[str, Any] | None = None
    #: Registry prompt versions it pins, by prompt name (docs/format.md#prompts).
    prompts: dict[str, Annotated[str, StringConstraints(min_length=1)]] | None = None
    #: With an ``output: openai`` URL entry: the request's model, and body keys added.
    model: str | None = Field(None, min_length=1)
    body: dict[str, Any] | None = None

    @field_validator("params")
    @classmethod
    def _param_names(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        for key, given in (value or {}).items():
            if not isinstance(key, str) or not key.isidentifier():
                raise ValueError(f"params key {key!r} is not a Python identifier; an entry "
                                 "point receives each as a keyword argument")
            bad = _non_finite(given)
            if bad is not None:  # docs/format.md#numbers-are-finite
                raise ValueError(f"params.{key}: must hold finite numbers, found "
                                 f"{_describe(bad)}")
        return value

    _body_template = field_validator("body")(_checked_body)


class Manifest(_Strict):
    """``elizon.yaml``: the keys this plugin reads, and the informational ones."""

    name: str | None = None
    version: str | None = None
    description: str | None = None
    entry: EntrySpec | None = None
    #: How a process or HTTP entry's answer is read: as text, or parsed as JSON.
    output: OutputMode = "text"
    judge: Annotated[
        Annotated[str, Tag("judge-spec")] | Annotated[JudgeEndpoint, Tag("judge-endpoint")],
        Discriminator(_text_or_mapping("judge-spec", "judge-endpoint")),
    ] | None = None
    evaluation: Evaluation | None = None
    #: Prices per 1M tokens by model name, for usage that reports no cost.
    prices: dict[str, Price] | None = None
    #: Strings planted in the application's context that no answer may reveal.
    secrets: list[Annotated[str, AfterValidator(_check_secret)]] | None = Field(
        None, min_length=1)
    #: Human-labelled examples the judge is measured against (docs/format.md#judge-alignment).
    alignment: AlignmentSpec | None = None
    #: The variants each case runs under (docs/format.md#variants).
    variants: list[VariantSpec] | None = Field(None, min_length=1)


# -- turning pydantic errors into Problems ---------------------------------------------

#: The keys allowed under each parent key, per file kind, for "did you mean" hints.
_KEYS_UNDER: dict[type[BaseModel], dict[str, type[BaseModel]]] = {
    Suite: {"cases": Case, "expect": Expect, "judge": JudgeExpect, "turns": Turn,
            "toolCalls": ToolCallsExpect, "calledWith": ToolCallPattern,
            "checks": CheckSpec, "repeat": RepeatUntil, "stable": StableExpect,
            "rag": RagExpect},
    Manifest: {"evaluation": Evaluation, "suites": SuiteRef, "judge": JudgeEndpoint,
               "prices": Price, "alignment": AlignmentSpec,
               "entry": CommandEntry, "repeat": RepeatUntil, "variants": VariantSpec},
}
#: The keys whose value maps names the user chooses (a model's) to one of the models above:
#: the keys under such a name are the model's, whatever the name.
_BY_NAME: dict[type[BaseModel], frozenset[str]] = {Manifest: frozenset({"prices"})}


#: What the whole of each kind of file must be.
_ROOT_SHAPE: dict[type[BaseModel], str] = {
    Suite: "the file must be a mapping with a 'cases' list",
    Manifest: "elizon.yaml must be a mapping (name, entry, evaluation, …)",
}


def _keys_of(model: type[BaseModel]) -> list[str]:
    return [f.alias or name for name, f in model.model_fields.items()]


def _describe(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}"
    if isinstance(value, float) and not math.isfinite(value):  # .inf, .nan, or 1.0e+999
        return "not-a-number (.nan)" if math.isnan(value) else \
            f"{'minus ' if value < 0 else ''}infinity ({'-' if value < 0 else ''}.inf)"
    if isinstance(value, (int, float)):
        return f"the number {value}"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:37] + "..."
        return f"the text {shown!r}"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return type(value).__name__


def _describe_root(value: object) -> str:
    """What a whole file holds, never quoting it: it may not be the file its author meant."""
    if isinstance(value, str):
        return "text"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    return _describe(value)


_EXPECTED = {
    "string_type": "a string",
    "list_type": "a list",
    "int_type": "a whole number",
    "float_type": "a number",
    "dict_type": "a mapping",
    "model_type": "a mapping",
    "bool_type": "true or false",
}


def _loc_text(loc: tuple[str | int, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out


def _message(error: ErrorDetails, root_model: type[BaseModel]) -> str:
    loc = tuple(error["loc"])
    kind = error["type"]
    value = error.get("input")
    where = _loc_text(loc)
    prefix = f"{where}: " if where else ""
    parent_where = _loc_text(loc[:-1])
    parent_prefix = f"{parent_where}: " if parent_where else ""
    if kind == "extra_forbidden":
        parent = next((p for p in reversed(loc[:-1]) if isinstance(p, str)), "")
        if loc[-3:-2] and loc[-3] in _BY_NAME.get(root_model, ()):
            parent = str(loc[-3])  # the key of a mapping by name: ``prices.<model>.<key>``
        model = _KEYS_UNDER.get(root_model, {}).get(parent, root_model)
        allowed = _keys_of(model)
        key = str(loc[-1])
        import difflib  # deferred: only an unknown key needs a "did you mean" hint

        close = difflib.get_close_matches(key, allowed, n=1, cutoff=0.6)
        close = close or [k for k in allowed if k.lower() == key.lower()]
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        return f"{parent_prefix}unknown key {key!r}{hint}; allowed here: {', '.join(allowed)}"
    if kind == "missing":
        return f"{parent_prefix}missing required key {str(loc[-1])!r}"
    if kind in _EXPECTED:
        if not where:
            return f"{_ROOT_SHAPE.get(root_model, 'the file must be a mapping')}, " \
                   f"found {_describe_root(value)}"
        return f"{prefix}expected {_EXPECTED[kind]}, found {_describe(value)}" + (
            "; a dataset's content hash goes under 'datasetHash'"
            if loc[-2:-1] == ("authorBaseline",) and str(value).startswith("sha256:") else "")
    if kind == "literal_error":
        expected = error.get("ctx", {}).get("expected", "")
        return f"{prefix}expected {expected}, found {_describe(value)}"
    if kind == "finite_number":
        return f"{prefix}must be a finite number, found {_describe(value)}"
    if kind == _LIST_ITEM:
        return f"{parent_prefix}item {loc[-1]}: {error['msg']}"
    if kind == "greater_than_equal":
        return f"{prefix}must be at least {error.get('ctx', {}).get('ge')}, found {value}"
    if kind == "less_than_equal":
        return f"{prefix}must be at most {error.get('ctx', {}).get('le')}, found {value}"
    if kind == "string_pattern_mismatch":
        return f"{prefix}{_describe(value)} does not match {error.get('ctx', {}).get('pattern')}"
    if kind == "string_too_short":
        return f"{prefix}must not be empty"
    if kind == "too_short":
        return f"{prefix}must not be empty"
    if kind == "value_error":
        return prefix + str(error["msg"]).removeprefix("Value error, ")
    return f"{prefix}{error['msg']}"


def validate(
    model: type[_ModelT],
    data: Any,
    extra_checks: Callable[[Any], list[Problem]] | None = None,
) -> tuple[_ModelT | None, list[Problem]]:
    """Validate loaded data against ``model``; return it, or every problem with its line."""
    problems = list(extra_checks(data)) if extra_checks else []
    try:
        value = model.model_validate(data)
    except ValidationError as exc:
        for error in exc.errors():
            loc = tuple(p for p in error["loc"] if p not in _UNION_TAGS)
            error["loc"] = loc
            problems.append(Problem(line_of(data, loc), _message(error, model)))
        value = None
    if problems:
        problems = list(dict.fromkeys(problems))  # a rule checked twice is said once
        problems.sort(key=lambda p: (p.line or 0))
        return None, problems
    return value, []


def duplicate_case_ids(data: Any) -> list[Problem]:
    """Duplicate ids, checked on the raw data so they are found with the other problems."""
    problems: list[Problem] = []
    cases = data.get("cases") if isinstance(data, YamlMapping) else None
    if not isinstance(cases, YamlSequence):
        return problems
    first: dict[str, int] = {}
    for index, case in enumerate(cases):
        if not isinstance(case, YamlMapping) or not isinstance(case.get("id"), str):
            continue
        line = case.key_lines.get("id", cases.item_lines[index])
        case_id = case["id"]
        if case_id in first:
            problems.append(Problem(
                line,
                f"cases[{index}].id: duplicate id {case_id!r} (first at line {first[case_id]})"))
        else:
            first[case_id] = line
    return problems


#: The one rule for a case's shape, said the same wherever it is found.
INPUT_OR_TURNS = "a case has exactly one of 'input' (one call) or 'turns' (a conversation)"


def suite_checks(data: Any) -> list[Problem]:
    """Checks on the raw data, so they are found with every other problem (pydantic skips a
    model's own validators once a field failed): duplicate ids, and input or turns."""
    problems = duplicate_case_ids(data)
    cases = data.get("cases") if isinstance(data, YamlMapping) else None
    if not isinstance(cases, YamlSequence):
        return problems
    for index, case in enumerate(cases):
        if isinstance(case, YamlMapping) and ("input" in case) == ("turns" in case):
            problems.append(Problem(cases.item_lines[index], f"cases[{index}]: {INPUT_OR_TURNS}"))
    return problems


def manifest_shape(data: Any) -> list[Problem]:
    """The ``evaluation`` block holds either ``suite`` or ``suites``, never both or neither;
    each ``suites:`` item a suite or probes."""
    return _evaluation_shape(data) + _one_source(data)


def _evaluation_shape(data: Any) -> list[Problem]:
    evaluation = data.get("evaluation") if isinstance(data, YamlMapping) else None
    if not isinstance(evaluation, YamlMapping):
        return []
    line = data.key_lines.get("evaluation")
    if "suites" in evaluation:
        mixed = [k for k in ("suite", "authorBaseline", "gate", "repeat", "minPassRate")
                 if k in evaluation]
        if mixed:
            return [Problem(evaluation.key_lines[mixed[0]],
                            f"evaluation.{mixed[0]}: with 'suites:' each set carries its own "
                            "suite, authorBaseline, gate, repeat and minPassRate")]
        return []
    if "suite" not in evaluation:
        return [Problem(line, "evaluation: needs 'suite: <path>' or a 'suites:' list")]
    return []


def _one_source(data: Any) -> list[Problem]:
    """Each ``suites:`` item names a suite file or the probe pack, exactly one of them."""
    evaluation = data.get("evaluation") if isinstance(data, YamlMapping) else None
    items = evaluation.get("suites") if isinstance(evaluation, YamlMapping) else None
    if not isinstance(items, YamlSequence):
        return []
    problems = []
    for index, item in enumerate(items):
        if not isinstance(item, YamlMapping):
            continue
        if ("suite" in item) == ("probes" in item):
            problems.append(Problem(items.item_lines[index], f"evaluation.suites[{index}]: "
                                    "needs exactly one of 'suite: <path>' or 'probes: "
                                    "[categories]' (or 'probes: all')"))
        elif "inputName" in item and "suite" in item:
            problems.append(Problem(item.key_lines["inputName"],
                                    f"evaluation.suites[{index}].inputName: only for "
                                    "'probes:' (a suite's cases name their own inputs)"))
        baseline = item.get("authorBaseline")
        if "probes" in item and isinstance(baseline, YamlMapping) and "datasetHash" in baseline:
            problems.append(Problem(baseline.key_lines["datasetHash"],
                                    f"evaluation.suites[{index}].authorBaseline.datasetHash: "
                                    "only for a suite file (the probe pack's cases are the "
                                    "plugin's, and have no dataset hash)"))
    return problems
