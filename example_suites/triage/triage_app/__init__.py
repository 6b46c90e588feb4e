"""A deterministic, rule-based triage: the example package's application."""
