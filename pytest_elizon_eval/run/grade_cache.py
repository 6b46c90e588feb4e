"""Judge grades kept on disk, so an unchanged suite is graded once (docs/contract.md#grade-cache).

A grade is stored under a canonical key: the SHA-256 of the JSON of the judge's
identity (:func:`judge_identity`: its description — the model and endpoint, or the
callable's spec — and the grading prompt template's hash), the rubric, the input,
the output and the sample index. One file per key, written to a temporary file and
moved into place with ``os.replace``, so xdist workers (and parallel runs) share the
folder safely: a reader sees a whole grade or none. Only scores are kept; a judge's
error or timeout is asked again next time. The folder is bounded: past
``max_entries`` files the oldest (by modification time, which a read refreshes) are
removed. No pytest import here.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ..load.content import CANARY

if TYPE_CHECKING:  # the judges are made by the binder, which imports them
    from ..bind.judging import Grade, Judge

__all__ = ["CACHE_MODES", "GradeCache", "cache_key", "judge_identity", "prompt_template_hash"]

CacheMode = Literal["on", "off", "refresh"]
CACHE_MODES: tuple[CacheMode, ...] = ("on", "off", "refresh")
#: Grades kept before the oldest are removed (ini ``elizon_cache_max_entries``).
DEFAULT_MAX_ENTRIES = 20_000
#: Puts between two checks of the folder's size (a check lists the folder).
_CHECK_EVERY = 200


def prompt_template_hash() -> str:
    """The first 12 hex digits of the SHA-256 of what an endpoint judge is sent around the
    rubric, input and output: a changed prompt is another judge."""
    from ..bind.judging import GRADING_SYSTEM_PROMPT, grading_prompt  # deferred: as above

    template = GRADING_SYSTEM_PROMPT + "\0" + grading_prompt("{rubric}", "{input}", "{output}")
    return hashlib.sha256(template.encode()).hexdigest()[:12]


def judge_identity(judge: Judge) -> str:
    """Who grades: the judge's description (model and endpoint, or the callable's spec) and
    the prompt template's hash. Part of every grade's key, of alignment records, and of
    each results file's provenance."""
    return f"{judge.description} [prompt {prompt_template_hash()}]"


def _canonical(value: object) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"),
                      default=repr)


def cache_key(identity: str, rubric: str, case_input: object, output: str, sample: int) -> str:
    """The SHA-256 of the canonical JSON of every part a grade depends on (the run's canary
    written as ``{canary}``)."""
    text = _canonical({"judge": identity, "rubric": rubric, "input": case_input,
                       "output": output, "sample": sample})
    text = CANARY.sub("{canary}", text)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass
class GradeCache:
    """The grade folder of a session. ``on``: read and write; ``refresh``: grade anew and
    overwrite; ``off`` is no cache at all (None where a cache is expected)."""

    folder: Path
    mode: CacheMode = "on"
    max_entries: int = DEFAULT_MAX_ENTRIES

    def __post_init__(self) -> None:
        self._puts = 0
        self._lock = threading.Lock()

    def _path(self, key: str) -> Path:
        return self.folder / key[:2] / f"{key}.json"

    def get(self, key: str) -> Grade | None:
        """The stored grade of ``key``, or None (missing, unreadable, or ``refresh``)."""
        if self.mode != "on":
            return None
        path = self._path(key)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            score, reasoning = data["score"], data.get("reasoning", "")
        except (OSError, ValueError, KeyError, TypeError):
            return None  # a missing or torn file is a grade to ask for again
        if isinstance(score, bool) or not isinstance(score, (int, float)) \
                or not 0 <= score <= 1 or not isinstance(reasoning, str):
            return None
        with contextlib.suppress(OSError):  # a grade another worker just evicted
            os.utime(path)  # recently used: the last to be evicted
        from ..bind.judging import Grade  # deferred: as above

        return Grade(score=float(score), reasoning=reasoning)

    def put(self, key: str, grade: Grade) -> None:
        """Keep a scored grade (errors and timeouts are not kept); never raises."""
        if grade.score is None or self.mode == "off":
            return
        path = self._path(key)
        record: dict[str, Any] = {"score": grade.score, "reasoning": grade.reasoning}
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
            try:
                with os.fdopen(handle, "w", encoding="utf-8") as stream:
                    json.dump(record, stream)
                os.replace(temporary, path)
            except BaseException:
                Path(temporary).unlink(missing_ok=True)
                raise
        except OSError:
            return  # a cache that cannot be written only costs the next run a call
        with self._lock:
            self._puts += 1
            due = self._puts % _CHECK_EVERY == 1
        if due:
            self.evict()

    def entries(self) -> list[Path]:
        return [p for p in self.folder.glob("??/*.json") if p.is_file()]

    def evict(self) -> int:
        """Remove the oldest grades past ``max_entries``; how many were removed."""
        found = self.entries()
        if len(found) <= self.max_entries:
            return 0
        aged: list[tuple[float, Path]] = []
        for path in found:
            try:
                aged.append((path.stat().st_mtime, path))
            except OSError:
                continue  # removed by another worker meanwhile
        aged.sort()
        removed = 0
        for _, path in aged[:len(aged) - self.max_entries]:
            try:
                path.unlink()
                removed += 1
            except OSError:
                continue
        return removed
