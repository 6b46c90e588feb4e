"""The signal deadline of sync calls on the main thread, and its fallback to a worker thread
(docs/contract.md#at-the-deadline). Which path a call took is read from the thread it ran
on, never from elapsed time."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from pytest_elizon_eval.bind import signal_deadline
from pytest_elizon_eval.bind.calling import call_with_deadline
from pytest_elizon_eval.run.answers import from_return
from pytest_elizon_eval.run.calls import EntryCall

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")

LIMIT_S = 0.05


def hangs_in_c(ran: list[str]) -> None:
    ran.append(threading.current_thread().name)
    time.sleep(3600)


def loops_in_python(ran: list[str]) -> None:
    ran.append(threading.current_thread().name)
    while True:
        pass


def swallows_everything(ran: list[str]) -> None:
    ran.append(threading.current_thread().name)
    while True:
        try:  # noqa: SIM105 - the hostile entry point under test
            time.sleep(0.001)
        except BaseException:
            pass


def swallows_and_continues(ran: list[str]) -> None:
    ran.append(threading.current_thread().name)
    for _ in iter(int, 1):
        try:
            time.sleep(0.001)
        except BaseException:
            continue


def answers(ran: list[str]) -> str:
    ran.append(threading.current_thread().name)
    return "answered"


def call(fn: Callable[[list[str]], Any], limit_s: float = LIMIT_S) -> tuple[EntryCall, list[str]]:
    ran: list[str] = []
    return call_with_deadline(fn, (ran,), {}, time.monotonic() + limit_s, from_return), ran


@pytest.fixture
def restored() -> Iterator[None]:
    """Every test leaves SIGALRM, SIGINT, the timer and the trace function as it found them."""
    before = (signal.getsignal(signal.SIGALRM), signal.getsignal(signal.SIGINT),
              sys.gettrace())
    yield
    assert (signal.getsignal(signal.SIGALRM), signal.getsignal(signal.SIGINT),
            sys.gettrace()) == before
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


@pytest.mark.parametrize("fn", [hangs_in_c, loops_in_python, swallows_everything,
                                swallows_and_continues])
def test_a_hostile_call_on_the_main_thread_times_out(fn: Callable[[list[str]], Any],
                                                     restored: None) -> None:
    result, ran = call(fn)
    assert result.timed_out
    assert ran[0] == "MainThread"  # the signal path: no hand-off to a worker thread


def test_a_deadline_microseconds_away_still_interrupts_a_call_that_starts_late(
        restored: None) -> None:
    # The alarm can fire before the call's first line (still in run_signalled's frame): it
    # must come again, not be lost. Many tries, since when it fires is up to the kernel.
    results = [signal_deadline.run_signalled(lambda: time.sleep(0.5) or "finished",
                                             time.monotonic() + 5e-6) for _ in range(15)]
    assert results == [None] * 15


def test_an_answer_comes_from_the_main_thread_and_leaves_nothing_armed(restored: None) -> None:
    result, ran = call(answers)
    assert (result.text, ran) == ("answered", ["MainThread"])


def test_someone_elses_sigalrm_handler_means_the_worker_thread(restored: None) -> None:
    def theirs(signum: int, frame: object) -> None:
        raise AssertionError("not ours to fire")

    signal.signal(signal.SIGALRM, theirs)
    try:
        result, ran = call(answers)
        timed, hung = call(hangs_in_c)
        assert signal.getsignal(signal.SIGALRM) is theirs
    finally:
        signal.signal(signal.SIGALRM, signal.SIG_DFL)
    assert (result.text, ran) == ("answered", ["elizon-entry"])
    assert timed.timed_out
    assert hung == ["elizon-entry"]  # abandoned in its worker thread


def test_an_armed_timer_means_the_worker_thread(restored: None) -> None:
    signal.signal(signal.SIGALRM, signal.SIG_IGN)
    signal.setitimer(signal.ITIMER_REAL, 60)
    try:
        assert not signal_deadline.usable()
        signal.signal(signal.SIGALRM, signal.SIG_DFL)
        assert not signal_deadline.usable()  # the timer alone is someone else's too
        _, ran = call(answers)
        assert signal.getitimer(signal.ITIMER_REAL)[0] > 0  # left armed, as it was
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, signal.SIG_DFL)
    assert ran == ["elizon-entry"]


def test_off_the_main_thread_calls_use_the_worker_thread(restored: None) -> None:
    seen: list[tuple[EntryCall, list[str]]] = []
    thread = threading.Thread(target=lambda: seen.extend([call(answers), call(hangs_in_c)]),
                              name="slot")
    thread.start()
    thread.join()
    [(result, ran), (timed, hung)] = seen
    assert (result.text, ran) == ("answered", ["elizon-entry"])
    assert timed.timed_out
    assert hung == ["elizon-entry"]


def test_a_real_ctrl_c_the_call_swallows_still_stops_the_session(restored: None) -> None:
    def swallows_ctrl_c(ran: list[str]) -> str:
        try:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(3600)
        except KeyboardInterrupt:
            ran.append("swallowed")
        return "answered anyway"

    # Ctrl-C as a terminal gives it, even when this process inherited SIGINT ignored (a
    # shell's background job), where the signal would never arrive
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            call(swallows_ctrl_c, limit_s=30)
    finally:
        signal.signal(signal.SIGINT, previous)


def test_its_own_keyboard_interrupt_is_the_entry_points_error(restored: None) -> None:
    def raises_it(ran: list[str]) -> str:
        raise KeyboardInterrupt

    result, _ = call(raises_it)
    assert result.error is not None
    assert "KeyboardInterrupt itself" in result.error.message


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork")
def test_a_forked_child_that_returns_never_goes_on_with_the_session(restored: None) -> None:
    parent = os.getpid()

    def forks(ran: list[str]) -> str:
        ran.append(str(os.fork()))
        return "answered"

    # 30 s: what the child does on its way back is the point, not a deadline; at 50 ms a
    # fork on a loaded machine outlived the limit, and the alarm landed in logging's at-fork
    # handler in the parent ("Exception ignored", an error here)
    result, ran = call(forks, limit_s=30)
    if os.getpid() != parent:  # the child got here: the session would go on in it
        os._exit(7)
    _, status = os.waitpid(int(ran[0]), 0)
    assert os.waitstatus_to_exitcode(status) == 0  # ended as it came back from the call
    assert result.text == "answered"
