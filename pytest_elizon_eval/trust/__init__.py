"""Trust: results files signed, read back as evidence, and what they say about how they were made.

Its modules are internal: the public API is ``pytest_elizon_eval`` itself.
"""
