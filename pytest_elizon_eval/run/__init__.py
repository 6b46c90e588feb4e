"""Run: one case from its plan — the call, its retries, its answer and the assertions on it.

Its modules are internal: the public API is ``pytest_elizon_eval`` itself.
"""
