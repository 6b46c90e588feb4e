"""A mock model for offline tests (docs/mock.md): scripted answers, from Python or behind a
local server that speaks OpenAI's and Anthropic's HTTP APIs, and what the application sent.

``MockModel`` answers from a script; ``MockServer`` serves one on loopback; the fixtures
``elizon_mock_model`` and ``elizon_mock_server`` make them per test.
Its modules are internal: the public API is the names below (``from
pytest_elizon_eval.mock import MockModel``), imported when first used, so the plugin
registers the fixtures at start-up and a session that uses neither never imports the
model or ``http.server``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .model import (
        MockModel,
        MockRequest,
        MockResponse,
        MockScriptExhausted,
        MockToolCall,
        MockToolResult,
        MockUsage,
        ResponseLike,
    )
    from .server import MockServer, RecordedRequest

__all__ = ["MockModel", "MockRequest", "MockResponse", "MockScriptExhausted", "MockServer",
           "MockToolCall", "MockToolResult", "MockUsage", "RecordedRequest", "ResponseLike"]

_HOME = {"MockModel": "model", "MockRequest": "model", "MockResponse": "model",
         "MockScriptExhausted": "model", "MockToolCall": "model", "MockToolResult": "model",
         "MockUsage": "model", "ResponseLike": "model", "MockServer": "server",
         "RecordedRequest": "server"}


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module 'pytest_elizon_eval.mock' has no attribute {name!r}")
    return getattr(importlib.import_module(f".{_HOME[name]}", __name__), name)
