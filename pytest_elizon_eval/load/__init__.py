"""Load and validate: Elizon packages, suites and data files read into checked models.

Its modules are internal: the public API is ``pytest_elizon_eval`` itself.
"""
