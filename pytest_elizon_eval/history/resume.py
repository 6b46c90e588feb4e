"""Which finished cases a resumed run takes from the store: pure functions, no pytest.

A case is taken only when the suite file's SHA-256, the entry point's identity and the
case's own content are what they were (docs/contract.md#resume).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..decide import outcomes

if TYPE_CHECKING:
    from ..load.model import Case

__all__ = ["Finished", "case_sha256", "stored_result"]

#: The cases a run finished, by node id: (suite sha256, case sha256, entry, report data).
Finished = dict[str, tuple[str, str, str, dict[str, Any]]]


def case_sha256(case: Case) -> str:
    """The SHA-256 of a case's content, as its suite file says it."""
    try:  # what the model holds as objects (a check's spec) is hashed by its repr
        text = json.dumps(case.model_dump(by_alias=True, exclude_none=True, warnings=False),
                          sort_keys=True, ensure_ascii=False, default=repr)
    except (TypeError, ValueError, RecursionError):
        return ""  # cannot be told apart from its changed self: never resumed
    return hashlib.sha256(text.encode("utf-8", "backslashreplace")).hexdigest()


def stored_result(resumable: Finished | None,
                  identity: outcomes.CaseIdentity, case_sha: str, entry: str
                  ) -> outcomes.CaseResult | None:
    """The case's result from the run being resumed, if that run finished this very case:
    same suite content, entry point identity and case content."""
    if not resumable or not case_sha:
        return None
    found = resumable.get(identity.nodeid)
    if found is None or found[:3] != (identity.suite.sha256, case_sha, entry):
        return None
    result = outcomes.CaseResult.from_data(found[3])
    return replace(result, suite=identity.suite, resumed=True)
