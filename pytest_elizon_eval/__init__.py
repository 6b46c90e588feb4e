"""pytest-elizon-eval: Elizon evaluation suites as ordinary pytest tests.

The plugin itself is registered through the ``pytest11`` entry point
(``pytest_elizon_eval.plugin``); this package exposes the plain-data types
a conftest.py or a report consumer may want (``Variant``, ``PromptRecord``:
docs/format.md#variants), and what an agent's entry point
returns: ``Answer(text=…, value=…, tool_calls=[ToolCall(…)], usage=Usage(…))``,
and what it raises to be retried later: ``RateLimited(retry_after=…)``; and what
a hook implementer needs (docs/hooks.md): ``SuiteFile``, ``CaseItem``, ``CaseChecks``
and ``ElizonSession``. Only these names are public, and ``pytest_elizon_eval.mock`` (a
scripted model and a local server for offline tests, docs/mock.md); the other
sub-packages (load, collect, bind, run, decide, reporting, trust, redteam, importers,
history, measures) are internal.
Names are imported when first used, so ``elizon-eval`` starts without loading
the models the plugin needs.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .collect.nodes import CaseItem, SuiteFile
    from .collect.session import ElizonSession
    from .decide.outcomes import CaseResult, SuiteInfo
    from .decide.results_data import PromptRecord
    from .load.packages import Variant
    from .run.assertions import AssertionResult
    from .run.calls import Answer, EntryCall, ErrorInfo, ToolCall, Usage
    from .run.planning import CaseChecks
    from .run.retrying import RateLimited

__all__ = ["Answer", "AssertionResult", "CaseChecks", "CaseItem", "CaseResult", "ElizonSession",
           "EntryCall", "ErrorInfo", "PromptRecord", "RateLimited", "SuiteFile", "SuiteInfo",
           "ToolCall", "Usage", "Variant", "__version__"]

#: The one place the version is written: pyproject.toml reads it from here (setuptools'
#: ``attr:``), so no session pays for reading the installed package's metadata.
__version__ = "0.1.0"

_HOME = {"Answer": "run.calls", "EntryCall": "run.calls", "ErrorInfo": "run.calls",
         "ToolCall": "run.calls", "Usage": "run.calls", "AssertionResult": "run.assertions",
         "CaseChecks": "run.planning", "RateLimited": "run.retrying",
         "CaseResult": "decide.outcomes", "SuiteInfo": "decide.outcomes",
         "SuiteFile": "collect.nodes", "CaseItem": "collect.nodes",
         "ElizonSession": "collect.session", "Variant": "load.packages",
         "PromptRecord": "decide.results_data"}


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module 'pytest_elizon_eval' has no attribute {name!r}")
    return getattr(importlib.import_module(f".{_HOME[name]}", __name__), name)
