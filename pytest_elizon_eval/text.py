"""Untrusted text made safe to show: what a model or an entry point produced.

Owns the escaping every renderer shares: control characters, DEL, C1
controls, U+FFFE/U+FFFF, lone surrogates and bidirectional controls become visible
escapes (``\\x1b``, ``\\ufffe``, ``\\ud800``, ``\\u202e``), so nothing a model prints can
move a terminal's cursor, corrupt an XML file, hide text or reorder it
(docs/contract.md#untrusted-text); and :func:`defuse` keeps
such text from starting a GitHub Actions workflow command when it is printed;
:func:`without_userinfo` keeps a URL's user name and password out of whatever names
the URL (a description, a message, a report, the provenance).
No pytest import here.
"""

from __future__ import annotations

import re

__all__ = ["NAME_KEPT", "cap", "defuse", "named", "visible", "without_userinfo"]

#: Characters of a name (a tool's, a model's, a tool call's id) a record keeps.
NAME_KEPT = 200

# C0 controls except TAB and LF, DEL, C1 controls, lone surrogates, non-characters, and
# the bidirectional controls (ALM, LRM, RLM, the embeddings, overrides and isolates): a
# U+202E in an output reads backwards on a terminal or a rendered page, in every report.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff"
                     "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str, *, keep_newlines: bool = True) -> str:
    """``text`` with every unsafe character replaced by a visible escape."""
    escaped = _UNSAFE.sub(_escape, text)
    if keep_newlines:
        return escaped
    return escaped.replace("\n", "\\n").replace("\t", "\\t")


def cap(text: str, limit: int) -> tuple[str, bool]:
    """The first ``limit`` characters of ``text``, and whether anything was cut."""
    if len(text) <= limit:
        return text, False
    return text[:limit], True


def named(text: str, limit: int = NAME_KEPT) -> str:
    """A name as a record keeps it: whole when at most ``limit`` characters, else its first
    ones and how long it was (``get_wea… (5,000,000 characters)``), so a multi-MB name an
    answer gave cannot swell every report that names it (docs/contract.md#results-json)."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text):,} characters)"


# A zero-width space is not whitespace to GitHub's runner (it trims whitespace before
# looking for "::"), so it breaks a command without changing what a person reads.
_ZWSP = "\u200b"
_COMMAND_AT_LINE_START = re.compile(r"^(\s*):(?=:)", re.MULTILINE)


def defuse(text: str) -> str:
    """``text`` that cannot start a workflow command on any of its lines: ``::`` at the
    start of a line and the legacy ``##[`` anywhere get a zero-width space in between.
    Use on text that is already :func:`visible` (so a bare CR cannot start a line)."""
    text = _COMMAND_AT_LINE_START.sub(lambda m: f"{m.group(1)}:{_ZWSP}", text)
    return text.replace("##[", f"##{_ZWSP}[")


#: A URL's ``scheme://``.
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://")
_QUERY = re.compile(r"[?#]")
_SPACE = re.compile(r"\s")


def _userinfo_end(text: str, start: int, end: int) -> int:
    """The ``@`` that ends the userinfo of the URL whose authority starts at ``start`` and
    which runs to ``end`` (-1: it has none). RFC 3986's authority, taken wide: it holds
    whatever comes before its last ``@`` — a ``?`` or ``#`` a parser would cut it at, a
    ``/`` or a space a person typed unescaped — and ends where a query or fragment starts
    after a ``/`` (so a ``?mail=a@b`` is no login)."""
    slash = text.find("/", start, end)
    if slash >= 0:
        query = _QUERY.search(text, slash, end)
        if query is not None:
            end = query.start()
    return text.rfind("@", start, end)


def without_userinfo(text: str) -> str:
    """``text`` with the user name and password of every URL in it replaced by ``***``:
    ``https://bob:hunter2@api.example/x`` is named ``https://***@api.example/x``. A text
    that is a URL is that URL to its end (a password may hold a space); a URL within a
    text ends at a space (docs/contract.md#http-entries)."""
    if "@" not in text:
        return text
    parts = []
    done = 0
    found = _SCHEME.search(text)
    while found is not None:
        start = found.end()
        space = None if found.start() == 0 else _SPACE.search(text, start)
        at = _userinfo_end(text, start, len(text) if space is None else space.start())
        if at >= 0:
            parts += [text[done:start], "***"]
            done = at  # a URL within the hidden part is hidden with it
        found = _SCHEME.search(text, max(start, done))
    return "".join(parts) + text[done:]
