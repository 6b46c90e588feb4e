"""Cassettes safe to commit: no declared secret is ever written into one.

Recording (docs/contract.md#record-and-replay) replaces every occurrence (ignoring case) of
each declared secret (``secrets:`` and the ``elizon_secrets`` fixture) in what the entry
point returned with a placeholder naming the secret's place in the case's list,
``«elizon-secret:1»``. Replay puts the live value back before the case is checked, so a
leak recorded once is still a leak on every replay. A cassette recorded before this, that
holds a secret in plain text, is found on replay and reported. A snapshot
(docs/contract.md#snapshots) stores its output in the same form (:func:`scrub_text`), and
one written before that, that holds a secret in plain text (:func:`text_holds_secret`), is
reported too. No pytest import here.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from .calls import EntryCall

__all__ = ["PLACEHOLDER", "holds_secret", "restore", "scrub", "scrub_text",
           "text_holds_secret"]

#: What a recording keeps instead of the N-th (1-based) declared secret.
PLACEHOLDER = "«elizon-secret:{}»"
_PLACEHOLDER = re.compile(r"«elizon-secret:(\d+)»")


def _strings(value: Any, change: Any) -> Any:
    """``value`` with ``change`` applied to every string in it, mapping keys included: a
    structured answer or a tool call's arguments may hold a secret as a key."""
    if isinstance(value, str):
        return change(value)
    if isinstance(value, dict):
        return {change(k) if isinstance(k, str) else k: _strings(v, change)
                for k, v in value.items()}
    if isinstance(value, list):
        return [_strings(v, change) for v in value]
    return value


def _scrubber(secrets: Sequence[str]) -> Callable[[str], str]:
    """What replaces each secret's every occurrence (ignoring case) in a text by its
    placeholder."""
    # longest first, so a secret inside another is not cut out of it
    order = sorted(range(len(secrets)), key=lambda i: len(secrets[i]), reverse=True)
    pattern = re.compile("|".join(re.escape(secrets[i]) for i in order), re.IGNORECASE)
    folded = {s.casefold(): i for i, s in enumerate(secrets)}

    def change(text: str) -> str:
        return pattern.sub(lambda m: PLACEHOLDER.format(folded[m.group().casefold()] + 1),
                           text)

    return change


def scrub(recording: dict[str, Any], secrets: Sequence[str]) -> dict[str, Any]:
    """``recording`` (a cassette entry) with each secret's every occurrence, in every string
    of its runs, replaced by its placeholder."""
    if not secrets:
        return recording
    return {**recording, "runs": _strings(recording["runs"], _scrubber(secrets))}


def scrub_text(text: str, secrets: Sequence[str]) -> str:
    """``text`` with each secret's every occurrence replaced by its placeholder, as a
    cassette keeps it: the form a snapshot stores an output in."""
    return _scrubber(secrets)(text) if secrets else text


def text_holds_secret(text: str, secrets: Sequence[str]) -> bool:
    """Whether ``text`` holds a declared secret in plain text (ignoring case)."""
    folded = text.casefold()
    return any(s.casefold() in folded for s in secrets)


def _calls(replay: tuple[tuple[EntryCall, ...], ...], change: Any
           ) -> tuple[tuple[EntryCall, ...], ...]:
    return tuple(tuple(EntryCall.from_data(_strings(call.to_data(), change)) for call in run)
                 for run in replay)


def restore(replay: tuple[tuple[EntryCall, ...], ...], secrets: Sequence[str]
            ) -> tuple[tuple[EntryCall, ...], ...]:
    """The recorded calls with every placeholder replaced by the live secret it stands for
    (one whose number is past the list stays as it is)."""
    if not secrets:
        return replay

    def change(text: str) -> str:
        return _PLACEHOLDER.sub(
            lambda m: secrets[int(m.group(1)) - 1] if 0 < int(m.group(1)) <= len(secrets)
            else m.group(), text)

    return _calls(replay, change)


def holds_secret(replay: tuple[tuple[EntryCall, ...], ...], secrets: Sequence[str]) -> bool:
    """Whether a recording holds a declared secret in plain text (recorded before secrets
    were replaced by placeholders)."""
    if not secrets:
        return False
    found = False

    def look(text: str) -> str:
        nonlocal found
        found = found or text_holds_secret(text, secrets)
        return text

    _calls(replay, look)
    return found
