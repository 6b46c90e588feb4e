"""Which finished cases a resumed run takes from the store: pure functions, no pytest.

A case is taken only when its effective content — the case as its suite file says it,
with what its suite and session give it (repeat and minPassRate after the suite's
defaults, time limit, judge, prices…) — and the entry point's identity are what they
were (docs/contract.md#resume). The rest of the suite file may have changed: an edit
re-runs only the cases it touches.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..decide import outcomes
from ..run.grade_cache import CANARY

if TYPE_CHECKING:
    from ..load.runtime import Case

__all__ = ["Finished", "case_sha256", "stored_result"]

#: The cases a run finished, by node id: (suite sha256, case sha256, entry, report data).
Finished = dict[str, tuple[str, str, str, dict[str, Any]]]


def case_sha256(case: Case, effective: Mapping[str, Any] | None = None) -> str:
    """The SHA-256 of a case's effective content: the case as its suite file says it, and
    ``effective``, what the suite and the session add to it (as the plan resolved them)."""
    try:  # what the model holds as objects (a check's spec) is hashed by its repr
        content = case.model_dump(by_alias=True, exclude_none=True, warnings=False)
        if effective:  # without: the hash of the case alone, as before (schema 1's rows)
            content = {"case": content, "effective": dict(effective)}
        text = json.dumps(content, sort_keys=True, ensure_ascii=False, default=repr)
        # a probe's input holds the run's canary, new in every run: the same probe either way
        text = CANARY.sub("{canary}", text)
    except (TypeError, ValueError, RecursionError):
        return ""  # cannot be told apart from its changed self: never resumed
    return hashlib.sha256(text.encode("utf-8", "backslashreplace")).hexdigest()


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
