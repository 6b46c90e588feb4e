"""Red team: the probe pack (probes/*.yaml), its canary and leak checks, and its pytest nodes.

Its modules are internal: the public API is ``pytest_elizon_eval`` itself.
"""
