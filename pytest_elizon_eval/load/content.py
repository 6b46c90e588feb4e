"""A case's content as ``--elizon-resume`` and the history store hash it: its canonical
JSON, made once when its suite file is validated and kept in the suite cache with it, so
a run does not write every case again to hash it (docs/contract.md#resume). Stdlib only.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["CANARY", "canonical_text", "case_text"]

#: A run's red-team canary (:func:`~..redteam.pack.new_canary`): random in every run, so a
#: key holds it as ``{canary}`` and a probe's grade or finished run is reused like any other.
CANARY = re.compile(r"CANARY-[0-9A-F]{16}-ELZ")


#: One encoder for every case (``json.dumps`` with options makes one per call).
_CANONICAL = json.JSONEncoder(sort_keys=True, ensure_ascii=False, default=repr)


def canonical_text(value: Any) -> bytes:
    """``value`` as canonical JSON (sorted keys; what is not JSON by its repr), the canary
    as ``{canary}``, in UTF-8 (a lone surrogate escaped); raises TypeError, ValueError or
    RecursionError when it cannot be written."""
    text = _CANONICAL.encode(value)
    return CANARY.sub("{canary}", text).encode("utf-8", "backslashreplace")


def case_text(case: Any) -> bytes | None:
    """The case as its suite file says it (what its model dumps), as :func:`canonical_text`;
    None when it cannot be written (such a case is never resumed)."""
    try:  # what the model holds as objects (a check's spec) is written by its repr
        return canonical_text(case.model_dump(by_alias=True, exclude_none=True,
                                              warnings=False))
    except (TypeError, ValueError, RecursionError):
        return None
