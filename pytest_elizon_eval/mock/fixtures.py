"""The mock model's fixtures (docs/mock.md#fixtures), registered by the plugin at start-up.

Both are factories, so a test makes as many models or servers as it needs, each with its
own script; every server a test started is stopped when the test ends, each even if
stopping another failed, and then everything that went wrong is raised together. The
model and the server are imported when a test first asks for a fixture, not when pytest
starts.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from .model import MockModel, MockRequest, ResponseLike
    from .server import MockServer

__all__ = ["elizon_mock_model", "elizon_mock_server"]


@pytest.fixture
def elizon_mock_model() -> type[MockModel]:
    """A factory of scripted mock models: ``elizon_mock_model(responses, default=…,
    on_request=…)`` returns a new ``pytest_elizon_eval.mock.MockModel`` that answers each
    call with the next response (a string, a mapping or a ``MockResponse``) and records it
    in ``calls``.
    """
    from .model import MockModel  # deferred: the plugin's start-up never needs it

    return MockModel


@pytest.fixture
def elizon_mock_server() -> Iterator[Callable[..., MockServer]]:
    """A factory of mock model servers on 127.0.0.1: ``elizon_mock_server(responses,
    default=…, on_request=…)`` or ``elizon_mock_server(model=…)`` starts a ``MockServer``
    answering OpenAI chat completions and Responses at ``.url`` and Anthropic messages at
    ``.anthropic_url``; each is stopped when the test ends, which then fails if the model
    could not answer a request. ``on_request`` must return: stopping waits for every
    request being answered, so one that blocks blocks the test's teardown.
    """
    from .model import MockModel  # deferred: the plugin's start-up never needs them
    from .server import MockServer

    started: list[MockServer] = []

    def start(responses: Iterable[ResponseLike] | None = None, *,
              default: ResponseLike | None = None,
              on_request: Callable[[MockRequest], ResponseLike | None] | None = None,
              model: MockModel | None = None) -> MockServer:
        if model is not None and any(x is not None for x in (responses, default, on_request)):
            raise TypeError("elizon_mock_server takes a model or a script (responses, "
                            "default, on_request), not both")
        server = MockServer(model if model is not None else MockModel(
            responses if responses is not None else (), default=default,
            on_request=on_request))
        started.append(server.start())
        return server

    yield start
    _stop_all(started)


def _stop_all(servers: Sequence[MockServer]) -> None:
    """Stop every server, each whatever stopping the others did; then raise what went
    wrong — stopping, or answering — all of it: the one error, or several together (an
    ``ExceptionGroup`` on Python 3.11+, else one ``AssertionError`` naming each)."""
    problems: list[Exception] = []
    interrupted: BaseException | None = None
    for server in servers:
        try:
            server.stop()
        except Exception as exc:
            problems.append(exc)
        except BaseException as exc:  # Ctrl-C: the other servers are still stopped first
            interrupted = interrupted or exc
    if interrupted is not None:
        raise interrupted
    for server in servers:
        try:
            server.raise_errors()
        except AssertionError as exc:
            problems.append(exc)
    if len(problems) == 1:
        raise problems[0]
    if problems:
        what = f"{len(problems)} problems stopping the test's mock servers"
        group = getattr(builtins, "ExceptionGroup", None)  # Python 3.11+
        if group is not None:
            raise group(what, problems)
        raise AssertionError(what + ": " + "; ".join(  # pragma: no cover - Python 3.10
            f"{type(p).__name__}: {p}" for p in problems)) from problems[0]
