"""The history store: every session's results kept in SQLite or PostgreSQL.

``store`` opens a store (schema, migrations, one dialect per backend) and writes and
reads its rows; ``recorder`` is the pytest plugin that records a session as it runs,
and resumes an unfinished one; ``queries`` answers ``elizon-eval history``.
docs/contract.md#history says what is kept and when.

Its modules are internal: the public API is ``pytest_elizon_eval`` itself.
"""
