"""Collect: the pytest side of a session: nodes, options, the session's state and
the plugin's hooks.

Its modules are internal: the public API is ``pytest_elizon_eval`` itself.
The pytest11 entry point is ``pytest_elizon_eval.plugin``.
"""
