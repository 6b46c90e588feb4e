"""A case's data for its report, copied without the JSON round trip of
:func:`~.results_data.encodable` where it is plain already.

The round trip makes any value plain, but it makes every string of the case anew: pytest
keeps every report for the whole session, so each case would be held twice, once as its
result and once as its report's data (and the interpreter frees both at exit). A case's
data is nearly always plain: its copy here shares the result's strings. No pytest import.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["plain_copy"]

_SCALARS = frozenset({str, int, float, bool, type(None)})


class _NotPlain(Exception):
    pass


def plain_copy(value: Any) -> Any | None:
    """What :func:`~.results_data.encodable` makes of ``value`` — its JSON round trip: a
    copy of every container as a dict or list — sharing its strings and numbers instead of
    making new ones; None when only that round trip can make it (a lone surrogate, a NaN, a
    number too long to write, a value that is not JSON, a key that is not a string, a
    subclass of a string or number, a tuple). The copy's strings are ``value``'s own
    objects: a caller can tell from one of them that nothing was rewritten
    (``plugin.annotate``), where the round trip would have made a new one."""
    try:  # first, at C speed: no cycle, no depth past the limit, nothing unwritable
        json.dumps(value, ensure_ascii=False, allow_nan=False).encode("utf-8")
        return _copy(value)
    except (UnicodeEncodeError, TypeError, ValueError, RecursionError, _NotPlain):
        return None


def _copy(value: Any) -> Any:
    # scalars, most of a case's values, are taken where they stand: no call for each
    if isinstance(value, dict):
        for key in value:
            if type(key) is not str:
                raise _NotPlain
        return {key: item if type(item) in _SCALARS else _copy(item)
                for key, item in value.items()}
    if type(value) is list:  # a tuple (a list once rebuilt) goes the round trip
        return [item if type(item) in _SCALARS else _copy(item) for item in value]
    if type(value) in _SCALARS:
        return value
    raise _NotPlain
