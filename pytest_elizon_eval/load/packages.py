"""Elizon packages and suites as files: read, validate, and describe them.

Owns the step from a path on disk to validated data: a manifest becomes a
:class:`Package` (its name, entry and test sets with resolved paths), a
suite file becomes a :class:`LoadedSuite` (its cases, their lines and the
file's SHA-256 and its cases' content hash). A suite path must stay inside its package
folder.
Problems found while reading a file (an unquoted ``no``, a repeated key) are
reported together with its validation problems, in line order. Every failure
is an :class:`~.errors.ElizonError` with the documented code. No pytest
import here.
"""

from __future__ import annotations

import errno
import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import errors
from ..errors import ElizonError
from ..redteam import pack as redteam
from ..run.calls import Rates
from ..run.checks import CheckRef, check_refs
from . import common_forms, datafiles
from .content import case_text, dataset_hash
from .documents import LoadFailed, Problem, YamlMapping, YamlSequence
from .runtime import (
    AlignmentSpec,
    Case,
    CommandEntry,
    JudgeEndpoint,
    Manifest,
    RepeatUntil,
    SuiteRef,
    UrlEntry,
    from_model,
)

if TYPE_CHECKING:
    from ..agreement import LabelRow
    from .suite_cache import SuiteCache

__all__ = ["DEFAULT_VARIANT", "LoadedSuite", "Package", "SuiteSpec", "Variant", "checked_pins",
           "load_manifest", "load_suite", "run_variants", "standalone"]

MANIFEST_NAME = "elizon.yaml"


@dataclass(frozen=True)
class SuiteSpec:
    """A test set as its package declares it."""

    path: Path
    gate: str = "must-pass"
    baseline: dict[str, float] = field(default_factory=dict)
    #: 1-based line of the ``suite:`` key in the manifest (None for a stand-alone suite).
    declared_at: int | None = None
    #: Defaults for the cases' ``repeat`` and ``minPassRate``.
    repeat: int | RepeatUntil | None = None
    min_pass_rate: float | None = None
    #: For the probe pack: where its cases come from (``elizon:probes/<category>.yaml``),
    #: and the named input a probe's text is given as; ``path`` is then the pack's file.
    probe_source: str | None = None
    input_name: str | None = None
    #: ``authorBaseline.datasetHash``: the content hash of the cases the author's baseline
    #: was measured on (docs/format.md#dataset-hash), None when not given.
    baseline_dataset: str | None = None


@dataclass(frozen=True)
class Variant:
    """A package variant (docs/format.md#variants), as its runs and the ``elizon_variant``
    fixture see it: its name, the keyword arguments its entry point gets (``params``) and
    the registry prompt versions it pins (``prompts``)."""

    name: str
    params: dict[str, Any] = field(default_factory=dict)
    prompts: dict[str, str] = field(default_factory=dict)
    #: The variant the others are compared with.
    reference: bool = False
    #: Its failures never fail the run (``gate: advisory``).
    advisory: bool = False
    #: Its own entry point (None: the package's), and with an ``output: openai`` service
    #: the request's model and added body keys.
    entry: str | CommandEntry | UrlEntry | None = None
    model: str | None = None
    body: dict[str, Any] | None = None
    #: Where it is declared: the manifest line of its ``name``, or the option that added it.
    where: str = ""


@dataclass(frozen=True)
class AlignmentLabels:
    """A manifest's ``alignment:``: its settings and the labelled examples, read and checked
    when the manifest is loaded (docs/format.md#judge-alignment)."""

    spec: AlignmentSpec
    path: Path
    #: The labels file as messages and reports name it.
    display: str
    rows: tuple[LabelRow, ...]
    sha256: str
    #: 1-based line of ``alignment:`` in the manifest.
    line: int | None = None


@dataclass(frozen=True)
class Package:
    """A manifest (or a stand-alone suite file) and what it declares."""

    name: str
    folder: Path
    manifest: Path | None = None
    entry: str | CommandEntry | UrlEntry | None = None
    entry_line: int | None = None
    #: How a command's or service's answer is read, unless its entry says (``output:``).
    output: str = "text"
    #: Prices per 1M input, output and cache tokens, by model name (``prices:``).
    prices: dict[str, Rates] = field(default_factory=dict)
    judge: str | JudgeEndpoint | None = None
    judge_line: int | None = None
    suites: tuple[SuiteSpec, ...] = ()
    #: Strings no answer may reveal (``secrets:``), and the line of that key.
    secrets: tuple[str, ...] = ()
    secrets_line: int | None = None
    #: The manifest's ``version:`` (results files name it: docs/contract.md#provenance).
    version: str | None = None
    #: ``alignment:``: human labels for the package's judge (None: not given).
    alignment: AlignmentLabels | None = None
    #: ``variants:``, the reference first-marked (empty: the package has none).
    variants: tuple[Variant, ...] = ()


@dataclass(frozen=True)
class LoadedSuite:
    """A validated suite file."""

    cases: tuple[Case, ...]
    #: 1-based line of each case's ``- id:`` item, in order.
    lines: tuple[int, ...]
    sha256: str
    #: Each case's content as resume hashes it (:func:`.content.case_text`), in order.
    case_texts: tuple[bytes | None, ...]
    #: Every check the cases name (``expect.checks``), with its line.
    check_refs: tuple[CheckRef, ...] = ()
    #: The cases' content hash (:func:`.content.dataset_hash`), None if one could not be
    #: written; made with the case texts, so the suite cache keeps it too.
    content_hash: str | None = None


def _read(path: Path, display: str, code: str) -> tuple[Any, list[Problem], bytes]:
    """The file's data, the problems found while reading it that validation must join, and
    its bytes; a file that could not be read as a whole raises."""
    return _parse(_bytes(path, display, code), display, code)


def _bytes(path: Path, display: str, code: str) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise ElizonError(code, [f"{display}: cannot read the file: {exc.strerror}"]) from None


def _parse(data: bytes, display: str, code: str) -> tuple[Any, list[Problem], bytes]:
    from .loading import load_yaml  # deferred: PyYAML, only where a file is not in the cache

    try:
        return load_yaml(data), [], data
    except LoadFailed as exc:
        if not exc.complete:
            raise ElizonError.from_problems(code, display, exc.problems) from None
        return exc.data, exc.problems, data


def _in_line_order(*groups: list[Problem]) -> list[Problem]:
    """Problems from several checks as one list; on a shared line, earlier groups first."""
    return sorted((p for group in groups for p in group), key=lambda p: p.line or 0)


@dataclass(frozen=True)
class _ManifestLines:
    """Where a manifest's top-level keys and its suite references are (1-based lines):
    what its messages point at, kept in the suite cache with the manifest itself."""

    keys: dict[str, int]
    suites: tuple[int, ...]
    #: The line of each variant's ``name`` (docs/format.md#variants).
    variants: tuple[int, ...] = ()

    @classmethod
    def of(cls, data: Any, manifest: Manifest) -> _ManifestLines:
        variants: tuple[int, ...] = ()
        if manifest.variants is not None and isinstance(data.get("variants"), YamlSequence):
            variants = tuple(item.key_lines.get("name", item.line)
                             if isinstance(item, YamlMapping) else 0
                             for item in data["variants"])
        suites: tuple[int, ...] = ()
        if manifest.evaluation is not None:
            evaluation = data["evaluation"]
            if isinstance(evaluation.get("suites"), YamlSequence):
                suites = tuple(item.key_lines.get("suite", item.key_lines.get("probes",
                                                                              item.line))
                               for item in evaluation["suites"])
            else:
                suites = (evaluation.key_lines["suite"],)
        return cls(dict(data.key_lines) if isinstance(data, YamlMapping) else {}, suites,
                   variants)


def _validated_manifest(path: Path, display: str, cache: SuiteCache | None
                        ) -> tuple[Manifest, _ManifestLines]:
    """The manifest's validated content and its lines, from the suite cache when its bytes
    were validated before (then the file is not parsed at all)."""
    code = errors.ELIZON_MANIFEST_INVALID
    raw = _bytes(path, display, code)
    found = cache.get("manifest", path, raw) if cache is not None else None
    if isinstance(found, tuple) and len(found) == 2 and isinstance(found[0], Manifest) \
            and isinstance(found[1], _ManifestLines):
        return found[0], found[1]
    data, read_problems, raw = _parse(raw, display, code)
    # the common form needs no pydantic; any other is the model's (docs/performance.md)
    manifest = None if read_problems else common_forms.manifest(data)
    if manifest is None:
        from . import model  # deferred: pydantic, only for a file not validated before

        validated, problems = model.validate(model.Manifest, data, model.manifest_shape)
        problems = _in_line_order(read_problems, problems)
        if problems or validated is None:
            raise ElizonError.from_problems(code, display, problems)
        manifest = from_model(validated)
    lines = _ManifestLines.of(data, manifest)
    if cache is not None:
        cache.put("manifest", path, raw, (manifest, lines))
    return manifest, lines


def load_manifest(path: Path, display: str, cache: SuiteCache | None = None) -> Package:
    """Read and validate ``elizon.yaml``; suite paths are resolved and must stay inside the
    package folder (a missing suite is left for the caller to report)."""
    code = errors.ELIZON_MANIFEST_INVALID
    manifest, lines = _validated_manifest(path, display, cache)
    problems: list[Problem] = []
    folder = path.parent
    suites: list[SuiteSpec] = []
    if manifest.evaluation is not None:
        root = folder.resolve()
        seen: dict[Path, int] = {}
        for ref, line in zip(manifest.evaluation.refs(), lines.suites, strict=True):
            if ref.probes is not None:  # the shipped pack: one test set per category
                problems.extend(_add_probes(suites, ref, line, seen, root))
                continue
            assert ref.suite is not None  # guaranteed by manifest_shape
            suite_path = _suite_path(root, ref.suite)
            if isinstance(suite_path, str):
                problems.append(Problem(line, f"suite {ref.suite!r} {suite_path}"))
                continue
            if suite_path in seen:
                problems.append(Problem(line, f"suite {ref.suite!r} is listed twice "
                                              f"(first at line {seen[suite_path]})"))
                continue
            seen[suite_path] = line
            suites.append(SuiteSpec(suite_path, ref.gate, _metrics(ref), line,
                                    ref.repeat, ref.min_pass_rate,
                                    baseline_dataset=_baseline_dataset(ref)))
        if problems:
            raise ElizonError.from_problems(code, display, problems)
    variants = _variants(manifest, lines.variants, display)
    key_lines = lines.keys
    labels = None
    if manifest.alignment is not None:
        labels = _alignment_labels(manifest.alignment, folder, display,
                                   key_lines.get("alignment"))
    return Package(
        name=manifest.name or folder.name,
        folder=folder,
        manifest=path,
        entry=manifest.entry,
        entry_line=key_lines.get("entry"),
        output=manifest.output,
        prices={name: Rates(p.input, p.output, p.cache_read, p.cache_write)
                for name, p in (manifest.prices or {}).items()},
        judge=manifest.judge,
        judge_line=key_lines.get("judge"),
        suites=tuple(suites),
        secrets=tuple(manifest.secrets or ()),
        secrets_line=key_lines.get("secrets"),
        alignment=labels,
        version=manifest.version,
        variants=variants,
    )


#: The variant a package without ``variants:`` runs its own entry point as, when
#: ``--elizon-variant NAME=SPEC`` adds one to compare with it.
DEFAULT_VARIANT = "default"


def run_variants(package: Package, selected: tuple[str, ...],
                 added: tuple[tuple[str, str], ...]) -> tuple[Variant, ...]:
    """The variants ``package``'s cases run under this session, the reference marked (one,
    the first when none is): its own, as ``--elizon-variant`` selects (a name it does not
    declare is an error) and adds; none when it declares none and none is added."""
    found = list(package.variants)
    if added and not found:  # its own entry point is what the added ones are compared with
        found = [Variant(DEFAULT_VARIANT, where="the package's own entry point")]
    if selected and package.variants:
        known = {v.name for v in found} | {name for name, _ in added}
        unknown = [name for name in selected if name not in known]
        if unknown:
            raise ElizonError(errors.ELIZON_MANIFEST_INVALID, [
                f"--elizon-variant {unknown[0]}: package {package.name} declares no variant "
                f"{unknown[0]!r}; its variants: {', '.join(v.name for v in found)}"])
        found = [v for v in found if v.name in selected]
    for name, spec in added:
        if any(v.name == name for v in found):
            raise ElizonError(errors.ELIZON_MANIFEST_INVALID, [
                f"--elizon-variant {name}={spec}: {package.name} already has a variant "
                f"{name!r}; give the added one another name"])
        found.append(Variant(name, entry=spec, where=f"--elizon-variant {name}={spec}"))
    if not found:
        return ()
    # the one the others are gated against never is advisory (docs/format.md#variants)
    reference = next((v for v in found if v.reference), None) \
        or next((v for v in found if not v.advisory), found[0])
    return tuple(replace(v, reference=v is reference) for v in found)


def checked_pins(package: Package, variants: tuple[Variant, ...],
                 display: Callable[[Path], str]) -> None:
    """Every prompt version a variant pins is in the package's registry
    (docs/format.md#prompts), or ElizonError at the variant's line naming what there is."""
    pinned = [(v, name, version) for v in variants for name, version in v.prompts.items()]
    if not pinned:
        return
    from .prompts import load_registry  # deferred: only a package whose variants pin some

    registry = load_registry(package.folder, display)
    problems = []
    for variant, name, version in pinned:
        try:
            registry.prompt(name).version(version)
        except ElizonError as exc:
            problems.append(f"{variant.where}: variant {variant.name} pins {name}@{version}: "
                            + "; ".join(exc.lines))
    if problems:
        raise ElizonError(errors.ELIZON_MANIFEST_INVALID, problems)


def _variants(manifest: Manifest, lines: tuple[int, ...], display: str
              ) -> tuple[Variant, ...]:
    """The manifest's variants; two with one name, or two references, are its errors."""
    problems: list[Problem] = []
    seen: dict[str, int] = {}
    references: list[int] = []
    made: list[Variant] = []
    for spec, line in zip(manifest.variants or (), lines or [0] * len(manifest.variants or ()),
                          strict=True):
        if spec.name in seen:
            problems.append(Problem(line, f"variant {spec.name!r} is declared twice (first at "
                                          f"line {seen[spec.name]}); give each its own name"))
            continue
        seen[spec.name] = line
        if spec.reference:
            references.append(line)
            if spec.gate == "advisory":
                problems.append(Problem(line, f"variant {spec.name!r} is the reference and "
                                              "advisory: the others are gated against it, so "
                                              "it is gated itself; drop one of the two"))
        made.append(Variant(spec.name, dict(spec.params or {}), dict(spec.prompts or {}),
                            spec.reference, spec.gate == "advisory", spec.entry, spec.model,
                            spec.body, f"{display}:{line}" if line else display))
    if len(references) > 1:
        problems.append(Problem(references[1], "a second variant is marked reference: true "
                                               f"(the first at line {references[0]}); mark one"))
    if problems:
        raise ElizonError.from_problems(errors.ELIZON_MANIFEST_INVALID, display, problems)
    return tuple(made)


def _metrics(ref: SuiteRef) -> dict[str, float]:
    """The metrics of the set's ``authorBaseline`` (empty without one)."""
    return dict(ref.author_baseline.metrics) if ref.author_baseline is not None else {}


def _baseline_dataset(ref: SuiteRef) -> str | None:
    return ref.author_baseline.dataset_hash if ref.author_baseline is not None else None


def _alignment_labels(spec: AlignmentSpec, folder: Path, display: str, line: int | None
                      ) -> AlignmentLabels:
    """The labels file ``alignment:`` names, read and checked; ElizonError at the manifest's
    line for a path that cannot be used, at the labels file's lines for bad rows."""
    where = f"{display}:{line}" if line else display
    found = _suite_path(folder.resolve(), spec.labels)
    if isinstance(found, str):
        raise ElizonError(errors.ELIZON_ALIGNMENT_INVALID, [
            f"{where}: alignment labels {spec.labels!r} {found.replace('suites', 'files')}"])
    shown = (Path(display).parent / spec.labels).as_posix()
    try:
        raw = found.read_bytes()
    except OSError as exc:
        raise ElizonError(errors.ELIZON_ALIGNMENT_INVALID, [
            f"{where}: alignment labels {spec.labels!r}: cannot read the file: "
            f"{exc.strerror}"]) from None
    from ..agreement import LabelsProblem, read_labels  # deferred: only with alignment:

    try:
        rows = read_labels(raw, shown, found.suffix.lower(), spec.threshold)
    except LabelsProblem as exc:
        raise ElizonError(errors.ELIZON_ALIGNMENT_INVALID, exc.lines) from None
    return AlignmentLabels(spec, found, shown, tuple(rows), hashlib.sha256(raw).hexdigest(),
                           line)


def _add_probes(suites: list[SuiteSpec], ref: SuiteRef, line: int, seen: dict[Path, int],
                root: Path) -> list[Problem]:
    """The probe pack's categories (and the operator's own probe files) a ``probes:`` item
    includes, as test sets."""
    problems = []
    for item in ref.probes or ():
        if item in redteam.CATEGORIES:
            path, where = redteam.pack_file(item), redteam.source(item)
        else:  # the operator's own file, in the package like any suite
            found = _suite_path(root, item)
            if isinstance(found, str):
                problems.append(Problem(line, f"probe file {item!r} {found}"))
                continue
            path, where = found, found.relative_to(root).as_posix()
        if path in seen:
            problems.append(Problem(line, f"probes {item!r} are included twice "
                                          f"(first at line {seen[path]})"))
            continue
        seen[path] = line
        suites.append(SuiteSpec(path, ref.gate, _metrics(ref), line,
                                ref.repeat, ref.min_pass_rate, probe_source=where,
                                input_name=ref.input_name,
                                baseline_dataset=_baseline_dataset(ref)))
    return problems


def _suite_path(root: Path, written: str) -> Path | str:
    """The resolved path of a suite the manifest names, or what is wrong with it.

    A package's suites ship inside the package: a path that leaves its folder (``..``,
    absolute, or through a symlink) is refused before anything is read from it. A path
    that does not exist is returned as is: the caller reports it as missing.
    """
    if "\0" in written:
        return "contains a NUL byte"
    try:
        resolved = (root / written).resolve()
    except RuntimeError:  # a symlink loop, up to Python 3.12
        return "is a symlink loop"
    except (OSError, ValueError) as exc:  # 3.13 reports a loop as OSError(ELOOP)
        return _unusable(exc)
    if not resolved.is_relative_to(root):
        return "is outside the package folder; a package's suites ship inside it"
    try:
        resolved.stat()
    except (FileNotFoundError, NotADirectoryError):
        pass  # missing: EVALUATION_SUITE_MISSING, from the caller
    except (OSError, ValueError) as exc:  # checked now, so the caller's is_file() cannot fail
        return _unusable(exc)
    return resolved


def _unusable(exc: OSError | ValueError) -> str:
    code = getattr(exc, "errno", None)
    if code == errno.ELOOP:
        return "is a symlink loop"
    if code == errno.ENAMETOOLONG:
        return "is a path too long for this system"
    reason = getattr(exc, "strerror", None) or str(exc)
    return f"cannot be used: {reason}"


def standalone(path: Path) -> Package:
    """A suite file collected on its own (``elizon_suite_files``): gate must-pass, no entry."""
    name = path.name.split(".")[0]
    return Package(name=name, folder=path.parent, suites=(SuiteSpec(path),))


def load_suite(path: Path, display: str, cache: SuiteCache | None = None) -> LoadedSuite:
    """Read and validate a suite file; every problem is reported at once. With ``cache``,
    a file whose bytes were validated before is read back from it, not parsed again."""
    code = errors.EVALUATION_SUITE_INVALID
    if cache is not None:
        try:
            found = cache.get("suite", path, path.read_bytes())
        except OSError:
            found = None  # reported by the reader below, as without the cache
        if isinstance(found, LoadedSuite):
            return found
    data_file = datafiles.is_data_file(path)
    data, read_problems, raw = (datafiles.read(path, display, code) if data_file
                                else _read(path, display, code))
    # the common form needs no pydantic; any other is the model's (docs/performance.md)
    cases = None if read_problems or data_file else common_forms.suite_cases(data)
    if cases is None:
        from . import model  # deferred: pydantic, only for a file not validated before

        suite, problems = model.validate(model.Suite, data, model.suite_checks)
        problems = _in_line_order(read_problems, problems)
        if problems or suite is None:
            raise ElizonError.from_problems(code, display, problems)
        cases = from_model(suite.cases)
    validated = tuple(cases)
    texts = tuple(case_text(case) for case in validated)
    loaded = LoadedSuite(
        cases=validated,
        lines=tuple(data["cases"].item_lines),
        sha256=hashlib.sha256(raw).hexdigest(),
        check_refs=check_refs(data),
        case_texts=texts,
        content_hash=dataset_hash([case.id for case in validated], texts),
    )
    if cache is not None:  # keyed on the bytes it was validated from
        cache.put("suite", path, raw, loaded)
    return loaded
