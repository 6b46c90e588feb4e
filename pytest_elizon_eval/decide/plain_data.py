"""A case's data for its report, copied without the JSON round trip of
:func:`~.results_data.encodable` where it is plain already.

The round trip makes any value plain, but it makes every string of the case anew: pytest
keeps every report for the whole session, so each case would be held twice, once as its
result and once as its report's data (and the interpreter frees both at exit). A case's
data is nearly always plain: its copy here shares the result's strings. No pytest import.
"""

from __future__ import annotations

from typing import Any

__all__ = ["plain_copy"]

#: Integers past this go the checked way (a number too long to write is not plain).
_BIG = 2 ** 63


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
    try:  # one walk that checks as it copies: what it cannot vouch for goes the round trip
        return _copy(value)
    except (_NotPlain, RecursionError):
        return None


def _encodes(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate
        return False
    return True


def _copy(value: Any) -> Any:
    # ASCII strings, booleans and None, most of a case's values, are taken where they
    # stand: no call for each
    if isinstance(value, dict):
        copied: dict[str, Any] = {}
        for key, item in value.items():
            if type(key) is not str or not (key.isascii() or _encodes(key)):
                raise _NotPlain
            copied[key] = item if type(item) in _SHARED \
                or (type(item) is str and item.isascii()) else _checked(item)
        return copied
    if type(value) is list:  # a tuple (a list once rebuilt) goes the round trip
        return [item if type(item) in _SHARED or (type(item) is str and item.isascii())
                else _checked(item) for item in value]
    return _checked(value)


#: What is plain whatever its value.
_SHARED = frozenset({bool, type(None)})


def _checked(value: Any) -> Any:
    kind = type(value)
    if kind is str:
        if value.isascii() or _encodes(value):
            return value
    elif kind is float:
        if value - value == 0.0:  # not NaN nor an infinity
            return value
    elif kind is int:
        if -_BIG < value < _BIG:
            return value
    elif kind is bool or value is None:
        return value
    elif isinstance(value, dict) or kind is list:
        return _copy(value)
    raise _NotPlain  # a tuple, a subclass, what is not JSON: the round trip decides
