"""The measures a task needs beyond pass/fail: classification reports, RAG metrics and
agent metrics (docs/contract.md#task-metrics).

Pure computations (:mod:`.classification`, :mod:`.rag`, :mod:`.agents`), one suite's
measures from its case results (:mod:`.suite`), how reports show them
(:mod:`.rendering`), and the pytest plugin that reads each case's label and contexts and
grades its RAG thresholds on the plugin's own ``pytest_elizon_case_checks`` hook
(:mod:`.hooks`).

Its modules are internal: the public API is ``pytest_elizon_eval`` itself.
"""
