"""The error codes a user can see, and the exceptions that carry them.

:data:`CODES` is the one table of every code with what it means; the reference
(docs/reference.md#error-codes) is generated from it, and a test fails when a code
appears in the package without a row here. A code is always the first word of the
message, so it can be grepped in CI logs.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:  # types only
    from .load.documents import Problem

__all__ = [
    "CODES",
    "ELIZON_ALIGNMENT_INVALID",
    "ELIZON_ATTESTATION_INVALID",
    "ELIZON_CASSETTE_MISSING",
    "ELIZON_CASSETTE_STALE",
    "ELIZON_ENTRY_INVALID",
    "ELIZON_ENTRY_UNBOUND",
    "ELIZON_JUDGE_INVALID",
    "ELIZON_JUDGE_UNBOUND",
    "ELIZON_MANIFEST_INVALID",
    "ELIZON_PROBES_INVALID",
    "ELIZON_PROMPT_INVALID",
    "ELIZON_RESULTS_INVALID",
    "ELIZON_RESULTS_SIGNATURE_INVALID",
    "ELIZON_SECRETS_INVALID",
    "ELIZON_SNAPSHOT_INVALID",
    "EVALUATION_GATE_FAILED",
    "EVALUATION_NOT_ACKNOWLEDGED",
    "EVALUATION_OVERRIDE_INVALID",
    "EVALUATION_SUITE_INVALID",
    "EVALUATION_SUITE_MISSING",
    "Code",
    "ElizonError",
]

EVALUATION_SUITE_MISSING = "EVALUATION_SUITE_MISSING"
EVALUATION_SUITE_INVALID = "EVALUATION_SUITE_INVALID"
ELIZON_MANIFEST_INVALID = "ELIZON_MANIFEST_INVALID"
ELIZON_ENTRY_UNBOUND = "ELIZON_ENTRY_UNBOUND"
ELIZON_ENTRY_INVALID = "ELIZON_ENTRY_INVALID"
ELIZON_JUDGE_UNBOUND = "ELIZON_JUDGE_UNBOUND"
ELIZON_CASSETTE_MISSING = "ELIZON_CASSETTE_MISSING"
ELIZON_CASSETTE_STALE = "ELIZON_CASSETTE_STALE"
ELIZON_JUDGE_INVALID = "ELIZON_JUDGE_INVALID"
ELIZON_PROBES_INVALID = "ELIZON_PROBES_INVALID"
ELIZON_SECRETS_INVALID = "ELIZON_SECRETS_INVALID"
ELIZON_ALIGNMENT_INVALID = "ELIZON_ALIGNMENT_INVALID"
# The elizon-eval command's (docs/cli.md).
EVALUATION_NOT_ACKNOWLEDGED = "EVALUATION_NOT_ACKNOWLEDGED"
ELIZON_RESULTS_SIGNATURE_INVALID = "ELIZON_RESULTS_SIGNATURE_INVALID"
ELIZON_RESULTS_INVALID = "ELIZON_RESULTS_INVALID"
EVALUATION_GATE_FAILED = "EVALUATION_GATE_FAILED"
ELIZON_SNAPSHOT_INVALID = "ELIZON_SNAPSHOT_INVALID"
EVALUATION_OVERRIDE_INVALID = "EVALUATION_OVERRIDE_INVALID"
ELIZON_ATTESTATION_INVALID = "ELIZON_ATTESTATION_INVALID"
ELIZON_PROMPT_INVALID = "ELIZON_PROMPT_INVALID"


class Code(NamedTuple):
    """One error code: where it is reported and what it means, in one line (a named tuple:
    the table is made at import, cheaply)."""

    code: str
    #: ``collection`` (the run stops before any case), ``case`` (that case is an error),
    #: or ``elizon-eval`` (the command's error line).
    where: str
    meaning: str


CODES: tuple[Code, ...] = (
    Code(EVALUATION_SUITE_MISSING, "collection",
         "a manifest lists a suite path with no file behind it"),
    Code(EVALUATION_SUITE_INVALID, "collection",
         "a suite file cannot be read as YAML or is not a valid suite (an unknown key, a case "
         "without id or input, a repeated id, a wrong type, an invalid regex or JSON Schema, "
         "a check that cannot be imported, a YAML file given on the command line that its "
         "package's elizon.yaml does not name); a check the elizon_checks fixture lacks is this "
         "error at that case's setup, and so is expect.deterministic or expect.stable on a "
         "case that runs once"),
    Code(ELIZON_MANIFEST_INVALID, "collection",
         "elizon.yaml cannot be read as YAML or is not valid (an unknown key, a bad gate, a "
         "malformed entry or judge mapping, a suite path outside the package or listed twice)"),
    Code(ELIZON_PROBES_INVALID, "collection",
         "a probe file named by a manifest's probes: cannot be read or does not fit the probe "
         "format"),
    Code(ELIZON_SECRETS_INVALID, "case",
         "the elizon_secrets fixture does not return a list of strings, each at least 8 "
         "characters with no surrounding spaces"),
    Code(ELIZON_ENTRY_UNBOUND, "case",
         "no source (--elizon-entry, the elizon_entry fixture, the manifest's entry:, ini "
         "elizon_entry) binds an entry point for the case"),
    Code(ELIZON_ENTRY_INVALID, "case",
         "the bound entry point cannot be imported, is not callable, or is not a valid command "
         "or URL mapping"),
    Code(ELIZON_JUDGE_UNBOUND, "case",
         "the case has a judge: assertion and no judge is bound"),
    Code(ELIZON_JUDGE_INVALID, "case",
         "the judge cannot be imported, is not callable, or is not a valid endpoint mapping"),
    Code(ELIZON_CASSETTE_MISSING, "case",
         "with --elizon-replay, the case is not in the cassette, or has fewer recorded runs "
         "than repeat asks for"),
    Code(ELIZON_CASSETTE_STALE, "case",
         "with --elizon-replay, the case's input changed since it was recorded"),
    Code(ELIZON_RESULTS_INVALID, "elizon-eval",
         "the file is not a usable results file (then nothing else is checked)"),
    Code(ELIZON_RESULTS_SIGNATURE_INVALID, "elizon-eval",
         "no RESULTS.sig, a signature for another document or by another key, or a signature "
         "that does not verify"),
    Code(EVALUATION_NOT_ACKNOWLEDGED, "elizon-eval",
         "acknowledge got no 'yes' (or had no terminal to ask on), or verify --require-ack "
         "found no RESULTS.ack.json for exactly this document"),
    Code(EVALUATION_GATE_FAILED, "elizon-eval",
         "verify --require-pass: a must-pass suite did not pass (recomputed from the cases), or "
         "--elizon-fail-on-regression failed the run on a significant regression"),
    Code(ELIZON_SNAPSHOT_INVALID, "case",
         "a case with expect.snapshot: its suite's __snapshots__ file is not valid YAML or not "
         "a snapshot file, or the case's entry has a wrong key or type or an output_sha256 "
         "that is not its output's (an update run rewrites a bad entry, never a bad file)"),
    Code(ELIZON_ALIGNMENT_INVALID, "collection",
         "a manifest's alignment: labels file cannot be used: outside the package, missing, "
         "not JSONL or CSV, a bad row (at its line), or labels of one class only (Cohen's "
         "kappa is undefined); with elizon-eval align, also a judge that cannot be bound"),
    Code(EVALUATION_OVERRIDE_INVALID, "elizon-eval",
         "override refused (the gate passed, or no key to sign with), or an override beside "
         "the results that is for another results file, is not signed, or whose signature "
         "does not verify with the key given"),
    Code(ELIZON_ATTESTATION_INVALID, "elizon-eval",
         "verify --attestation: the attestation does not hold (a record changed, moved, "
         "removed or from another run; truncated; a header that does not verify with the "
         "secret) or cannot be used, or RESULTS does not hold exactly the attested suites "
         "and cases, as attested, with the attested provenance"),
    Code(ELIZON_PROMPT_INVALID, "case",
         "the elizon_prompt fixture (or elizon-eval prompts) cannot use the package's "
         "prompts: a prompts/NAME.yaml that is not valid (at its line: a template using an "
         "undeclared variable or other {{ syntax, a repeated version, an empty versions "
         "map) or that resolves outside the package, an unknown prompt or version, or a "
         "render missing a variable the template uses or given one the prompt does not "
         "declare"),
)


class ElizonError(Exception):
    """A problem the user must fix, shown as ``CODE: message`` lines without a traceback."""

    def __init__(self, code: str, lines: Iterable[str]) -> None:
        self.code = code
        #: The messages without the code; :attr:`lines` with it, as shown.
        self.messages = list(lines)
        self.lines = [f"{code}: {line}" for line in self.messages]
        super().__init__("\n".join(self.lines))

    @classmethod
    def from_problems(cls, code: str, display: str, problems: Iterable[Problem]) -> ElizonError:
        """One ``CODE: file:line: what`` line per problem."""
        return cls(code, [
            f"{display}:{p.line}: {p.message}" if p.line else f"{display}: {p.message}"
            for p in problems
        ])
