"""Decide: a case's outcome, its result as a record, and the words reports print.

Its modules are internal: the public API is ``pytest_elizon_eval`` itself.
"""
