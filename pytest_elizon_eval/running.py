"""Run one case: call the entry point under the case's deadline, check the assertions.

The whole of a case's life that is not pytest: the result is a plain
:class:`~.outcomes.CaseResult`, so cases can be run ahead of pytest's item
loop (concurrency) and reported from anywhere. No pytest import here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .assertions import check
from .calling import invoke
from .model import Case
from .outcomes import CaseResult, grade

__all__ = ["run_case"]


def run_case(case: Case, entry: Callable[..., Any], base: CaseResult) -> CaseResult:
    """Call ``entry`` with the case's input and grade it; ``base`` carries identity and limits."""
    call = invoke(entry, case.input, base.timeout_s)
    return grade(base, call, check(case.expect, call))
