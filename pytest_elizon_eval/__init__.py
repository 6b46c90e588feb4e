"""pytest-elizon-eval: Elizon evaluation suites as ordinary pytest tests.

The plugin itself is registered through the ``pytest11`` entry point
(``pytest_elizon_eval.plugin``); this package exposes the plain-data types
a conftest.py or a report consumer may want.
"""

from __future__ import annotations

from .assertions import AssertionResult
from .calls import EntryCall, ErrorInfo
from .outcomes import CaseResult, SuiteInfo

__all__ = ["AssertionResult", "CaseResult", "EntryCall", "ErrorInfo", "SuiteInfo"]
