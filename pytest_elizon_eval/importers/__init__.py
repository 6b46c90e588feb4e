"""Importers: other tools' configurations turned into Elizon packages (``elizon-eval import``).

Its modules are internal: the public API is ``pytest_elizon_eval`` itself.
"""
