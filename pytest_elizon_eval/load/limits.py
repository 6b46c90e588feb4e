"""Limits and patterns of the file formats that the runtime and the pydantic-free
validation of the common forms read too (no pydantic, no pytest here)."""

from __future__ import annotations

import re

__all__ = ["CASE_ID_PATTERN", "DATASET_HASH_PATTERN", "MAX_LABEL", "MAX_PRICE", "MAX_REPEAT",
           "RESERVED_TAGS", "TAG_PATTERN", "VARIANT_NAME"]

#: Longest label ``expect.label`` / ``expect.route`` may name (every report's tables show it).
MAX_LABEL = 200
#: The most a price may be, in US dollars per 1M tokens: with token counts of at most 64
#: bits, a cost worked out from prices then stays a finite number, however large.
MAX_PRICE = 1_000_000.0
#: Most runs of one case ``repeat`` may ask for.
MAX_REPEAT = 100
#: A case id: lowercase words joined by hyphens.
CASE_ID_PATTERN = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
#: A tag is a pytest marker: a word.
TAG_PATTERN = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")
#: pytest's own markers: a tag with one of these names would change how the case runs.
RESERVED_TAGS = frozenset({"skip", "skipif", "xfail", "parametrize", "usefixtures",
                           "filterwarnings", "tryfirst", "trylast"})
#: A suite's content hash as ``elizon-eval dataset hash`` prints it and ``authorBaseline``'s
#: ``datasetHash`` names it (docs/format.md#dataset-hash): lowercase, so one dataset has one
#: spelling and two hashes compare as text.
DATASET_HASH_PATTERN = re.compile(r"^sha256:[0-9a-f]{64}$")
#: A variant's name: what pytest writes between the brackets of ``case[variant]``, and
#: what ``-k`` and file names take as it is (docs/format.md#variants).
VARIANT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
