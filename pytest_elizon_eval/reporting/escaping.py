"""The escaping every report of untrusted text shares, in one place below the renderers
that use it (markdown.py, html.py, variants.py): a markdown table cell, HTML text, and a
case's outcome class on the page (docs/contract.md#untrusted-text). No pytest import."""

from __future__ import annotations

import html

from ..decide.outcomes import INCONCLUSIVE, PASSED, CaseResult, blocks
from ..text import visible

__all__ = ["category", "cell", "html_text"]


def cell(text: str) -> str:
    """Text that stays inside one markdown table cell and renders as text."""
    text = html.escape(visible(text, keep_newlines=False), quote=False)
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("`", "\\`")


def html_text(text: str) -> str:
    """Untrusted text as HTML text or attribute value: visible (bidirectional controls
    escaped too, as in every report), and nothing in it is markup."""
    return html.escape(visible(text), quote=True)


def category(result: CaseResult) -> str:
    """What a case counts as on the page: its outcome, or ``advisory`` for a case of an
    advisory suite that did not pass and so does not fail the run."""
    if result.outcome != PASSED and not blocks(result) \
            and (result.outcome != INCONCLUSIVE or result.suite.advisory):
        return "advisory"
    return result.outcome
