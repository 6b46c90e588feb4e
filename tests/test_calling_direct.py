"""The pure modules of the run path, called directly: calling, http_client, judging, binding.

No pytester runs here: what these modules decide is checked on their own, with deadlines
a few tenths of a second away and evidence (a generator's ``finally``, the error text)
rather than elapsed time.
"""

from __future__ import annotations

import asyncio
import re
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from pytest_elizon_eval.bind import calling
from pytest_elizon_eval.bind.binding import (
    ENTRY,
    JUDGE,
    Binder,
    Kind,
    Source,
    import_attribute,
    parse_text,
)
from pytest_elizon_eval.bind.calling import call_with_deadline, run_blocking
from pytest_elizon_eval.bind.http_client import HttpClient, HttpError
from pytest_elizon_eval.bind.judging import EndpointJudge
from pytest_elizon_eval.load.runtime import CommandEntry, JudgeEndpoint, UrlEntry
from pytest_elizon_eval.run import slots
from pytest_elizon_eval.run.answers import from_return as output_of
from pytest_elizon_eval.run.slots import SlotCall


def _soon(seconds: float = 5.0) -> float:
    return time.monotonic() + seconds


# -- a case's first call on its slot thread (run/slots.py) ----------------------------------

def test_a_slot_makes_the_first_call_itself_and_hands_off_the_next() -> None:
    threads: list[str] = []

    def entry(text: str) -> str:
        threads.append(threading.current_thread().name)
        return text

    def two_calls() -> list[str | None]:
        return [call_with_deadline(entry, (t,), {}, _soon(), output_of).text
                for t in ("a", "b")]

    slot = SlotCall()
    made = threading.Thread(target=lambda: threads.append(str(slots.running(slot, two_calls))),
                            name="elizon-case")
    made.start()
    made.join()
    assert threads == ["elizon-case", "elizon-entry", "['a', 'b']"]
    assert slot.state == SlotCall.DONE


def test_a_slot_call_that_ends_after_its_deadline_is_a_timeout() -> None:
    # nobody ended the case at the deadline (its item was busy): the late answer still
    # does not count
    call = slots.running(SlotCall(), lambda: call_with_deadline(
        lambda text: time.sleep(0.05) or text, ("x",), {}, time.monotonic() + 0.01, output_of))
    assert call.timed_out
    assert call.text is None


def test_an_abandoned_slot_call_ends_its_thread_and_the_case_runs_it_as_timed_out() -> None:
    release, begun = threading.Event(), threading.Event()

    def entry(text: str) -> str:
        begun.set()
        release.wait(10)
        return text

    slot = SlotCall()
    raised: list[BaseException] = []

    def run() -> None:
        try:
            slots.running(slot, lambda: call_with_deadline(entry, ("x",), {},
                                                           time.monotonic() + 0.05, output_of))
        except BaseException as exc:  # what the slot thread sees
            raised.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    assert begun.wait(10)
    assert not SlotCall().abandon()  # a call that has not begun is never abandoned
    while not slot.abandon():  # still under way: abandoned once its deadline has passed
        assert slot.state == SlotCall.CALLING
        assert time.monotonic() < slot.deadline
        time.sleep(0.01)
    assert slot.state == SlotCall.ABANDONED
    # the case runs again without the call, which is taken as timed out (never made)
    made: list[str] = []
    again = slots.running(SlotCall(SlotCall.TIMED_OUT), lambda: call_with_deadline(
        lambda text: made.append(text) or text, ("x",), {}, _soon(), output_of))
    assert again.timed_out
    assert made == []
    release.set()  # the stuck call returns at last: its thread drops the run
    thread.join(10)
    assert len(raised) == 1
    assert isinstance(raised[0], slots.SlotAbandoned)


# -- streams ---------------------------------------------------------------------------------

def test_a_stream_longer_than_the_cap_fails_and_is_closed(monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    monkeypatch.setattr(calling, "MAX_STREAM_CHARS", 10)
    closed = threading.Event()

    def stream(text: str) -> Iterator[str]:
        try:
            for _ in range(5):
                yield "abcd"
        finally:
            closed.set()

    call = call_with_deadline(stream, ("x",), {}, _soon(), output_of)
    assert call.error is not None
    assert call.error.text == ("OutputError: the entry point streamed more than 10 characters; "
                               "the stream was closed")
    assert closed.is_set()


def test_an_async_stream_longer_than_the_cap_fails_and_is_closed(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(calling, "MAX_STREAM_CHARS", 10)
    closed = threading.Event()

    async def stream(text: str) -> AsyncIterator[str]:
        try:
            for _ in range(5):
                await asyncio.sleep(0)
                yield "abcd"
        finally:
            closed.set()

    call = call_with_deadline(stream, ("x",), {}, _soon(), output_of)
    assert call.error is not None
    assert "streamed more than 10 characters" in call.error.message
    assert closed.is_set()


def test_a_stream_up_to_the_cap_is_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(calling, "MAX_STREAM_CHARS", 10)
    call = call_with_deadline(lambda text: iter(["abcde", "fghij"]), ("x",), {}, _soon(),
                              output_of)
    assert (call.error, call.text) == (None, "abcdefghij")


def test_an_endless_sync_stream_times_out_and_is_closed() -> None:
    closed = threading.Event()

    def endless(text: str) -> Iterator[str]:
        try:
            while True:
                time.sleep(0.001)
                yield "x"
        finally:
            closed.set()

    call = call_with_deadline(endless, ("x",), {}, _soon(0.2), output_of)
    assert call.timed_out
    assert call.latency_ms is None
    assert closed.wait(5), "the abandoned reader kept pulling chunks"


def test_an_endless_async_stream_times_out_and_is_closed() -> None:
    closed = threading.Event()

    async def endless(text: str) -> AsyncIterator[str]:
        try:
            while True:
                await asyncio.sleep(0.001)
                yield "x"
        finally:
            closed.set()

    call = call_with_deadline(endless, ("x",), {}, _soon(0.2), output_of)
    assert call.timed_out
    assert closed.wait(5), "the stream was left open on the event loop"


# -- HTTP: a refused connection says so --------------------------------------------------------

def _refused_url() -> str:
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}/v1"


def test_a_refused_connection_says_refused() -> None:
    url = _refused_url()
    client = HttpClient()
    try:
        with pytest.raises(HttpError) as caught:
            run_blocking(lambda: client.exchange("POST", url, {"input": "x"}, {},
                                                 deadline=_soon()), _soon())
    finally:
        client.close()
    assert str(caught.value) == f"connection refused by {url} (is the service running?)"


def test_a_judge_whose_endpoint_refuses_says_refused() -> None:
    url = _refused_url()
    judge = EndpointJudge(JudgeEndpoint.model_validate({"url": url, "model": "m"}))
    try:
        grade = judge.grade("rubric", "input", "output", deadline=_soon())
    finally:
        judge.close()
    assert grade.score is None
    assert not grade.timed_out
    assert grade.error == (f"connection refused by {url}/chat/completions "
                           "(is the service running?)")


# -- binding: text, imports, descriptions ------------------------------------------------------

def test_parse_text_accepts_specs_and_mappings_with_output() -> None:
    assert parse_text(" app.main:answer ", ENTRY) == "app.main:answer"
    command = parse_text("{command: [python3, app.py], output: json}", ENTRY)
    assert isinstance(command, CommandEntry)
    assert (command.command, command.output) == (["python3", "app.py"], "json")
    service = parse_text("{url: 'http://localhost:8000/a', output: json}", ENTRY)
    assert isinstance(service, UrlEntry)
    assert service.output == "json"
    judge = parse_text("{url: 'http://localhost:11434/v1', model: llama3.1}", JUDGE)
    assert isinstance(judge, JudgeEndpoint)


@pytest.mark.parametrize(
    ("text", "kind", "message"),
    [
        ("app.answer", ENTRY, "expected 'module.path:attribute'"),
        ("{command: [python3], output: xml}", ENTRY, "not a process entry {command, cwd, env, "
                                                     "output}: output: "),
        ("{url: 'ftp://x'}", ENTRY, "not an HTTP entry {url, method, headers, timeout, output}"),
        ("{url: 'http://x'}", JUDGE, "not a judge endpoint {url, model, apiKeyEnv}: model: "),
        ("{command: [", ENTRY, "not a valid YAML mapping"),
    ],
)
def test_parse_text_rejects_what_is_neither(text: str, kind: Kind, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        parse_text(text, kind)


@pytest.mark.parametrize(
    ("source", "at"),
    [
        ("import json\nRATE = 1 / 0\n", "(at {folder}/{name}.py:2: RATE = 1 / 0)"),
        ("import json\ndef answer(text:\n    return text\n",
         "(at {folder}/{name}.py:2: def answer(text:)"),
        # raised inside a library the module calls: still the module's own line
        ("import json\nCONFIG = json.loads('{broken')\n",
         "(at {folder}/{name}.py:2: CONFIG = json.loads('{broken'))"),
    ],
    ids=["runtime-error", "syntax-error", "error-inside-a-library"],
)
def test_an_import_error_names_the_failing_line_of_the_module(
    tmp_path: Path, request: pytest.FixtureRequest, source: str, at: str
) -> None:
    name = f"broken_{request.node.callspec.id.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text(source)
    with pytest.raises(ValueError, match=r"^cannot import") as caught:
        import_attribute(f"{name}:answer", [tmp_path])
    message = str(caught.value)
    assert message.startswith(f"cannot import {name!r} from {tmp_path.resolve()}: ")
    where = at.replace("{folder}", str(tmp_path.resolve())).replace("{name}", name)
    assert message.endswith(where), message


def test_a_spec_is_described_as_written(tmp_path: Path) -> None:
    (tmp_path / "described_app.py").write_text("def answer(text):\n    return text\n")
    binder = Binder(tmp_path)
    try:
        entry = binder.entry([Source("described_app:answer", "--elizon-entry")], tmp_path)
        assert entry.description == "described_app:answer"  # not "'described_app:answer'"
        # text bindings are made once per session
        assert binder.entry([Source("described_app:answer", "--elizon-entry")],
                            tmp_path) is entry
    finally:
        binder.close()
