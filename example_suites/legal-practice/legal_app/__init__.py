"""legal-practice-v1's deterministic stand-ins: a router + answerer, and a rubric judge."""
