"""A package's versioned prompts: ``prompts/NAME.yaml`` read, checked and rendered.

Owns the prompt registry of docs/format.md#prompts: each file beside ``elizon.yaml`` in
``prompts/`` declares its ``variables`` and an ordered ``versions`` mapping of version to
template (the last listed is the default). Files are read as every Elizon file is
(:mod:`.loading`: safe, one document, duplicate keys refused; docs/format.md#yaml-reading)
and every problem of a file is reported at once as ``ELIZON_PROMPT_INVALID: file:line:
what`` (docs/format.md#message-shape). A template may use ``{{variable}}`` (spaces inside
the braces allowed) and nothing else; a version's content hash is the SHA-256 of its
template text (UTF-8), which results files record with the prompt's name and version
(:class:`~..decide.results_data.PromptRecord`). No pytest import here.
"""

from __future__ import annotations

import difflib
import hashlib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from ..decide.results_data import PromptRecord
from ..errors import ELIZON_PROMPT_INVALID, ElizonError
from .documents import LoadFailed, Problem, YamlMapping, YamlSequence

__all__ = [
    "PROMPTS_FOLDER",
    "Prompt",
    "PromptRegistry",
    "PromptVersion",
    "RenderedPrompt",
    "load_registry",
    "split_reference",
]

#: The folder, beside ``elizon.yaml``, that holds a package's prompts.
PROMPTS_FOLDER = "prompts"
#: A prompt's name (its file's stem) and a version's label: what ``NAME@VERSION``, a
#: variant's ``prompts:`` pin and the results name it by (docs/format.md#prompts).
PROMPT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
VERSION_LABEL = PROMPT_NAME
#: A declared variable: a Python identifier, so it can be given as a keyword argument.
VARIABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
#: ``{{ name }}``; any other ``{{`` is refused (docs/format.md#prompts: no other syntax,
#: so ``{{ x | upper }}`` never reaches a model as text).
_PLACEHOLDER = re.compile(r"\{\{[ \t]*([A-Za-z_][A-Za-z0-9_]*)[ \t]*\}\}")
_KEYS = ("variables", "versions")


@dataclass(frozen=True)
class PromptVersion:
    """One version of a prompt: its template and where it is written."""

    version: str
    template: str
    #: 1-based line of its key under ``versions:``.
    line: int
    #: SHA-256 of the template's UTF-8 text, hex.
    sha256: str
    #: The variables the template uses, in order of first use.
    uses: tuple[str, ...]


@dataclass(frozen=True)
class Prompt:
    """A prompt file: its declared variables and its versions, in file order."""

    name: str
    path: Path
    #: The file as messages name it.
    display: str
    variables: tuple[str, ...]
    #: 1-based line of ``variables:`` (the file's first line without one).
    variables_line: int
    versions: tuple[PromptVersion, ...]

    @property
    def default(self) -> PromptVersion:
        """The last version listed."""
        return self.versions[-1]

    def version(self, label: str | None) -> PromptVersion:
        """Version ``label`` (None: the default); ElizonError naming the versions there are."""
        if label is None:
            return self.default
        for found in self.versions:
            if found.version == label:
                return found
        raise ElizonError(ELIZON_PROMPT_INVALID, [
            f"{self.display}: prompt {self.name!r} has no version {label!r}"
            f"{_hint(label, self.labels)}; its versions: {', '.join(self.labels)}"])

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(v.version for v in self.versions)


@dataclass(frozen=True)
class RenderedPrompt:
    """A rendered prompt's text, and the record results keep of it."""

    text: str
    record: PromptRecord


@dataclass(frozen=True)
class PromptRegistry:
    """The prompts of one package, by name; immutable once loaded."""

    folder: Path
    #: The ``prompts`` folder as messages name it.
    display: str
    prompts: Mapping[str, Prompt]

    def names(self) -> tuple[str, ...]:
        """The prompts' names, sorted."""
        return tuple(sorted(self.prompts))

    def prompt(self, name: str) -> Prompt:
        """Prompt ``name``; ElizonError naming the prompts there are."""
        found = self.prompts.get(name)
        if found is not None:
            return found
        known = self.names()
        there = f"known: {', '.join(known)}" if known else \
            f"the package has no prompts (files {PROMPTS_FOLDER}/NAME.yaml)"
        raise ElizonError(ELIZON_PROMPT_INVALID, [
            f"{self.display}: no prompt {name!r}{_hint(name, known)}; {there}"])

    def versions(self, name: str) -> tuple[str, ...]:
        """Prompt ``name``'s versions, in file order (the last is the default)."""
        return self.prompt(name).labels

    def template(self, name: str, version: str | None = None) -> str:
        """The template text of a version (None: the default)."""
        return self.prompt(name).version(version).template

    def record(self, name: str, version: str | None = None) -> PromptRecord:
        """What results record of a version (None: the default)."""
        found = self.prompt(name).version(version)
        return PromptRecord(name, found.version, found.sha256)

    def render(self, name: str, version: str | None,
               variables: Mapping[str, object]) -> RenderedPrompt:
        """A version (None: the default) with its ``{{variables}}`` replaced by ``str()`` of
        the values given; ElizonError for a variable the version uses that is not given, or
        a given one the prompt does not declare. A value is inserted as is, never read as a
        template itself."""
        prompt = self.prompt(name)
        chosen = prompt.version(version)
        undeclared = [v for v in variables if v not in prompt.variables]
        missing = [v for v in chosen.uses if v not in variables]
        where = f"prompt {name!r} version {chosen.version!r}"
        lines = [f"{prompt.display}:{prompt.variables_line}: {where}: variable {v!r} is not "
                 f"declared{_hint(v, prompt.variables)}; declared: "
                 f"{', '.join(prompt.variables) or 'none'}" for v in undeclared]
        given = ", ".join(variables) or "none"
        lines += [f"{prompt.display}:{chosen.line}: {where}: variable {v!r} is used by the "
                  f"template and was not given; given: {given}" for v in missing]
        if lines:
            raise ElizonError(ELIZON_PROMPT_INVALID, lines)
        text = _PLACEHOLDER.sub(lambda m: str(variables[m.group(1)]), chosen.template)
        return RenderedPrompt(text, PromptRecord(name, chosen.version, chosen.sha256))

    def diff(self, name: str, a: str, b: str) -> str:
        """A unified diff from version ``a`` to version ``b`` ("" when their texts are the
        same)."""
        prompt = self.prompt(name)
        old, new = prompt.version(a), prompt.version(b)
        out = []
        for line in difflib.unified_diff(_lines(old.template), _lines(new.template),
                                         f"{name}@{old.version}", f"{name}@{new.version}"):
            # as diff(1) marks it: a last line without its newline stays visible as such
            out.append(line if line.endswith("\n") else f"{line}\n\\ No newline at end of file\n")
        return "".join(out)


def split_reference(reference: str) -> tuple[str, str | None]:
    """``NAME@VERSION`` as (NAME, VERSION); ``NAME`` as (NAME, None)."""
    name, at, version = reference.partition("@")
    return name, version if at else None


def load_registry(package_folder: Path,
                  display: Callable[[Path], str] = lambda path: path.as_posix()
                  ) -> PromptRegistry:
    """The prompts of the package in ``package_folder`` (an empty registry without a
    ``prompts`` folder); ``display`` names a path in messages. ElizonError with every
    problem of every file that is not valid, a file or folder that resolves outside the
    package folder among them."""
    folder = package_folder / PROMPTS_FOLDER
    shown = display(folder)
    if not folder.exists() and not folder.is_symlink():
        return PromptRegistry(package_folder, shown, MappingProxyType({}))
    root = package_folder.resolve()
    outside = _outside(folder, root)
    if outside:
        raise ElizonError(ELIZON_PROMPT_INVALID, [f"{shown}: {outside}"])
    if not folder.is_dir():
        raise ElizonError(ELIZON_PROMPT_INVALID, [
            f"{shown}: not a folder; a package's prompts are files {PROMPTS_FOLDER}/NAME.yaml"])
    prompts: dict[str, Prompt] = {}
    lines: list[str] = []
    for path in sorted(folder.iterdir()):
        if path.name.startswith("."):
            continue  # hidden: an editor's or a tool's, as pytest's walk leaves them
        if path.suffix == ".yml":
            lines.append(f"{display(path)}: a prompt file is named NAME.yaml; rename it")
            continue
        if path.suffix != ".yaml":
            continue
        try:
            prompts[path.stem] = _read_prompt(path, display(path), root)
        except ElizonError as exc:
            lines += exc.messages
    if lines:
        raise ElizonError(ELIZON_PROMPT_INVALID, lines)
    return PromptRegistry(package_folder, shown, MappingProxyType(prompts))


def _outside(path: Path, root: Path) -> str | None:
    """What is wrong with ``path`` as part of the package at ``root`` (resolved), or None."""
    try:
        resolved = path.resolve()
    except (OSError, RuntimeError):  # a symlink loop (RuntimeError up to Python 3.12)
        return "is a symlink loop"
    if not resolved.is_relative_to(root):
        return ("is a symbolic link that resolves outside the package folder; a package's "
                "prompts ship inside it")
    return None


def _read_prompt(path: Path, display: str, root: Path) -> Prompt:
    def refuse(problems: list[Problem]) -> ElizonError:
        return ElizonError.from_problems(ELIZON_PROMPT_INVALID, display, problems)

    outside = _outside(path, root)
    if outside:
        raise refuse([Problem(None, outside)])
    if not PROMPT_NAME.fullmatch(path.stem):
        raise refuse([Problem(None, f"prompt name {path.stem!r} (the file's name) must be "
                                    "letters, digits, '_', '.' or '-', starting with a letter "
                                    "or digit, at most 64 characters")])
    if not path.is_file():  # a folder, or a pipe that reading would wait on for ever
        raise refuse([Problem(None, "not a file")])
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise refuse([Problem(None, f"cannot read the file: {exc.strerror}")]) from None
    from .loading import load_yaml  # deferred: PyYAML, only for a package with prompts

    try:
        data, problems = load_yaml(raw), []
    except LoadFailed as exc:
        if not exc.complete:
            raise refuse(exc.problems) from None
        data, problems = exc.data, exc.problems  # a repeated version, say: with the rest
    prompt, found = _prompt(path, display, data)
    problems = sorted([*problems, *found], key=lambda p: p.line or 0)
    if problems or prompt is None:
        raise refuse(problems)
    return prompt


def _prompt(path: Path, display: str, data: Any) -> tuple[Prompt | None, list[Problem]]:
    """The prompt ``data`` declares, and every problem with it, in line order."""
    if not isinstance(data, YamlMapping):
        return None, [Problem(None, "a prompt file must be a mapping with 'versions' (and "
                                    f"'variables'), found {_describe(data)}")]
    problems = [Problem(data.key_lines[key], f"unknown key {key!r}{_hint(key, _KEYS)}; "
                                             f"allowed here: {', '.join(_KEYS)}")
                for key in data if key not in _KEYS]
    variables, variables_line = _variables(data, problems)
    versions: list[PromptVersion] = []
    found = data.get("versions")
    if "versions" not in data:
        problems.append(Problem(data.line, "missing required key 'versions'"))
    elif not isinstance(found, YamlMapping):
        problems.append(Problem(data.key_lines["versions"], "versions: expected a mapping of "
                                f"version to template, found {_describe(found)}"))
    elif not found:
        problems.append(Problem(data.key_lines["versions"],
                                "versions: is empty; a prompt has at least one version"))
    else:
        for label, template in found.items():
            made = _version(label, template, found.key_lines[label], variables, problems)
            if made is not None:
                versions.append(made)
    if problems:
        return None, problems
    return Prompt(path.stem, path, display, variables, variables_line, tuple(versions)), []


def _variables(data: YamlMapping, problems: list[Problem]) -> tuple[tuple[str, ...], int]:
    if "variables" not in data:
        return (), data.line
    line = data.key_lines["variables"]
    found = data["variables"]
    if found is None:
        return (), line  # ``variables:`` with nothing after it: none, as ``[]``
    if not isinstance(found, YamlSequence):
        problems.append(Problem(line, "variables: expected a list of names, found "
                                      f"{_describe(found)}"))
        return (), line
    names: list[str] = []
    for index, (item, at) in enumerate(zip(found, found.item_lines, strict=True)):
        where = f"variables[{index}]"
        if not isinstance(item, str) or not VARIABLE_NAME.fullmatch(item):
            problems.append(Problem(at, f"{where}: a variable is a name of letters, digits "
                                        "and '_' not starting with a digit, found "
                                        f"{_describe(item)}"))
        elif item in names:
            problems.append(Problem(at, f"{where}: {item!r} is declared twice"))
        else:
            names.append(item)
    return tuple(names), line


def _version(label: str, template: object, line: int, variables: tuple[str, ...],
             problems: list[Problem]) -> PromptVersion | None:
    where = f"versions[{label!r}]"
    if not VERSION_LABEL.fullmatch(label):
        problems.append(Problem(line, f"{where}: a version is letters, digits, '_', '.' or "
                                      "'-', starting with a letter or digit, at most 64 "
                                      "characters"))
        return None
    if not isinstance(template, str):
        problems.append(Problem(line, f"{where}: expected the template as text, found "
                                      f"{_describe(template)}"))
        return None
    if not template.strip():
        problems.append(Problem(line, f"{where}: the template is empty"))
        return None
    try:
        data = template.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate, which only an escape can write
        problems.append(Problem(line, f"{where}: the template is not valid Unicode text (a "
                                      "lone surrogate escape)"))
        return None
    uses: list[str] = []
    bad = False
    at = template.find("{{")
    while at != -1:
        match = _PLACEHOLDER.match(template, at)
        if match is None:
            end = template.find("}}", at + 2, at + 40)
            end = end + 2 if end != -1 else at + 30
            while template[end:end + 1] == "}":  # {{{name}}}: shown whole
                end += 1
            shown = template[at:end].split("\n")[0]
            problems.append(Problem(line, f"{where}: {shown!r} is not a variable: a template "
                                          "holds {{name}} (spaces allowed inside the braces) "
                                          "and no other {{ syntax"))
            bad = True
            at = template.find("{{", at + 2)
            continue
        name = match.group(1)
        if name not in variables:
            problems.append(Problem(line, f"{where}: the template uses {{{{{name}}}}}, which "
                                          f"is not declared in variables"
                                          f"{_hint(name, variables)}; declared: "
                                          f"{', '.join(variables) or 'none'}"))
            bad = True
        elif name not in uses:
            uses.append(name)
        at = template.find("{{", match.end())
    if bad:
        return None
    return PromptVersion(label, template, line, hashlib.sha256(data).hexdigest(), tuple(uses))


def _lines(text: str) -> list[str]:
    """``text`` as lines split at ``\\n`` only, each keeping it (the last may lack one)."""
    parts = text.split("\n")
    return [part + "\n" for part in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def _hint(given: str, allowed: tuple[str, ...]) -> str:
    close = difflib.get_close_matches(given, allowed, n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _describe(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}"
    if isinstance(value, (int, float)):
        return f"the number {value}"
    if isinstance(value, str):
        return f"the text {value if len(value) <= 40 else value[:37] + '...'!r}"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return type(value).__name__
