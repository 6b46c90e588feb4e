"""A deterministic judge for the example: it grades by overlap, not by a model.

The plugin sends its built-in rubrics (docs/contract.md#rag): "Faithfulness…" with the
passages in the input, "Answer relevancy…" with the question. Here faithfulness is the
share of the answer's sentences found in the passages, and relevancy the share of the
question's words the answer uses.
"""

from __future__ import annotations

import re

from handbook_rag.assistant import _words


def grade(rubric: str, case_input: dict, output: str) -> tuple[float, str]:
    if rubric.startswith("Faithfulness"):
        passages = " ".join(case_input["contexts"].values())
        sentences = [s for s in re.split(r"(?<=\.)\s+", output.strip()) if s]
        grounded = sum(1 for s in sentences if s in passages)
        return grounded / len(sentences), f"{grounded} of {len(sentences)} sentences grounded"
    asked = _words(case_input["question"])
    used = asked & _words(output)
    return len(used) / len(asked) if asked else 0.0, f"uses {sorted(used)}"
