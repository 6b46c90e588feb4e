"""A case's content as ``--elizon-resume`` and the history store hash it: its canonical
JSON, made once when its suite file is validated and kept in the suite cache with it, so
a run does not write every case again to hash it (docs/contract.md#resume). A suite's
content hash (docs/format.md#dataset-hash) is made from the same texts. Stdlib only.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from typing import Any

__all__ = ["CANARY", "DATASET_HASH_PREFIX", "canonical_text", "case_text", "dataset_hash"]

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
    """The case as its suite file says it (what its model dumps, a value equal to the
    plugin's default left out, as when not written), as :func:`canonical_text`; None when
    it cannot be written (such a case is never resumed). Defaults left out: a plugin
    version that adds a key with a default, and fills it in, hashes the cases alike."""
    try:  # what the model holds as objects (a check's spec) is written by its repr
        return canonical_text(case.model_dump(by_alias=True, exclude_none=True,
                                              exclude_defaults=True, warnings=False))
    except (TypeError, ValueError, RecursionError):
        return None


#: What a content hash starts with: the algorithm, so a later one can be told apart.
DATASET_HASH_PREFIX = "sha256:"


def dataset_hash(ids: Sequence[str], texts: Sequence[bytes | None]) -> str | None:
    """The content hash of a suite's cases (``ids`` and their :func:`case_text`, in file
    order): ``sha256:`` and the SHA-256 of the JSON array of the cases sorted by id (in
    code-point order: Python's ``sorted`` of the ids), which is exactly
    ``json.dumps(cases, sort_keys=True, ensure_ascii=False)`` in UTF-8, so an auditor can
    make it again (docs/format.md#dataset-hash). The scheme is fixed for this format; one
    made otherwise would start with another prefix. None when a case could not be
    written."""
    by_id: dict[str, bytes] = {}
    for case_id, text in zip(ids, texts, strict=True):
        if text is None:
            return None
        by_id[case_id] = text  # ids are unique in a valid suite
    # the ids alone are sorted: a list of str sorts fastest (a cold 100,000-case suite)
    digest = hashlib.sha256(b"[" + b", ".join([by_id[i] for i in sorted(by_id)]) + b"]")
    return DATASET_HASH_PREFIX + digest.hexdigest()
