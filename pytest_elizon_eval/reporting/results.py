"""The results JSON (``--elizon-results=PATH``): everything, for machines.

What it holds is docs/contract.md#reports.

The file's shape is the JSON Schema shipped beside this package
(``results.schema.json``); :func:`load` checks an earlier file against it
before it is used as a ``--elizon-baseline``.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import datetime, timezone
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from ..decide.results_data import CaseResult, file_case
from ..decide.wording import outcome_name
from ..load.documents import read_json
from . import compliance, security
from .aggregate import Aggregate
from .regression import Regression, verdict

__all__ = ["FORMAT", "Cases", "build", "check", "chunks", "load", "schema", "stream"]

FORMAT = "pytest-elizon-eval/results/v1"


@cache
def schema() -> dict[str, Any]:
    """The JSON Schema of a results file."""
    text = resources.files("pytest_elizon_eval").joinpath("results.schema.json").read_text(
        encoding="utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


class Cases:
    """A suite's cases in a document :func:`chunks` writes: made one at a time, each time
    the document is walked, never held as a list."""

    def __init__(self, make: Callable[[], Iterable[dict[str, Any]]]) -> None:
        self.make = make

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self.make())


def build(aggregate: Aggregate, regression: Regression | None = None, *,
          provenance: Mapping[str, Any] | None = None,
          reported: Mapping[str, Mapping[str, Any]] | None = None) -> dict[str, Any]:
    """The results file's data; ``provenance`` is docs/contract.md#provenance. ``reported``:
    the report data of cases by node id, where the caller holds it already (the history
    recorder): those cases are not serialised again."""
    data = stream(aggregate, regression, provenance=provenance, reported=reported)
    for suite in data["suites"]:
        suite["cases"] = list(suite["cases"])
    return data


def stream(aggregate: Aggregate, regression: Regression | None = None, *,
           provenance: Mapping[str, Any] | None = None,
           reported: Mapping[str, Mapping[str, Any]] | None = None) -> dict[str, Any]:
    """:func:`build`'s data with each suite's ``cases`` a :class:`Cases`: what
    :func:`chunks` writes without a second copy of every case in memory."""
    suites = []

    def case(result: CaseResult) -> dict[str, Any]:
        data = reported.get(result.nodeid) if reported is not None else None
        if data is None:
            kept = file_case(result)
        else:
            kept = {k: v for k, v in data.items() if k not in ("suite", "case_id")}
            kept["id"] = data["case_id"]
        # the name every report gives it (advisory_failed…): docs/contract.md#results-json
        kept["outcome"] = outcome_name(result)
        return kept

    for summary in aggregate.suites():
        info = summary.info
        suites.append({
            "package": info.package, "path": info.path, "sha256": info.sha256,
            "gate": info.gate, "advisory": info.advisory, "verdict": summary.verdict,
            "baseline": dict(info.baseline), "metrics": summary.metrics(),
            # docs/format.md#dataset-hash: the cases run, and those the baseline was taken on
            "case_count": info.case_count, "content_hash": info.content_hash,
            "baseline_dataset_hash": info.baseline_dataset_hash,
            **({"variants": list(info.variants),
                "advisory_variants": list(info.advisory_variants or ())}
               if info.variants else {}),
            "comparison": [{"metric": r.metric, "baseline": r.baseline, "run": r.run,
                            "delta": r.delta, "comparison": r.comparison,
                            "interval": r.interval.to_data() if r.interval else None,
                            "p_value": r.p_value, "noise": r.noise}
                           for r in summary.baseline_rows()],
            "intervals": {k: v.to_data() for k, v in summary.intervals().items()},
            "detectable_drop": drop.to_data() if (drop := summary.detectable_drop()) else None,
            "cases": Cases(functools.partial(map, case, summary.results)),
        })
        measured = summary.measures().to_data()
        if measured:  # docs/contract.md#task-metrics; suites without any keep their shape
            suites[-1]["measures"] = measured
    data: dict[str, Any] = {
        "format": FORMAT,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "verdict": dict(zip(("pass", "paragraph"), verdict(aggregate, regression),
                            strict=True)),
        "suites": suites,
    }
    found = security.build(aggregate)
    if found is not None:
        data["security"] = found
    rolled_up = compliance.build(aggregate)
    if rolled_up is not None:
        data["compliance"] = rolled_up
    if regression is not None:
        data["regression"] = regression.to_data()
    if provenance is not None:
        data["provenance"] = dict(provenance)
    compared = aggregate.variant_comparisons()
    if compared:  # docs/contract.md#variant-comparison
        data["variants"] = [c.to_data() for c in compared]
        # whether --elizon-fail-on-regression gated them: a reader's verdict is the run's
        data["verdict"]["variant_gate"] = aggregate.gate_variants
    return data


def chunks(value: Any, canonical: bool = False, level: int = 0,
           on_case: Callable[[str], None] | None = None) -> Iterator[str]:
    """``value`` (:func:`stream`'s data) as JSON text, piece by piece: the text of
    ``json.dumps(value, ensure_ascii=False, indent=2)`` — or, ``canonical``, of the
    signature's canonical form (:func:`..trust.signing.canonical`: keys sorted, no
    whitespace) — as if every :class:`Cases` were a list. One case's text at a time is
    made, so a file of 100,000 cases is written without holding them all. ``on_case`` is
    given each case's text as it is made (the signature's per-case digests)."""
    if isinstance(value, Cases):
        items: Iterable[Any] = value
        opened, closed = "[", "]"
    elif isinstance(value, dict) and _streams(value):
        keys = sorted(value) if canonical else list(value)
        items = ((k, value[k]) for k in keys)
        opened, closed = "{", "}"
    elif isinstance(value, list) and _streams(value):
        items, opened, closed = value, "[", "]"
    elif canonical:  # exactly what the verifier computes from the file's text
        from ..trust import signing  # deferred: only a signed file is made canonical

        yield signing.canonical(json.loads(json.dumps(value, ensure_ascii=False))).decode(
            "utf-8", "surrogatepass")
        return
    else:
        yield json.dumps(value, ensure_ascii=False, indent=2).replace(
            "\n", "\n" + "  " * level)
        return
    inner = "" if canonical else "\n" + "  " * (level + 1)
    first = True
    for item in items:
        yield (opened if first else ",") + inner
        first = False
        if opened == "{":
            key, item = item
            yield json.dumps(key, ensure_ascii=False) + (":" if canonical else ": ")
        if on_case is not None and isinstance(value, Cases):
            text = "".join(chunks(item, canonical, level + 1))  # one case: one piece
            on_case(text)
            yield text
        else:
            yield from chunks(item, canonical, level + 1, on_case)
    if first:
        yield opened + closed
    else:
        yield ("" if canonical else "\n" + "  " * level) + closed


def _streams(value: Any) -> bool:
    """Whether ``value`` holds a :class:`Cases` (so it is walked rather than dumped whole)."""
    if isinstance(value, Cases):
        return True
    if isinstance(value, dict):
        return any(_streams(v) for v in value.values())
    if isinstance(value, list):
        return any(_streams(v) for v in value)
    return False


def load(path: Path) -> dict[str, Any]:
    """An earlier results file, checked; ``ValueError`` says what is wrong with it."""
    return check(read_json(path))


@cache
def _validator() -> Any:
    """The schema's validator, built once: building it resolves the whole schema."""
    import jsonschema  # deferred: costs import time on every run, needed by few
    return jsonschema.Draft202012Validator(schema())


def check(data: Any) -> dict[str, Any]:
    """``data`` if it fits the results schema; ``ValueError`` says where it does not."""
    import jsonschema  # deferred: costs import time on every run, needed by few
    error = jsonschema.exceptions.best_match(_validator().iter_errors(data))
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "the top level"
        raise ValueError(f"not a pytest-elizon-eval results file (at {where}: "
                         f"{error.message[:200]})")
    result: dict[str, Any] = data
    return result
