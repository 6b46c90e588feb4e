"""The handbook-rag example: a deterministic retriever and grader (no network, no model)."""
