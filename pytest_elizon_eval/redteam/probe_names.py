"""The probe pack's categories and severities, in report order (no dependencies, so the
``elizon-eval`` command and the reports can name them without loading the pack)."""

from __future__ import annotations

__all__ = ["CATEGORIES", "SEVERITIES"]

CATEGORIES = ("prompt-injection", "jailbreak", "data-extraction", "persona-override",
              "instruction-bypass", "tool-misuse")
SEVERITIES = ("critical", "high", "medium", "low")
