"""The error codes a user can see, and the exceptions that carry them.

Every code listed here is documented in README.md ("Error codes") and
docs/format.md. A code is
always the first word of the message, so it can be grepped in CI logs.
"""

from __future__ import annotations

from collections.abc import Iterable

from .loading import Problem

__all__ = [
    "ELIZON_CASSETTE_MISSING",
    "ELIZON_CASSETTE_STALE",
    "ELIZON_ENTRY_INVALID",
    "ELIZON_ENTRY_UNBOUND",
    "ELIZON_JUDGE_INVALID",
    "ELIZON_JUDGE_UNBOUND",
    "ELIZON_MANIFEST_INVALID",
    "EVALUATION_SUITE_INVALID",
    "EVALUATION_SUITE_MISSING",
    "ElizonError",
]

EVALUATION_SUITE_MISSING = "EVALUATION_SUITE_MISSING"
EVALUATION_SUITE_INVALID = "EVALUATION_SUITE_INVALID"
ELIZON_MANIFEST_INVALID = "ELIZON_MANIFEST_INVALID"
ELIZON_ENTRY_UNBOUND = "ELIZON_ENTRY_UNBOUND"
ELIZON_ENTRY_INVALID = "ELIZON_ENTRY_INVALID"
ELIZON_JUDGE_UNBOUND = "ELIZON_JUDGE_UNBOUND"
ELIZON_CASSETTE_MISSING = "ELIZON_CASSETTE_MISSING"
ELIZON_CASSETTE_STALE = "ELIZON_CASSETTE_STALE"
ELIZON_JUDGE_INVALID = "ELIZON_JUDGE_INVALID"


class ElizonError(Exception):
    """A problem the user must fix, shown as ``CODE: message`` lines without a traceback."""

    def __init__(self, code: str, lines: Iterable[str]) -> None:
        self.code = code
        #: The messages without the code; :attr:`lines` with it, as shown.
        self.messages = list(lines)
        self.lines = [f"{code}: {line}" for line in self.messages]
        super().__init__("\n".join(self.lines))

    @classmethod
    def from_problems(cls, code: str, display: str, problems: Iterable[Problem]) -> ElizonError:
        """One ``CODE: file:line: what`` line per problem."""
        return cls(code, [
            f"{display}:{p.line}: {p.message}" if p.line else f"{display}: {p.message}"
            for p in problems
        ])
