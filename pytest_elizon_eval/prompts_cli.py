"""The ``elizon-eval prompts`` verbs (docs/cli.md#prompts): a package's versioned prompts.

``prompts list`` prints each prompt of the package with its versions, default, variables
and each version's short content hash; ``prompts show NAME[@VERSION]`` one version's
template; ``prompts diff NAME A B`` a unified diff between two versions; ``prompts render
NAME[@VERSION] --var k=v ...`` the rendered text, refusing a missing or undeclared variable
as the ``elizon_prompt`` fixture does (docs/format.md#prompts). The parser entries are added
to :mod:`.cli`'s by :func:`add_parser`; the registry is imported only when a verb runs. No
pytest import here.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from .errors import ElizonError
from .text import defuse, visible

if TYPE_CHECKING:
    from .load.prompts import PromptRegistry

__all__ = ["PromptsTrouble", "add_parser", "run"]

#: Characters of a content hash ``list`` shows (``show`` and ``render`` show it whole).
SHORT_HASH = 12


class PromptsTrouble(Exception):
    """A package or prompt that cannot be used: the command's error line, exit status 2."""


class _Out(Protocol):
    def line(self, text: str = "", markup: dict[str, bool] | None = None) -> None: ...


def _variable(text: str) -> tuple[str, str]:
    name, equals, value = text.partition("=")
    if not equals or not name:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, found {text!r}")
    return name, value


def add_parser(verbs: Any, run: Callable[[argparse.Namespace, Any], int]) -> None:
    """Add ``prompts list|show|diff|render`` to ``verbs`` (the command's sub-parsers);
    ``run`` is what the command calls for each (it turns :class:`PromptsTrouble` into its
    exit 2)."""
    p = verbs.add_parser("prompts", help="a package's versioned prompts: prompts list | show "
                                         "NAME[@VERSION] | diff NAME A B | render NAME --var k=v",
                         description="The versioned prompts of a package: its files "
                                     "prompts/NAME.yaml, each with its variables and versions "
                                     "(the last listed is the default).")
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    made = [
        actions.add_parser("list", help="each prompt: versions, default, variables, hashes",
                           description="Print each prompt with its file, its variables, and "
                                       "each version with the first characters of its "
                                       "content hash (SHA-256 of its template); the last "
                                       "version is the default."),
        actions.add_parser("show", help="one version's template",
                           description="Print a version's template (NAME@VERSION; NAME alone: "
                                       "the default), its content hash and the variables it "
                                       "uses."),
        actions.add_parser("diff", help="a unified diff between two versions",
                           description="Print a unified diff from version A to version B."),
        actions.add_parser("render", help="a version rendered with --var values",
                           description="Print a version rendered (NAME@VERSION; NAME alone: "
                                       "the default), each {{variable}} replaced by its --var "
                                       "value. A variable the template uses that is not given, "
                                       "or one given that the prompt does not declare, is an "
                                       "error."),
    ]
    show, diff, render = made[1:]
    show.add_argument("prompt", metavar="NAME[@VERSION]")
    diff.add_argument("name", metavar="NAME")
    diff.add_argument("a", metavar="A", help="the version to diff from")
    diff.add_argument("b", metavar="B", help="the version to diff to")
    render.add_argument("prompt", metavar="NAME[@VERSION]")
    render.add_argument("--var", action="append", default=[], type=_variable,
                        metavar="NAME=VALUE", help="a variable's value (repeatable)")
    for q in made:
        q.add_argument("--package", default=".", metavar="DIR",
                       help="the package folder, which holds elizon.yaml (default: the "
                            "current folder)")
        q.set_defaults(run=run)


def _display(package: Path) -> Callable[[Path], str]:
    """How the command shows a path within the folder ``package`` (as given): relative to
    the current folder when inside it, else as given. Only the package folder is resolved
    (to be found under the current folder however it was named): what is inside it is
    named as the package names it, a linked ``prompts`` folder or prompt file by the link,
    as pytest's messages name it (docs/format.md#prompts)."""
    real, here = package.resolve(), Path.cwd().resolve()

    def display(path: Path) -> str:
        inside = path.relative_to(real)  # load_registry names only paths within it
        return ((real / inside).relative_to(here) if (real / inside).is_relative_to(here)
                else package / inside).as_posix()

    return display


def _registry(given: str) -> PromptRegistry:
    """The prompts of the package in folder ``given`` (or of its elizon.yaml)."""
    from .load.prompts import load_registry  # deferred: the command's other verbs do without

    path = Path(given)
    if path.name == "elizon.yaml" and path.is_file():
        path = path.parent
    if not (path / "elizon.yaml").is_file():
        where = "the current folder" if given == "." else given
        raise PromptsTrouble(f"{where} is not a package (no elizon.yaml in it); name the package "
                             "folder with --package DIR")
    return load_registry(path.resolve(), _display(path))


def _lines(text: str) -> list[str]:
    """``text`` as the lines it prints (a last newline ends the last line, not a new one)."""

    return visible(text.removesuffix("\n")).split("\n")


def run(args: argparse.Namespace, out: _Out) -> int:
    """``elizon-eval prompts ACTION``; the exit status (0)."""

    try:
        return _ACTIONS[args.action](_registry(args.package), args, out)
    except ElizonError as exc:
        # every problem on a line of its own, each starting with its code as pytest prints
        # them (docs/format.md#prompts) after the command's name, as its error line does;
        # the last is that error line (exit 2)
        *before, last = exc.lines or [str(exc)]
        for line in before:  # as the command's safe() shows its error line
            print(f"elizon-eval prompts: {defuse(visible(line, keep_newlines=False))}",
                  file=sys.stderr)
        raise PromptsTrouble(last) from None


def _list(registry: PromptRegistry, args: argparse.Namespace, out: _Out) -> int:

    if not registry.names():
        out.line(f"no prompts in {visible(registry.display, keep_newlines=False)} (files "
                 "prompts/NAME.yaml)")
    for name in registry.names():
        prompt = registry.prompt(name)
        out.line(f"{name}  {visible(prompt.display, keep_newlines=False)}  variables: "
                 f"{', '.join(prompt.variables) or 'none'}", {"bold": True})
        width = max(len(v.version) for v in prompt.versions)
        for version in prompt.versions:
            default = "  default" if version is prompt.default else ""
            out.line(f"  {version.version.ljust(width)}  sha256:{version.sha256[:SHORT_HASH]}"
                     f"{default}")
    return 0


def _show(registry: PromptRegistry, args: argparse.Namespace, out: _Out) -> int:
    from .load.prompts import split_reference  # deferred: as load_registry above

    name, label = split_reference(args.prompt)
    prompt = registry.prompt(name)
    version = prompt.version(label)
    default = " (default)" if version is prompt.default else ""
    out.line(f"{name}@{version.version}{default}  sha256:{version.sha256}  "
             f"{visible(prompt.display, keep_newlines=False)}:{version.line}", {"bold": True})
    out.line(f"uses: {', '.join(version.uses) or 'no variables'}")
    out.line()
    for line in _lines(version.template):
        out.line(line)
    return 0


def _diff(registry: PromptRegistry, args: argparse.Namespace, out: _Out) -> int:

    text = registry.diff(args.name, args.a, args.b)
    if not text:
        out.line(f"{args.name}@{args.a} and {args.name}@{args.b} have the same text")
    for line in visible(text).removesuffix("\n").split("\n") if text else ():
        out.line(line)
    return 0


def _render(registry: PromptRegistry, args: argparse.Namespace, out: _Out) -> int:
    from .load.prompts import split_reference  # deferred: as load_registry above

    variables: dict[str, str] = {}
    for name, value in args.var:
        if name in variables:
            raise PromptsTrouble(f"--var {name} is given twice")
        variables[name] = value
    prompt, label = split_reference(args.prompt)
    for line in _lines(registry.render(prompt, label, variables).text):
        out.line(line)
    return 0


_ACTIONS: dict[str, Callable[[PromptRegistry, argparse.Namespace, _Out], int]] = {
    "list": _list, "show": _show, "diff": _diff, "render": _render}
