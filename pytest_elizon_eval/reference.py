"""The user reference's tables, rendered from the code's own: docs/reference.md.

Options and ini keys come from :data:`.options.OPTIONS` (the table that registers
them), error codes from :data:`.errors.CODES`, fixtures from the fixture functions'
docstrings; environment variables are listed here, next to the code that reads
them. ``python -m pytest_elizon_eval.reference > docs/reference.md`` regenerates
the page, and a test fails when the committed page differs from :func:`render`.
"""

from __future__ import annotations

import importlib
import inspect
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .collect.options import OPTIONS, Option
from .errors import CODES

__all__ = ["ENVIRONMENT", "FIXTURES", "Fixture", "Variable", "main", "render"]


@dataclass(frozen=True)
class Variable:
    """An environment variable the plugin or ``elizon-eval`` reads."""

    name: str
    #: Who reads it: ``pytest``, ``elizon-eval`` or both.
    read_by: str
    meaning: str


@dataclass(frozen=True)
class Fixture:
    """A fixture the plugin registers; its docstring is its documentation."""

    name: str
    #: The module of the package that defines it.
    module: str

    def doc(self) -> str:
        function = getattr(importlib.import_module(f"pytest_elizon_eval.{self.module}"),
                           self.name)
        # reST's ``code`` is markdown's `code`.
        return " ".join(inspect.cleandoc(function.__doc__ or "").split()).replace("``", "`")


ENVIRONMENT: tuple[Variable, ...] = (
    Variable("ELIZON_SIGN_KEY", "pytest, elizon-eval merge",
             "the PEM of the Ed25519 private key itself (not a path) that signs the results "
             "file when no --elizon-sign-key, ini elizon_sign_key or --sign-key names a key "
             "file; create one with 'elizon-eval keygen DIR'. Not passed on to a command "
             "entry's process"),
    Variable("ELIZON_ATTESTATION_SECRET", "pytest, elizon-eval verify",
             "the shared secret (at least 16 characters; surrounding whitespace ignored) that "
             "keys the attestation --elizon-attestation writes and verify --attestation checks; "
             "never written or shown, only its key id (HMAC-SHA256 of a fixed text, 16 hex "
             "digits), nor passed on to a command entry's process"),
    Variable("GITHUB_STEP_SUMMARY", "pytest",
             "when set, the markdown summary is appended to the file it names (GitHub "
             "Actions sets it)"),
    Variable("GITHUB_ACTIONS", "pytest",
             "'true' turns on annotations when --elizon-annotations is auto (the default)"),
    Variable("NO_COLOR", "elizon-eval",
             "when set and not empty, elizon-eval prints no colour, even on a terminal"),
    Variable("the one a judge's apiKeyEnv names", "pytest",
             "the judge endpoint's API key, read when the judge is called; unset is a judge "
             "error naming the variable, and the key is never written to a report"),
    Variable("ELIZON_VARIANT", "a command entry's process",
             "set by the plugin, not read: the name of the package variant the case runs "
             "under, in a command entry's environment (unset without variants)"),
    Variable("ELIZON_VARIANT_PARAMS", "a command entry's process",
             "set by the plugin, not read: the variant's params as a JSON object, beside "
             "ELIZON_VARIANT"),
    Variable("each ${NAME} in an entry's env or headers", "pytest",
             "replaced from the environment when the entry point is called; a NAME that is "
             "not set is an entry-point error naming it"),
)

FIXTURES: tuple[Fixture, ...] = (
    Fixture("elizon_entry", "plugin"),
    Fixture("elizon_judge", "plugin"),
    Fixture("elizon_checks", "plugin"),
    Fixture("elizon_variant", "plugin"),
    Fixture("elizon_prompt", "collect.prompt_fixture"),
    Fixture("elizon_secrets", "redteam.nodes"),
    Fixture("elizon_canary", "redteam.nodes"),
    Fixture("elizon_mock_model", "mock.fixtures"),
    Fixture("elizon_mock_server", "mock.fixtures"),
)


def _cell(text: object) -> str:
    """One table cell: a pipe would end it, a newline would end the row."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _code(text: str | None) -> str:
    return f"`{text}`" if text else "—"


def _table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return lines


def _value(option: Option) -> str:
    if option.action == "store_true":
        return "flag" + (f"; ini: {option.ini_type}" if option.ini else "")
    if option.choices:
        return " | ".join(f"`{c}`" for c in option.choices)
    if option.metavar:
        return f"`{option.metavar}`"
    return {"args": "words", "linelist": "lines", "bool": "true or false"}.get(
        option.ini_type or "", "text")


def render() -> str:
    """docs/reference.md, from the tables."""
    lines = [
        "<!-- Generated by `python -m pytest_elizon_eval.reference > docs/reference.md` from",
        "     the code's own tables; do not edit by hand (a test fails when they differ). -->",
        "",
        "# Reference",
        "",
        "Every command-line option, ini key, environment variable, fixture and error code of",
        "pytest-elizon-eval, generated from the tables the code itself uses. `pytest --help`",
        "shows the same option and ini texts; `elizon-eval VERB --help` describes the",
        "command's verbs ([cli.md](cli.md)).",
        "",
        "## Command-line options and ini keys",
        "",
        "A setting given on the command line beats the same setting in an ini file",
        "(`pytest.ini`, `tox.ini`, `setup.cfg` or `pyproject.toml`); relative report paths",
        "are relative to where pytest was started.",
        "",
    ]
    lines += _table(
        ("option", "ini key", "value", "default", "what it does"),
        ((_code(o.cli), _code(o.ini), _value(o), _code(o.unset) if o.unset != "none" else "none",
          o.help + (f" In an ini file: {o.ini_help}" if o.ini_help else ""))
         for o in OPTIONS))
    lines += ["", "## Environment variables", ""]
    lines += _table(("variable", "read by", "what it does"),
                    ((_code(v.name) if v.name.isupper() else v.name, v.read_by, v.meaning)
                     for v in ENVIRONMENT))
    lines += ["", "## Fixtures", "",
              "Override one by defining a fixture of the same name in a conftest.py.", ""]
    lines += _table(("fixture", "what it is"), ((_code(f.name), f.doc()) for f in FIXTURES))
    lines += ["", "## Error codes", "",
              "A code is the first word of its message, so it can be searched for in a CI log.",
              "`collection`: pytest stops before running any case; `case`: that case is an",
              "error, the others run; `elizon-eval`: the command's error line (exit 1 or 2;",
              "`verify --attestation` also 3 or 4).",
              ""]
    lines += _table(("code", "reported at", "meaning"),
                    ((_code(c.code), c.where, c.meaning) for c in CODES))
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """Print the reference (``> docs/reference.md`` to regenerate it)."""
    if list(sys.argv[1:] if argv is None else argv):
        print("usage: python -m pytest_elizon_eval.reference > docs/reference.md",
              file=sys.stderr)
        return 2
    sys.stdout.buffer.write(render().encode("utf-8"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
