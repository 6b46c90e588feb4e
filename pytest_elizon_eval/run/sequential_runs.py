"""Run a ``repeat: {max: N, until: decided}`` case until its sequential test decides.

Runs start one at a time, or up to ``plan.run_width`` at once under
``--elizon-concurrency`` (never more than that many past the first unfinished run); the
test reads the runs in the order they were started (the longest finished prefix), so the
decision is the same however they overlap.
Once it decides nothing new starts, and the runs already under way are waited for and
counted: every run that was started is reported (docs/contract.md#repeat-runs).
No pytest import here.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..decide.outcomes import PASSED, attempt_outcome

if TYPE_CHECKING:  # types only: running imports this module
    from .calls import EntryCall
    from .running import Attempt, CasePlan

__all__ = ["until_decided"]

RunOnce = Callable[["CasePlan", "tuple[EntryCall, ...] | None"], "Attempt"]


def _decided(plan: CasePlan, attempts: list[Attempt]) -> bool:
    assert plan.sequential is not None
    expects_error = bool(plan.case.expect and plan.case.expect.error_contains is not None)
    passes = (attempt_outcome(a, expects_error) == PASSED for a in attempts)
    return plan.sequential.decide(passes)[0] is not None


def until_decided(plan: CasePlan, run_once: RunOnce) -> tuple[Attempt, ...]:
    """Every run started for ``plan``, in the order started."""
    limit = plan.repeat if plan.replay is None else min(plan.repeat, len(plan.replay))

    def one(index: int) -> Attempt:
        return run_once(plan, plan.replay[index] if plan.replay is not None else None)

    width = max(1, min(plan.run_width, limit))
    if width == 1:
        attempts: list[Attempt] = []
        while len(attempts) < limit:
            attempts.append(one(len(attempts)))
            if _decided(plan, attempts):
                break
        return tuple(attempts)
    done: dict[int, Attempt] = {}
    prefix: list[Attempt] = []
    finished: queue.SimpleQueue[tuple[int, Attempt | BaseException]] = queue.SimpleQueue()

    def work(index: int) -> None:
        try:
            finished.put((index, one(index)))
        except BaseException as exc:  # delivered to the waiting thread, which raises it
            finished.put((index, exc))

    started = under_way = 0
    decided = False
    while True:
        # At most ``width`` runs past the finished prefix: a slow run holds the window, so
        # at most width - 1 runs past the deciding one are ever started. Daemon threads, as
        # the case slots are: after -x or Ctrl-C a run under way is abandoned, not awaited.
        while not decided and started < min(limit, len(prefix) + width):
            threading.Thread(target=work, args=(started,), daemon=True,
                             name="elizon-run").start()
            started += 1
            under_way += 1
        if not under_way:
            break
        index, got = finished.get()
        under_way -= 1
        if isinstance(got, BaseException):
            raise got
        done[index] = got
        grew = False
        while len(prefix) in done:
            prefix.append(done[len(prefix)])
            grew = True
        decided = decided or (grew and _decided(plan, prefix))
    return tuple(done[index] for index in range(started))
