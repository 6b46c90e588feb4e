"""Bind: what a case calls: its entry point and its judge, and foreign code
run under a deadline.

Its modules are internal: the public API is ``pytest_elizon_eval`` itself.
"""
