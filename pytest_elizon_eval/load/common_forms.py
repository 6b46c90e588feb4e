"""The common forms of a manifest and a suite file, validated without pydantic.

A file that is not in the suite cache (the first session after a checkout, an edited
file) is validated by :mod:`.model`, whose import and model building are most of what
such a session adds to pytest's own start-up (docs/performance.md). Most files use a
small part of the format: a manifest that names its entry, judge and suites, and cases
of an ``input`` with text, route, label, latency and token assertions, tags, a number of
repeats and a pass rate. This module accepts exactly those forms,
checked by the same rules the models apply (the patterns and limits are shared), and
gives what :func:`~.runtime.from_model` makes of the validated model, value for value.

Anything else (another key, another type, a value a rule refuses, a duplicate id) is
``None``: the file goes to :mod:`.model`, the validator of record, which reports every
problem with its line. So this module never reports an error and never accepts what the
models refuse; tests/test_common_forms.py holds it to the models on every example file
and on generated ones. No pytest or pydantic import here.
"""

from __future__ import annotations

import math
from typing import Any, get_args

from .documents import YamlMapping, YamlSequence
from .limits import (
    CASE_ID_PATTERN,
    DATASET_HASH_PATTERN,
    MAX_LABEL,
    MAX_REPEAT,
    RESERVED_TAGS,
    TAG_PATTERN,
)
from .runtime import AuthorBaseline, Case, Evaluation, Expect, Gate, Manifest, OutputMode, SuiteRef

__all__ = ["manifest", "suite_cases"]

#: Keys of a case and of its ``expect`` in the common form (their file spelling), and the
#: runtime field each ``expect`` key fills (the runtime class's own aliases).
_CASE_KEYS = frozenset({"id", "description", "input", "expect", "tags", "repeat",
                        "minPassRate"})
_TEXT_LISTS = frozenset({"contains", "notContains", "containsAny", "containsExact",
                         "errorContains"})
_TEXTS = frozenset({"equals", "startsWith"})
_LABELS = frozenset({"route", "label"})
_COUNTS = frozenset({"maxLatencyMs", "maxTokens"})
_EXPECT_KEYS = _TEXT_LISTS | _TEXTS | _LABELS | _COUNTS
_EXPECT_FIELD = {alias: name for name, alias in Expect.ALIASES.items()}
_MANIFEST_TEXTS = ("name", "version", "description", "entry", "judge")
_MANIFEST_KEYS = frozenset({*_MANIFEST_TEXTS, "output", "evaluation"})
_OUTPUT_MODES = frozenset(get_args(OutputMode))
_GATES = frozenset(get_args(Gate))
_SET_KEYS = frozenset({"suite", "gate", "authorBaseline"})
_SUITE_KEYS = frozenset({"cases"})
_SUITES_FORM = frozenset({"suites"})


class _NotCommon(Exception):
    """The data is not in the common form: :mod:`.model` decides."""


def _text(value: object) -> str:
    if type(value) is not str:
        raise _NotCommon
    return value


def _texts(value: object) -> list[str]:
    if type(value) is not YamlSequence:
        raise _NotCommon
    return [_text(item) for item in value]


def _mapping(value: object, allowed: frozenset[str]) -> YamlMapping:
    if type(value) is not YamlMapping or not allowed.issuperset(value):
        raise _NotCommon
    return value


def suite_cases(data: Any) -> list[Case] | None:
    """The cases of a suite file in the common form, as the model validates them; None for
    any other file."""
    try:
        return _suite_cases(data)
    except _NotCommon:
        return None


def _suite_cases(data: Any) -> list[Case]:
    cases = _mapping(data, _SUITE_KEYS).get("cases")
    if type(cases) is not YamlSequence or not cases:
        raise _NotCommon
    seen: set[str] = set()
    made = []
    for item in cases:
        case = _mapping(item, _CASE_KEYS)
        case_id = _text(case.get("id"))
        if not CASE_ID_PATTERN.fullmatch(case_id) or case_id in seen:
            raise _NotCommon
        seen.add(case_id)
        case_input = case.get("input")
        if type(case_input) is not str and type(case_input) is not YamlMapping:
            raise _NotCommon  # absent, null, or a conversation's turns
        made.append(Case(
            id=case_id,
            description=_text(case["description"]) if "description" in case else None,
            input=case_input,  # kept as written, as the model keeps it
            expect=_expect(case["expect"]) if "expect" in case else None,
            tags=_tags(case["tags"]) if "tags" in case else None,
            repeat=_whole(case["repeat"], 1, MAX_REPEAT) if "repeat" in case else None,
            min_pass_rate=_rate(case["minPassRate"]) if "minPassRate" in case else None))
    return made


def _expect(value: object) -> Expect:
    fields: dict[str, Any] = {}
    for key, item in _mapping(value, _EXPECT_KEYS).items():
        fields[_EXPECT_FIELD.get(key, key)] = (
            _texts(item) if key in _TEXT_LISTS else _text(item) if key in _TEXTS
            else _label(item) if key in _LABELS else _whole(item, 0, None))
    return Expect(**fields)


def _label(value: object) -> str:
    """A route or label: one line of 1 to MAX_LABEL characters, no surrounding spaces."""
    label = _text(value)
    if not 1 <= len(label) <= MAX_LABEL or label != label.strip() or "\n" in label:
        raise _NotCommon
    try:
        label.encode()  # a lone surrogate (PyYAML's pure-Python reader lets "\ud800" in)
    except UnicodeEncodeError:  # is refused by pydantic's checked strings
        raise _NotCommon from None
    return label


def _whole(value: object, least: int, most: int | None) -> int:
    if type(value) is not int or value < least or (most is not None and value > most):
        raise _NotCommon  # a boolean or a number with a fraction is not a whole number here
    return value


def _number(value: object) -> float:
    """A finite number; a whole number is its float, as in strict mode."""
    if type(value) is not float and type(value) is not int:
        raise _NotCommon  # a boolean, text, null, …
    try:
        number = float(value)
    except OverflowError:  # a whole number past the largest float
        raise _NotCommon from None
    if not math.isfinite(number):
        raise _NotCommon  # .inf and .nan are refused (allow_inf_nan=False)
    return number


def _rate(value: object) -> float:
    rate = _number(value)
    if not 0.0 <= rate <= 1.0:
        raise _NotCommon
    return rate


def _tags(value: object) -> list[str]:
    tags = _texts(value)
    if any(not TAG_PATTERN.fullmatch(tag) or tag in RESERVED_TAGS for tag in tags):
        raise _NotCommon
    return tags


def manifest(data: Any) -> Manifest | None:
    """A manifest in the common form, as the model validates it; None for any other."""
    try:
        return _manifest(data)
    except _NotCommon:
        return None


def _manifest(data: Any) -> Manifest:
    found = _mapping(data, _MANIFEST_KEYS)
    fields: dict[str, Any] = {key: _text(found[key]) for key in _MANIFEST_TEXTS if key in found}
    if "output" in found:
        fields["output"] = _choice(found["output"], _OUTPUT_MODES)
    if "evaluation" in found:
        fields["evaluation"] = _evaluation(found["evaluation"])
    return Manifest(**fields)


def _evaluation(value: object) -> Evaluation:
    if type(value) is YamlMapping and "suites" in value:
        refs = _mapping(value, _SUITES_FORM)["suites"]
        if type(refs) is not YamlSequence or not refs:
            raise _NotCommon
        return Evaluation(suites=[SuiteRef(**_suite_set(item, "must-pass")) for item in refs])
    # the one-suite form: its gate stays unset when not written (the model's default)
    return Evaluation(**_suite_set(value, None))


def _suite_set(value: object, gate: str | None) -> dict[str, Any]:
    found = _mapping(value, _SET_KEYS)
    if "suite" not in found:
        raise _NotCommon
    fields: dict[str, Any] = {"suite": _text(found["suite"]), "gate": gate}
    if "gate" in found:
        fields["gate"] = _choice(found["gate"], _GATES)
    if "authorBaseline" in found:
        fields["author_baseline"] = _baseline(found["authorBaseline"])
    return fields


def _choice(value: object, allowed: frozenset[str]) -> str:
    text = _text(value)
    if text not in allowed:
        raise _NotCommon
    return text


def _baseline(value: object) -> AuthorBaseline:
    """Metric names to finite numbers, and a well-formed ``datasetHash``."""
    if type(value) is not YamlMapping:
        raise _NotCommon
    metrics: dict[str, float] = {}
    dataset_hash = None
    for key, item in value.items():
        if key == "datasetHash":
            dataset_hash = _text(item)
            if not DATASET_HASH_PATTERN.fullmatch(dataset_hash):
                raise _NotCommon
        else:
            metrics[_text(key)] = _number(item)
    return AuthorBaseline(metrics=metrics, dataset_hash=dataset_hash)
