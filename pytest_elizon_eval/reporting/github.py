"""GitHub Actions annotations (``--elizon-annotations=auto|on|off``).

One ``::error`` (must-pass) or ``::warning`` (advisory) per case that did not
pass, at the case's ``file`` and 1-based ``line``, escaped exactly as GitHub's
toolkit escapes (data: ``%``, CR, LF; properties also ``:`` and ``,``), each
message at most 4096 characters. GitHub keeps 10 annotations of a type per
step, so at most 10 of each are printed, most important first, then one
``::notice`` saying how many more are in the summary.

Everything else the session prints sits between ``::stop-commands::TOKEN``
(printed at session start) and ``::TOKEN::`` (printed just before the
annotations), and a second fence with a token nobody learns follows the
annotations for good, so nothing a model or an entry point prints — in a
failure message, in the captured output pytest replays, or from a call
abandoned at its deadline that keeps printing — can issue a command.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from ..decide.outcomes import (
    ERROR,
    FAILED,
    TIMEOUT,
    CaseResult,
    blocks,
    failure_message,
    inconclusive_passes,
    outcome_name,
)
from ..decide.wording import case_name
from .aggregate import Aggregate

__all__ = ["MAX_PER_TYPE", "MESSAGE_LIMIT", "Guard", "annotation_lines", "escape_data",
           "escape_property"]

MAX_PER_TYPE = 10
MESSAGE_LIMIT = 4096
_RANK = {FAILED: 0, TIMEOUT: 1, ERROR: 2}


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _capped_data(text: str, limit: int = MESSAGE_LIMIT) -> str:
    """``escape_data(text)``, cut on a whole character so it stays within ``limit``."""
    out: list[str] = []
    size = 0
    for char in text:
        piece = escape_data(char)
        if size + len(piece) > limit - 1:
            out.append("…")
            break
        out.append(piece)
        size += len(piece)
    return "".join(out)


@dataclass(frozen=True)
class Guard:
    """The stop-commands token of one session."""

    token: str

    @classmethod
    def new(cls) -> Guard:
        return cls(secrets.token_hex(16))

    @property
    def stop(self) -> str:
        return f"::stop-commands::{self.token}"

    @property
    def resume(self) -> str:
        return f"::{self.token}::"


def _line(kind: str, result: CaseResult) -> str:
    why = ""
    if inconclusive_passes(result) and not result.suite.advisory:  # a must-pass case
        why = " (passes by elizon_inconclusive = pass)"
    # the outcome as every report names it (advisory_failed…: docs/contract.md#outcomes)
    title = f"{case_name(result)}: {outcome_name(result)}{why}"
    if result.security and result.security.probe:  # at the manifest line with the pack
        probe = result.security.probe
        title = f"{case_name(result)}: compromised ({probe.category}, {probe.severity})"
    properties = ",".join([
        f"file={escape_property(result.suite.path.partition('::')[0])}",
        f"line={result.line}",
        f"title={escape_property(title)}",
    ])
    message = f"{result.nodeid}\n{failure_message(result)}"
    return f"::{kind} {properties}::{_capped_data(message)}"


def annotation_lines(aggregate: Aggregate) -> list[str]:
    """The workflow-command lines: errors, warnings, then a notice for what was left out."""
    failing = [r for s in aggregate.suites() for r in s.not_passed]
    lines: list[str] = []
    left_out = 0
    for kind, blocking in (("error", True), ("warning", False)):
        chosen = sorted((r for r in failing if blocks(r) is blocking),
                        key=lambda r: (_RANK.get(r.outcome, 3), r.suite.path, r.line))
        lines.extend(_line(kind, r) for r in chosen[:MAX_PER_TYPE])
        left_out += max(0, len(chosen) - MAX_PER_TYPE)
    if left_out:
        lines.append(f"::notice title={escape_property('elizon eval')}::{left_out} more cases "
                     "did not pass; they are listed in the step summary and the "
                     "'elizon eval' section of the log")
    return lines
