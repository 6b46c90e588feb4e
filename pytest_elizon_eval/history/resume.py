"""Which finished cases a resumed run takes from the store: pure functions, no pytest.

A case is taken only when its effective content — the case as its suite file says it,
with what its suite and session give it (repeat and minPassRate after the suite's
defaults, time limit, judge, prices…) — and the entry point's identity are what they
were (docs/contract.md#resume). The rest of the suite file may have changed: an edit
re-runs only the cases it touches.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..decide import outcomes
from ..decide.results_data import file_case
from ..load.content import canonical_text, case_text

if TYPE_CHECKING:
    from ..load.runtime import Case

__all__ = ["Finished", "case_sha256", "stored_result", "usable"]

#: The cases a run finished, by node id: (suite sha256, case sha256, entry, report data).
Finished = dict[str, tuple[str, str, str, dict[str, Any]]]


def case_sha256(case: Case, effective: Mapping[str, Any] | None = None,
                text: bytes | None = None) -> str:
    """The SHA-256 of a case's effective content: the case as its suite file says it
    (``text``, its :func:`~..load.content.case_text` when the suite cache kept it), and
    ``effective``, what the suite and the session add to it (as the plan resolved them).
    The canonical JSON of ``{"case": …, "effective": …}``, written in parts: a probe's
    input holds the run's canary, new in every run, written as ``{canary}``."""
    if text is None:
        text = case_text(case)
        if text is None:
            return ""  # cannot be told apart from its changed self: never resumed
    if effective:  # without: the hash of the case alone, as before (schema 1's rows)
        written = _effective_text(effective)
        if written is None:
            return ""
        text = b'{"case": ' + text + b', "effective": ' + written + b"}"
    return hashlib.sha256(text).hexdigest()


#: The text of each effective content seen (the cases of a suite share a few), by its
#: items with their types (1, 1.0 and True are equal keys, but are written apart).
_effective_texts: dict[object, bytes] = {}


def _typed(value: Any) -> object:
    if type(value) is tuple:
        return tuple(_typed(part) for part in value)
    return type(value), value


def _effective_text(effective: Mapping[str, Any]) -> bytes | None:
    key: object = None
    found = None
    try:
        key = tuple((name, _typed(value)) for name, value in effective.items())
        found = _effective_texts.get(key)
    except TypeError:  # a value that is not hashable (a snapshot pin's mapping)
        key = None
    if found is not None:
        return found
    try:
        written = canonical_text(dict(effective))
    except (TypeError, ValueError, RecursionError):
        return None
    if key is not None:
        if len(_effective_texts) >= 256:  # a run of many distinct settings: start again
            _effective_texts.clear()
        _effective_texts[key] = written
    return written


_OUTCOMES = frozenset((outcomes.PASSED, outcomes.FAILED, outcomes.TIMEOUT, outcomes.ERROR,
                       outcomes.INCONCLUSIVE))


def usable(finished: Finished) -> tuple[Finished, list[str]]:
    """The finished cases a resumed run can take, and the node ids (sorted) of those it
    cannot: a stored report that is no case's result (a damaged row) is left out, and its
    case runs again instead of failing on it (docs/contract.md#resume). A row is a case's
    result when the record it reads as — a missing key its default, as an older plugin's
    rows have it — fits the results schema's case, as every report will be given it."""
    kept: Finished = {}
    damaged = []
    for nodeid, found in finished.items():
        data = found[3]
        try:
            whole = data.get("nodeid") == nodeid and data.get("outcome") in _OUTCOMES \
                and _case_schema().is_valid(file_case(outcomes.CaseResult.from_data(data)))
        except Exception:  # whatever a damaged row holds, its case simply runs again
            whole = False
        if whole:
            kept[nodeid] = found
        else:
            damaged.append(nodeid)
    return kept, sorted(damaged)


@functools.cache
def _case_schema() -> Any:
    """The validator of one case of a results file (its ``$defs/case``), built once."""
    import jsonschema  # deferred: only a resumed run reads rows back

    from ..reporting.results import schema  # deferred: the reports' modules, for its schema

    whole = schema()
    return jsonschema.Draft202012Validator({
        "$schema": whole["$schema"], "$id": whole["$id"], "$defs": whole["$defs"],
        "$ref": "#/$defs/case"})


def stored_result(resumable: Finished | None,
                  identity: outcomes.CaseIdentity, case_sha: str, entry: str
                  ) -> outcomes.CaseResult | None:
    """The case's result from the run being resumed, if that run finished this very case:
    same effective case content and entry point identity. The suite file's own hash is
    not compared: another case's edit leaves this one's result standing."""
    if not resumable or not case_sha:
        return None
    found = resumable.get(identity.nodeid)
    if found is None or found[1:3] != (case_sha, entry):
        return None
    result = outcomes.CaseResult.from_data(found[3])
    # as this session's suite file says it: its hash, and the case's line (an edit above
    # the case moves it)
    return replace(result, suite=identity.suite, line=identity.line, resumed=True)
