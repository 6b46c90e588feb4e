"""Reports of a run, written once by the process that owns the session.

``aggregate`` turns the case results that ride on test reports into
per-suite summaries and metrics; every other module renders that one
aggregate into one output. None of them imports pytest.

Its modules are internal: the public API is ``pytest_elizon_eval`` itself.
"""
