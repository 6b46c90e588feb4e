"""The ``elizon-eval`` command: keys, and what happens to a results file after the run.

Owns the verbs of docs/contract.md#the-elizon-eval-command — ``keygen``,
``show``, ``diff``, ``merge``, ``acknowledge``, ``override`` and ``verify`` — as one
argparse parser with sub-parsers (one ``_add_VERB`` function each, listed in
:data:`VERBS`) and :func:`main` (``python -m pytest_elizon_eval`` delegates to
it). Exit status: 0 ok; 1 the data (or the person asked) said no; 2 usage or
trouble (a bad argument, a file that cannot be read or is not what it should
be); ``verify --attestation`` also 3 (truncated) and 4 (a header that does not
verify). Every file read is hostile input (:mod:`.evidence`,
:mod:`.attestation`): a problem is one clear line, never a traceback. What a
file holds is printed made visible and defused (:mod:`.text`); a private key
or the attestation secret is never printed, whatever goes wrong.

Reports are rendered by the reporters a run uses (terminal, JUnit, markdown,
results), from an aggregate rebuilt from the file's cases. No pytest import.
"""

from __future__ import annotations

import argparse
import getpass
import json
import math
import os
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn, TextIO, TypeAlias

from . import __version__, dataset_cli, prompts_cli
from .decide.outcomes import (
    ERROR,
    FAILED,
    INCONCLUSIVE,
    PASSED,
    TIMEOUT,
    blocks,
    display_reason,
)
from .decide.wording import ADVISORY_PREFIX
from .errors import ELIZON_ATTESTATION_INVALID
from .errors import ELIZON_RESULTS_INVALID as ELIZON_RESULTS_INVALID
from .errors import ELIZON_RESULTS_SIGNATURE_INVALID as ELIZON_RESULTS_SIGNATURE_INVALID
from .errors import EVALUATION_GATE_FAILED as EVALUATION_GATE_FAILED
from .errors import EVALUATION_NOT_ACKNOWLEDGED as EVALUATION_NOT_ACKNOWLEDGED
from .errors import EVALUATION_OVERRIDE_INVALID as EVALUATION_OVERRIDE_INVALID
from .redteam import probe_names
from .reporting import html, junit, markdown, terminal
from .reporting.regression import compare, verdict
from .text import defuse, visible
from .trust import attestation, evidence, override, provenance, signing
from .trust.evidence import Document, EvidenceError

__all__ = ["EXIT_HEADER", "EXIT_NO", "EXIT_OK", "EXIT_TRUNCATED", "EXIT_USAGE", "VERBS", "main",
           "parser"]

EXIT_OK, EXIT_NO, EXIT_USAGE = 0, 1, 2


_ANSI = {"bold": "1", "red": "31", "green": "32", "yellow": "33"}
_MARK = {PASSED: "✓", FAILED: "✗", TIMEOUT: "⏱", ERROR: "!"}


class Trouble(Exception):
    """A usage problem or a file that cannot be used: one line, exit status 2."""


#: Bidirectional controls reorder the text around them on a terminal: a case id holding
#: U+202E reads differently from what it is, where a person reads it before typing "yes".
#: Shown as escapes, as the HTML report shows them (docs/contract.md#untrusted-text).
_BIDI = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _no_bidi(text: str) -> str:
    return _BIDI.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def safe(text: object) -> str:
    """Text from a file (names, paths, messages), safe on a terminal and in a CI log."""
    return defuse(_no_bidi(visible(str(text), keep_newlines=False)))


class Out:
    """Lines to a stream, with colour only on a terminal (and never with ``NO_COLOR``)."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.colour = stream.isatty() and not os.environ.get("NO_COLOR")

    def line(self, text: str = "", markup: dict[str, bool] | None = None) -> None:
        # Every line: what the command prints itself, not only what reporters made visible.
        text = _no_bidi(text)
        codes = [_ANSI[k] for k, on in (markup or {}).items() if on and k in _ANSI]
        if self.colour and codes:
            text = f"\x1b[{';'.join(codes)}m{text}\x1b[0m"
        self.stream.write(text + "\n")


# -- reading ---------------------------------------------------------------------------------

def _document(path: Path) -> Document:
    try:
        return evidence.read_document(path)
    except EvidenceError as exc:
        raise Trouble(f"{path}: {exc}") from None


def _public_key(path: Path) -> Any:
    try:
        return signing.load_public_key(path, f"--public-key {path}")
    except ValueError as exc:
        raise Trouble(str(exc)) from None


def _check_signature(document: Document, key: Any) -> str:
    """The signer's fingerprint; SignatureInvalid says why the signature does not hold."""
    path = signing.signature_path(document.path)
    if not path.exists():
        raise signing.SignatureInvalid(f"no signature file {path} (the results were not "
                                       "signed, or the signature was not kept beside them)")
    try:
        data = evidence.read_json_file(path, evidence.MAX_SMALL_BYTES)
    except EvidenceError as exc:
        raise signing.SignatureInvalid(f"{path}: {exc}") from None
    return signing.verify(document.data, data, key)


def _sign_key(path: str | None) -> signing.SigningKey | None:
    """``--sign-key PATH``, else the PEM in ``$ELIZON_SIGN_KEY``; errors never show the key."""
    try:
        if path is not None:
            if "PRIVATE KEY" in path or "\n" in path:
                raise ValueError("--sign-key takes the path of a key file, not the key itself; "
                                 "put the key's PEM in $ELIZON_SIGN_KEY instead")
            return signing.SigningKey.from_file(Path(path), f"--sign-key {path}")
        env = os.environ.get("ELIZON_SIGN_KEY", "")
        if env.strip():
            return signing.SigningKey.from_pem(env.encode("utf-8", "replace"),
                                               "$ELIZON_SIGN_KEY")
    except ValueError as exc:
        raise Trouble(str(exc)) from None
    return None


def _write(path: Path, text: str) -> None:
    """Write ``text`` whole or not at all, replacing a link at ``path``, never writing
    through it."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        evidence.replace_file(path, text)
    except OSError as exc:
        raise Trouble(f"cannot write {path}: {exc.strerror or exc}") from None


# -- presenting ------------------------------------------------------------------------------

def _provenance_lines(document: Document) -> list[str]:
    found = document.data.get("provenance")
    lines = [f"results {safe(document.path)} (created {safe(document.data['created'])}, "
             f"document sha256 {document.sha256})"]
    if not found:
        return [*lines, "  no provenance recorded"]
    lines.append(f"  ran {safe(found['started'])} to {safe(found['finished'])} with "
                 f"pytest-elizon-eval {safe(found['plugin'])}, pytest {safe(found['pytest'])}, "
                 f"Python {safe(found['python'])}")
    if found["options"]:
        lines.append("  options: " + " ".join(
            safe(k) if v is True else f"{safe(k)}={safe(v)}" for k, v in found["options"].items()))
    for package in found["packages"]:
        git = package["git"]
        where = ("not in a git work tree" if git is None else
                 f"git {safe(git['commit'] or 'no commit')}" + (" (dirty)" if git["dirty"] else ""))
        version = f" {safe(package['version'])}" if package["version"] else ""
        manifest = (f"manifest sha256 {safe(package['manifest_sha256'])}"
                    if package["manifest_sha256"] else "stand-alone suite")
        entries = ", ".join(safe(e) for e in package["entries"]) or "-"
        lines.append(f"  package {safe(package['name'])}{version}: {manifest}; {where}; "
                     f"entry {entries}")
    for shard in found.get("merged_from", []):
        lines.append(f"  merged from {safe(shard['file'])} (document sha256 "
                     f"{safe(shard['document_sha256'])})")
    return lines


def _failed_lines(document: Document) -> list[tuple[str, dict[str, bool]]]:
    """The cases that fail the run and are neither timeouts nor inconclusive (the terminal
    section lists those apart)."""
    failing = [r for s in document.aggregate.suites() for r in s.not_passed
               if blocks(r) and r.outcome not in (TIMEOUT, INCONCLUSIVE)]
    if not failing:
        return []
    return [("failed:", {"red": True}),
            *((f"  {safe(r.nodeid)} — {display_reason(r)}", {}) for r in failing)]


def _verdict_line(document: Document) -> tuple[str, dict[str, bool]]:
    # from the cases, and the significant regressions if they failed the run
    passed, paragraph = verdict(document.aggregate, evidence.regression_of(document.data))
    return (f"verdict: {'PASS' if passed else 'FAIL'} — {safe(paragraph)}",
            {"green": passed, "red": not passed, "bold": True})


#: How verify and acknowledge name the variant gate of --elizon-fail-on-regression.
_VARIANT_GATE = "the variant gate against the reference (--elizon-fail-on-regression)"


def _gate_line(document: Document) -> tuple[str, dict[str, bool]]:
    suites = document.aggregate.suites()
    gated = [s for s in suites if not s.info.advisory]
    failing = [s for s in suites if s.verdict == "fail"]
    if failing:
        names = ", ".join(safe(s.info.path) for s in failing)
        worse = evidence.failed_variants(document)  # why, when the variant gate failed it
        why = f"; {_VARIANT_GATE}: {safe(evidence.variant_words(worse))}" if worse else ""
        return (f"MUST-PASS GATE: FAILED — {len(failing)} of {len(gated)} must-pass "
                f"suite{'s' if len(gated) != 1 else ''} did not pass: {names}{why}",
                {"red": True, "bold": True})
    regressed = evidence.failed_regressions(document.data)
    if regressed:  # the cases passed; --elizon-fail-on-regression failed the run
        return (f"MUST-PASS GATE: FAILED — significant regression (--elizon-fail-on-regression)"
                f": {safe(evidence.regression_words(regressed))}", {"red": True, "bold": True})
    worse = evidence.failed_variants(document)
    if worse:  # the cases passed; the variant gate failed the run (docs/cli.md#verify)
        return (f"MUST-PASS GATE: FAILED — {_VARIANT_GATE}: "
                f"{safe(evidence.variant_words(worse))}", {"red": True, "bold": True})
    if not gated:
        return "MUST-PASS GATE: none (every suite is advisory)", {"yellow": True, "bold": True}
    return (f"MUST-PASS GATE: PASSED — all {len(gated)} must-pass "
            f"suite{'s' if len(gated) != 1 else ''} passed", {"green": True, "bold": True})


def _every_case_lines(document: Document) -> list[tuple[str, dict[str, bool]]]:
    lines: list[tuple[str, dict[str, bool]]] = [("every case:", {"bold": True})]
    for summary in document.aggregate.suites():
        info = summary.info
        lines.append((f"  {safe(info.path)} [{safe(info.package)}, {safe(info.gate)}]",
                      {"bold": True}))
        for r in summary.results:
            latency = "" if r.latency_ms is None else f" ({r.latency_ms:.1f} ms)"
            why = "" if r.outcome == PASSED else f" — {display_reason(r)}"
            lines.append((f"    {_MARK.get(r.outcome, '?')} {r.outcome:<7} {safe(r.case_id)}"
                          f"{latency}{why}",
                          {"red": blocks(r), "yellow": r.outcome != PASSED and not blocks(r)}))
    return lines


def _override_line(document: Document, key: Any = None) -> tuple[str, dict[str, bool]] | None:
    """What every view says of an override beside the results: ``failed, overridden by NAME:
    REASON`` and who signed it (verified when ``key`` is given), or why it does not hold."""
    try:
        found = override.find(document, key)
    except EvidenceError as exc:
        return (f"{EVALUATION_OVERRIDE_INVALID}: {safe(exc)}", {"red": True, "bold": True})
    if found is None:
        return None
    data, signer = found
    how = (f"signature valid, by {signer}" if key is not None
           else f"signed by {safe(signer)}, not checked: give --public-key to check it")
    return (f"MUST-PASS GATE: {safe(override.summary(data))} (at {safe(data['at'])}; {how})",
            {"yellow": True, "bold": True})


def _present(out: Out, document: Document, *, every_case: bool, key: Any = None) -> None:
    for text in _provenance_lines(document):
        out.line(text)
    overridden = _override_line(document, key)
    if overridden is not None:
        out.line(*overridden)
    if every_case:
        out.line(*_gate_line(document))
    for text, markup in terminal.render(document.aggregate, evidence.regression_of(
            document.data)):
        out.line(text, markup)
    for text, markup in _failed_lines(document):
        out.line(text, markup)
    if every_case:
        for text, markup in _every_case_lines(document):
            out.line(text, markup)
        out.line(*_gate_line(document))
    out.line(*_verdict_line(document))
    if overridden is not None:
        out.line(*overridden)


# -- the verbs -------------------------------------------------------------------------------

def _keygen(args: argparse.Namespace, out: Out) -> int:
    folder = Path(args.dir)
    try:
        private, public, print_ = signing.generate(folder)
    except FileExistsError as exc:
        raise Trouble(f"{exc.args[0]} exists; not overwritten (choose another folder)") from None
    except OSError as exc:
        raise Trouble(f"cannot write the key pair into {folder}: {exc.strerror or exc}"
                      ) from None
    out.line(f"wrote the private key {private} (mode 0600): keep it secret — store it as a CI "
             "secret and give it to pytest as $ELIZON_SIGN_KEY or --elizon-sign-key")
    out.line(f"wrote the public key {public}: give it to whoever verifies "
             "(elizon-eval verify --public-key)")
    out.line(f"fingerprint {print_}")
    return EXIT_OK


def _show(args: argparse.Namespace, out: Out) -> int:
    document = _document(Path(args.results))
    _present(out, document, every_case=False)
    if args.html:  # the same page --elizon-html writes, from the file's cases
        try:
            found = override.find(document)
        except EvidenceError:
            found = None  # the terminal said why it does not hold; the page shows no override
        if found is not None:
            document.aggregate.override_note = (f"{override.summary(found[0])} (signed by "
                                                f"{found[1]}, not checked)")
        _write(Path(args.html), html.render(document.aggregate,
                                            evidence.regression_of(document.data)))
    return EXIT_OK


def _diff(args: argparse.Namespace, out: Out) -> int:
    old, new = _document(Path(args.old)), _document(Path(args.new))
    # paired and gated as --elizon-fail-on-regression does (reporting/regression.py)
    regression = compare(old.data, new.aggregate, str(old.path),
                         fail_on_regression=args.fail_on_regression)
    counts = regression.counts()
    out.line(f"{safe(old.path)} -> {safe(new.path)}: "
             + ", ".join(f"{n} {kind}" for kind, n in counts.items()), {"bold": True})
    old_hashes = {s["path"]: s["sha256"] for s in old.data["suites"]}
    new_hashes = {s["path"]: s["sha256"] for s in new.data["suites"]}
    for path in regression.changed_suites:
        out.line(f"suite file changed: {safe(path)} (sha256 {safe(old_hashes[path][:12])}… -> "
                 f"{safe(new_hashes[path][:12])}…)", {"yellow": True})
    rows = [(c.change, safe(c.nodeid), c.before or "-", c.after or "-")
            for c in regression.changes if c.change != "unchanged"]
    if rows:
        head = ("change", "case", "before", "after")
        widths = [max(len(row[i]) for row in [head, *rows]) for i in range(len(head))]
        for row in [head, *rows]:
            out.line("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip(),
                     {"bold": row is head, "red": row[0] == "regressed",
                      "green": row[0] == "improved"})
    else:
        out.line("no case changed")
    # docs/contract.md#significant-regressions: which changes are more than noise
    for change in regression.significance:
        out.line(f"{change.verdict}: {safe(change.suite)} {change.metric} {change.change:+.3g} "
                 f"[{change.low:+.3g}, {change.high:+.3g}] ({change.test}, p={change.p_value:.3g}, "
                 f"Holm p={change.adjusted_p:.3g})",
                 {"red": change.regressed, "green": change.significant and not change.regressed})
    failed = False
    # one rule with pytest's --elizon-fail-on-regression (docs/cli.md#diff): a case of a
    # must-pass suite that regressed would have failed that run; an advisory one never does,
    # nor one NEW names advisory (an advisory variant's, a gated variant's: docs/format.md#variants)
    gated = [c for c in regression.changes if c.change in ("regressed", "not run")
             and c.nodeid.split("::", 1)[0] in regression.must_pass
             and not (c.after or "").startswith(ADVISORY_PREFIX)]
    if args.fail_on_regression and gated:
        advisory = counts["regressed"] + counts.get("not run", 0) - len(gated)
        said = " or ".join(kind for kind in ("regressed", "not run")
                           if any(c.change == kind for c in gated))
        out.line(f"{len(gated)} case{'s' if len(gated) != 1 else ''} of must-pass suites "
                 f"{said} (--fail-on-regression)"
                 + (f"; {advisory} advisory, which never fail the run"
                    if advisory else ""), {"red": True, "bold": True})
        failed = True
    if regression.fails_run:  # a significant regression, as pytest's flag fails the run on
        out.line(safe(regression.verdict_note().replace("--elizon-fail-on-regression",
                                                        "--fail-on-regression", 1)),
                 {"red": True, "bold": True})
        failed = True
    if args.fail_on_regression:  # and a variant significantly worse than its reference in
        new.aggregate.gate_variants = True  # NEW, as the flag gates a run's variants
        note = new.aggregate.variant_note()
        if note:
            out.line(safe(note.replace("--elizon-fail-on-regression", "--fail-on-regression",
                                       1)), {"red": True, "bold": True})
            failed = True
    if failed:
        return EXIT_NO
    return EXIT_OK


def _shard_signature(document: Document, public: Any, keys: dict[str, Any]) -> str | None:
    """The fingerprint of the key that verifiably signed a shard; None when no key at hand
    can vouch for it (no ``.sig``, or one by a key not given). SignatureInvalid when a
    ``.sig`` beside it is not for it, or names a key at hand and does not verify with it."""
    if public is not None:  # --public-key: every shard signed by exactly that key
        return _check_signature(document, public)
    path = signing.signature_path(document.path)
    if not os.path.lexists(path):
        return None
    try:
        data = evidence.read_json_file(path, evidence.MAX_SMALL_BYTES)
    except EvidenceError as exc:
        raise signing.SignatureInvalid(f"{path}: {exc}") from None
    named = signing.check_document(document.data, data)  # an edit shows without a key
    key = keys.get(named)
    return None if key is None else signing.verify(document.data, data, key)


def _merge(args: argparse.Namespace, out: Out) -> int:
    key = _sign_key(args.sign_key)
    public = _public_key(Path(args.public_key)) if args.public_key else None
    documents = [_document(Path(p)) for p in args.shards]
    # The keys a shard's signature can be verified with: the one given, and the signing
    # key's own (a matrix signs its shards with the key that signs the merge).
    keys = {} if key is None else {key.fingerprint: key.key.public_key()}
    if public is not None:
        keys[signing.fingerprint(public)] = public
    unverified: list[Document] = []
    for document in documents:
        try:
            if _shard_signature(document, public, keys) is None:
                unverified.append(document)
        except signing.SignatureInvalid as exc:
            print(f"{ELIZON_RESULTS_SIGNATURE_INVALID}: {safe(document.path)}: {safe(exc)}",
                  file=sys.stderr)
            return EXIT_NO
    if key is not None and unverified and not args.allow_unsigned:
        # A signature over the merge would vouch for results no key vouched for.
        names = ", ".join(safe(d.path) for d in unverified)
        print(f"elizon-eval merge: not signing: no signature verifies {names} (no .sig beside "
              f"{'it' if len(unverified) == 1 else 'them'}, or one by a key not given); sign "
              "the shards, give their signer's --public-key, or pass --allow-unsigned to sign "
              "over them anyway", file=sys.stderr)
        return EXIT_NO
    try:
        data, aggregate, notes = evidence.merge(documents)
    except EvidenceError as exc:
        print(f"elizon-eval merge: {safe(exc)}", file=sys.stderr)
        return EXIT_NO
    target = Path(args.output)
    text = json.dumps(data, ensure_ascii=False, indent=2) + "\n"
    _write(target, text)
    written = [f"results {target}"]
    if key is not None:
        _write(signing.signature_path(target), signing.signature_text(text, key))
        written.append(f"signature {signing.signature_path(target)} ({key.fingerprint})")
    if args.junit:
        _write(Path(args.junit), junit.render(aggregate))
        written.append(f"JUnit {args.junit}")
    if args.markdown:
        _write(Path(args.markdown), markdown.render(aggregate))
        written.append(f"markdown {args.markdown}")
    cases = len(aggregate)
    out.line(f"merged {cases} case{'s' if cases != 1 else ''} of {len(aggregate.suites())} "
             f"suites from {len(documents)} shard{'s' if len(documents) != 1 else ''}: "
             f"{'PASS' if aggregate.passed else 'FAIL'}")
    for item in written:
        out.line(f"  wrote {safe(item)}")
    for note in notes:  # what the merge decided itself (docs/cli.md#merge)
        out.line(f"  {safe(note)}", {"yellow": True})
    if key is not None and unverified:
        out.line(f"  signed over {len(unverified)} shard{'s' if len(unverified) != 1 else ''} "
                 "no given key vouches for (--allow-unsigned): "
                 + ", ".join(safe(d.path) for d in unverified), {"yellow": True})
    return EXIT_OK


def _who(given: str | None) -> str:
    if given is None:
        try:
            given = getpass.getuser()
        except (OSError, KeyError, ImportError):
            given = "unknown"
    return visible(given, keep_newlines=False).strip()[:200] or "unknown"


def _acknowledge(args: argparse.Namespace, out: Out) -> int:
    public = _public_key(Path(args.public_key)) if args.public_key else None
    document = _document(Path(args.results))
    signed_by = None
    if public is not None:
        try:
            signed_by = _check_signature(document, public)
        except signing.SignatureInvalid as exc:
            print(f"{ELIZON_RESULTS_SIGNATURE_INVALID}: {safe(exc)}", file=sys.stderr)
            return EXIT_NO
    approver = _public_key(Path(args.approver_key)) if args.approver_key else public
    _present(out, document, every_case=True, key=approver)
    key = _sign_key(args.sign_key)
    try:
        overridden = override.find(document, approver)
    except EvidenceError as exc:
        print(f"{EVALUATION_OVERRIDE_INVALID}: {safe(exc)}", file=sys.stderr)
        return EXIT_NO
    if signed_by:
        out.line(f"signature: valid, by {signed_by}", {"green": True})
    if args.acknowledge_evaluation:
        how = "--acknowledge-evaluation"
    elif sys.stdin.isatty():
        out.stream.write('Type "yes" to acknowledge these results: ')
        out.stream.flush()
        try:
            answer = sys.stdin.readline()
        except (OSError, ValueError):
            answer = ""
        if answer.strip().lower() != "yes":
            print(f"{EVALUATION_NOT_ACKNOWLEDGED}: the answer was not 'yes'; nothing written",
                  file=sys.stderr)
            return EXIT_NO
        how = "typed yes on a terminal"
    else:
        print(f"{EVALUATION_NOT_ACKNOWLEDGED}: no terminal to ask on; after looking at the "
              "results above, acknowledge them with --acknowledge-evaluation", file=sys.stderr)
        return EXIT_USAGE
    ack = evidence.acknowledgement(document, by=_who(args.by), at=provenance.now(), how=how)
    if signed_by:
        ack["signed_by"] = signed_by
    if overridden is not None:  # the person saw the gate as overridden: the record says so
        ack["override"] = {name: overridden[0][name] for name in ("approver", "reason", "at")}
        ack["override"]["signed_by"] = overridden[1]
    if key is not None:
        ack = override.sign(ack, key)
    path = evidence.ack_path(document.path)
    _write(path, json.dumps(ack, ensure_ascii=False, indent=2) + "\n")
    out.line(f"acknowledged by {safe(ack['by'])} at {ack['at']}: wrote {safe(path)}",
             {"bold": True})
    return EXIT_OK


def _verify(args: argparse.Namespace, out: Out) -> int:
    if args.results is None:
        asked = [flag for flag, given in (("--public-key", args.public_key),
                                          ("--require-ack", args.require_ack),
                                          ("--require-pass", args.require_pass),
                                          ("--approver-key", args.approver_key)) if given]
        if not args.attestation:
            args.usage_error("give RESULTS, --attestation FILE, or both")
        if asked:
            args.usage_error(f"{', '.join(asked)}: these check a results file: give RESULTS")
    secret = _attestation_secret() if args.attestation else None
    public = _public_key(Path(args.public_key)) if args.public_key else None
    errors: list[str] = []
    warnings: list[str] = []
    good: list[str] = []
    document = None
    if args.results is not None:
        path = Path(args.results)
        try:
            document = evidence.read_document(path)
        except EvidenceError as exc:
            print(f"{ELIZON_RESULTS_INVALID}: {safe(path)}: {safe(exc)}", file=sys.stderr)
            return EXIT_NO
        _verify_results(args, document, public, errors, warnings, good, out)
    status = EXIT_OK
    if secret is not None:
        status = _verify_attestations(args.attestation, secret, document, errors, good)
    for line in errors + warnings:
        print(line, file=sys.stderr)
    if errors:
        return max(status, EXIT_NO)
    out.line("verified: " + "; ".join(good), {"green": True})
    return EXIT_OK


def _verify_results(args: argparse.Namespace, document: Document, public: Any,
                    errors: list[str], warnings: list[str], good: list[str], out: Out) -> None:
    """``verify``'s checks of the results file: its signature, acknowledgement and gate."""
    path = document.path
    good.append(f"{safe(path)} is a valid results file (document sha256 {document.sha256})")
    if public is not None:
        try:
            good.append(f"signature valid, by {_check_signature(document, public)}")
        except signing.SignatureInvalid as exc:
            errors.append(f"{ELIZON_RESULTS_SIGNATURE_INVALID}: {safe(path)}: {safe(exc)}")
    approver = _public_key(Path(args.approver_key)) if args.approver_key else public
    if args.require_ack:
        try:
            ack = evidence.check_acknowledgement(document)
            signer = override.check_signed(ack, approver, str(evidence.ack_path(path)))
            if signer is None:  # only a key can demand a signature; never passed unsaid
                how = ", UNSIGNED"
                warnings.append(f"warning: {safe(evidence.ack_path(path))} is not signed: "
                                "anyone who can write beside the results could have made it; "
                                "sign it ('elizon-eval acknowledge --sign-key') and verify "
                                "with --approver-key")
            elif approver is None:  # for its content, but by whoever holds some key
                how = f", signed by {safe(signer)} (not checked: give --approver-key)"
            else:
                how = f", signed by {safe(signer)}"
            good.append(f"acknowledged by {safe(ack['by'])} at {safe(ack['at'])}{how}")
        except EvidenceError as exc:
            errors.append(f"{EVALUATION_NOT_ACKNOWLEDGED}: {safe(exc)}")
        except signing.SignatureInvalid as exc:
            errors.append(f"{EVALUATION_NOT_ACKNOWLEDGED}: the acknowledgement's signature "
                          f"does not hold: {safe(exc)}")
    if args.require_pass:
        failing = [s for s in document.aggregate.suites() if s.verdict == "fail"]
        # a run --elizon-fail-on-regression failed fails the gate as a failed suite does
        regressed = evidence.failed_regressions(document.data)
        # and one its variant gate failed (docs/contract.md#variant-comparison)
        worse = evidence.failed_variants(document)
        if failing or regressed or worse:
            parts = [f"{safe(s.info.path)} ({s.info.gate}) passed {s.count(PASSED)} of "
                     f"{len(s.results)}" for s in failing]
            if regressed:
                parts.append("significant regression (--elizon-fail-on-regression): "
                             + safe(evidence.regression_words(regressed)))
            if worse:
                parts.append(f"{_VARIANT_GATE}: {safe(evidence.variant_words(worse))}")
            honoured = _honoured_override(document, approver, errors)
            if honoured is None:
                errors.append(f"{EVALUATION_GATE_FAILED}: {'; '.join(parts)}")
            else:
                good.append(f"must-pass gate {honoured}")
        else:
            good.append("every must-pass suite passed")
    if not args.require_pass:  # not asked to decide on it, but never left unsaid
        overridden = _override_line(document, approver)
        if overridden is not None:
            out.line(*overridden)


def _attestation_secret() -> attestation.Secret:
    """The shared secret ``verify --attestation`` checks with; Trouble, naming the variable and
    never its value, when it is not set or too short."""
    try:
        secret = attestation.from_environment()
    except ValueError as exc:
        raise Trouble(f"--attestation: {exc}") from None
    if secret is None:
        raise Trouble(f"--attestation: an attestation is checked with the shared secret that "
                      f"keyed it, read from ${attestation.SECRET_VARIABLE}, which is not set")
    return secret


#: ``verify``'s exit status for an attestation that does not hold, by verdict
#: (docs/cli.md#verify): tampered 1, unusable 2, truncated 3, header 4.
EXIT_TRUNCATED, EXIT_HEADER = 3, 4
_ATTESTATION_EXIT = {attestation.TAMPERED: EXIT_NO, attestation.UNUSABLE: EXIT_USAGE,
                     attestation.TRUNCATED: EXIT_TRUNCATED, attestation.HEADER: EXIT_HEADER}


def _verify_attestations(files: list[str], secret: attestation.Secret,
                         document: Document | None, errors: list[str], good: list[str]) -> int:
    """Check each attestation's chain and, with a results ``document``, that it holds
    exactly the attested suites and cases, as attested, with the attested runs'
    provenance; the exit status of what does not hold."""
    status = EXIT_OK
    attested = attestation.Attested()
    for name in files:
        verdict = attestation.verify_file(Path(name), secret)
        if not verdict.valid:
            errors.append(f"{ELIZON_ATTESTATION_INVALID}: {safe(name)}: {safe(verdict.message)}")
            status = max(status, _ATTESTATION_EXIT[verdict.status])
            continue
        good.append(f"attestation {safe(name)} {safe(verdict.message)}")
        clash = attested.add(verdict)
        if clash is not None:
            errors.append(f"{ELIZON_ATTESTATION_INVALID}: {safe(name)}: {safe(clash)}")
            status = max(status, EXIT_NO)
    if document is not None and status == EXIT_OK:  # records that hold, to compare with
        found = attestation.compare(document.data, attested)
        if found is not None:
            errors.append(f"{ELIZON_ATTESTATION_INVALID}: {safe(document.path)}: {safe(found)}")
            status = EXIT_NO
        else:
            cases, suites = len(attested), len(attested.suites)
            good.append(f"its {cases} case{'s' if cases != 1 else ''}, {suites} "
                        f"suite{'s' if suites != 1 else ''} and provenance are as attested")
    return status


def _honoured_override(document: Document, key: Any, errors: list[str]) -> str | None:
    """How verify words an override it honours (bound to this document, its signature
    verified with ``key``); None, with the reason in ``errors``, when there is none to
    honour."""
    try:
        found = override.find(document, key)
    except EvidenceError as exc:
        errors.append(f"{EVALUATION_OVERRIDE_INVALID}: {safe(exc)}")
        return None
    if found is None:
        return None
    data, signer = found
    if key is None:
        where = safe(override.override_path(document.path))
        errors.append(f"{EVALUATION_OVERRIDE_INVALID}: {where} cannot be honoured without a "
                      "key to check its signature: give --approver-key (or --public-key)")
        return None
    return f"{safe(override.summary(data))} (signature valid, by {signer})"


def _override(args: argparse.Namespace, out: Out) -> int:
    key = _sign_key(args.sign_key)
    if key is None:
        print(f"{EVALUATION_OVERRIDE_INVALID}: an override must be signed: give --sign-key "
              "PATH (or the PEM in $ELIZON_SIGN_KEY)", file=sys.stderr)
        return EXIT_USAGE
    document = _document(Path(args.results))
    if args.public_key:
        try:
            _check_signature(document, _public_key(Path(args.public_key)))
        except signing.SignatureInvalid as exc:
            print(f"{ELIZON_RESULTS_SIGNATURE_INVALID}: {safe(exc)}", file=sys.stderr)
            return EXIT_NO
    try:
        data = override.make(document, approver=args.approver, reason=args.reason,
                             at=provenance.now(), key=key)
    except EvidenceError as exc:
        print(f"{EVALUATION_OVERRIDE_INVALID}: {safe(document.path)}: {safe(exc)}",
              file=sys.stderr)
        return EXIT_NO
    path = override.override_path(document.path)
    _write(path, json.dumps(data, ensure_ascii=False, indent=2) + "\n")
    out.line(f"must-pass gate {safe(override.summary(data))}; signed by {key.fingerprint}: "
             f"wrote {safe(path)}", {"yellow": True, "bold": True})
    return EXIT_OK


def _import_promptfoo(args: argparse.Namespace, out: Out) -> int:
    from .importers import promptfoo  # deferred: only this verb needs it

    try:
        conversion = promptfoo.convert(Path(args.config), Path(args.output))
        promptfoo.write(conversion, Path(args.output), force=args.force)
    except promptfoo.ImportFailed as exc:
        raise Trouble(str(exc)) from None
    for line in conversion.report(args.config, args.output):
        out.line(safe(line))
    return EXIT_OK


def _annotations_summarize(args: argparse.Namespace, out: Out) -> int:
    from . import agreement_cli  # deferred: only this verb needs it

    try:
        return agreement_cli.summarize(args.file, args.dispute_below, args.gold, args.json, out)
    except agreement_cli.AgreementTrouble as exc:
        raise Trouble(str(exc)) from None


def _align(args: argparse.Namespace, out: Out) -> int:
    from . import agreement_cli  # deferred: only this verb needs it

    try:
        return agreement_cli.align(args.package, args.judge, args.cache_dir, args.refresh,
                                   args.timeout, args.json, out)
    except agreement_cli.AgreementTrouble as exc:
        raise Trouble(str(exc)) from None


def _dataset_hash(args: argparse.Namespace, out: Out) -> int:
    try:
        return dataset_cli.run(args, out)
    except dataset_cli.DatasetTrouble as exc:
        raise Trouble(str(exc)) from None


def _prompts(args: argparse.Namespace, out: Out) -> int:
    try:
        return prompts_cli.run(args, out)
    except prompts_cli.PromptsTrouble as exc:
        raise Trouble(str(exc)) from None


# -- the parser ------------------------------------------------------------------------------

class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {safe(message)}\n")


_Verbs: TypeAlias = "argparse._SubParsersAction[_Parser]"


def parser() -> argparse.ArgumentParser:
    top = _Parser(
        prog="elizon-eval",
        description="Keys, and what happens to a pytest-elizon-eval results file after the "
                    "run: show it, compare two, merge the shards of a CI matrix, acknowledge "
                    "it, verify it before activating.",
        epilog="Exit status: 0 ok; 1 the data (or the person asked) said no; 2 usage error "
               "or a file that cannot be used. 'elizon-eval VERB --help' describes each verb.")
    top.add_argument("--version", action="version", version=f"elizon-eval {__version__}")
    verbs = top.add_subparsers(dest="verb", metavar="VERB", parser_class=_Parser)
    for add in VERBS:
        add(verbs)
    return top


def _add_keygen(verbs: _Verbs) -> None:
    p = verbs.add_parser("keygen", help="write a new Ed25519 key pair into DIR",
                         description="Write a new Ed25519 key pair: DIR/elizon-eval.key (the "
                                     "private key, mode 0600) and DIR/elizon-eval.pub. Existing "
                                     "files are never overwritten.")
    p.add_argument("dir", metavar="DIR")
    p.set_defaults(run=_keygen)


def _add_show(verbs: _Verbs) -> None:
    p = verbs.add_parser("show", help="print a results file as the terminal section does",
                         description="Print a results file the way the run's 'elizon eval' "
                                     "section does: provenance, per suite its verdict and "
                                     "baseline table, failed and timed-out cases, the "
                                     "regression if present. Colour only on a terminal.")
    p.add_argument("results", metavar="RESULTS")
    p.add_argument("--html", metavar="PATH",
                   help="also write the HTML report (as --elizon-html does) to PATH")
    p.set_defaults(run=_show)


def _add_diff(verbs: _Verbs) -> None:
    p = verbs.add_parser("diff", help="what changed between two results files",
                         description="The regression table from OLD to NEW: cases regressed, "
                                     "improved, new and removed, and suite files whose SHA-256 "
                                     "changed.")
    p.add_argument("old", metavar="OLD")
    p.add_argument("new", metavar="NEW")
    p.add_argument("--fail-on-regression", action="store_true",
                   help="exit 1 when a case regressed")
    p.set_defaults(run=_diff)


def _add_merge(verbs: _Verbs) -> None:
    p = verbs.add_parser("merge", help="one results document from the shards of a CI matrix",
                         description="Join the results files of a CI matrix's shards (each ran "
                                     "a subset with pytest --elizon-results) into one: cases "
                                     "joined per suite, metrics and verdicts recomputed. A case "
                                     "in two shards, or a suite whose file hash differs between "
                                     "shards, is an error (exit 1). A signature beside a shard "
                                     "must be for it; signing the merge needs every shard "
                                     "verified (or --allow-unsigned).")
    p.add_argument("shards", metavar="SHARD.json", nargs="+")
    p.add_argument("-o", "--output", metavar="ALL.json", required=True,
                   help="the merged results file")
    p.add_argument("--junit", metavar="PATH", help="also write the merged JUnit XML")
    p.add_argument("--markdown", metavar="PATH", help="also write the merged markdown summary")
    p.add_argument("--public-key", metavar="PATH",
                   help="first verify every shard's signature with this public key")
    p.add_argument("--sign-key", metavar="PATH",
                   help="sign the merged file with this private key (default: the PEM in "
                        "$ELIZON_SIGN_KEY, if set); every shard must then carry a signature "
                        "that verifies with --public-key or with this key's public half")
    p.add_argument("--allow-unsigned", action="store_true",
                   help="sign the merge even over shards no given key vouches for (a "
                        "signature beside a shard must still be for it)")
    p.set_defaults(run=_merge)


def _add_acknowledge(verbs: _Verbs) -> None:
    p = verbs.add_parser("acknowledge", help="a person acknowledges the results they saw",
                         description="Print every result next to the author's baseline, with "
                                     "the must-pass gate, and ask for a typed 'yes' on a "
                                     "terminal; then write RESULTS.ack.json binding the "
                                     "results' SHA-256, who, when and the verdict seen. Without "
                                     "a terminal, --acknowledge-evaluation is required (else "
                                     "exit 2).")
    p.add_argument("results", metavar="RESULTS")
    p.add_argument("--by", metavar="NAME", help="who acknowledges (default: the login name)")
    p.add_argument("--acknowledge-evaluation", action="store_true",
                   help="acknowledge without asking (for a person who looked in another way, "
                        "e.g. a CI environment's required reviewer)")
    p.add_argument("--public-key", metavar="PATH",
                   help="first verify the results' signature with this public key")
    p.add_argument("--sign-key", metavar="PATH",
                   help="sign the acknowledgement with this private key (default: the PEM in "
                        "$ELIZON_SIGN_KEY, if set)")
    p.add_argument("--approver-key", metavar="PATH",
                   help="the public key that signed an override beside the results (default: "
                        "--public-key)")
    p.set_defaults(run=_acknowledge)


def _add_override(verbs: _Verbs) -> None:
    p = verbs.add_parser("override", help="approve a failed must-pass gate, signed, on the record",
                         description="Record a person's approval of a failed must-pass gate as "
                                     "RESULTS.override.json: the approver, the reason, when, "
                                     "the failed suites and the results' provenance, bound to "
                                     "the results' SHA-256 and signed with --sign-key. Refused "
                                     "when the gate passed or there is no key. verify "
                                     "--require-pass honours it when its signature verifies.")
    p.add_argument("results", metavar="RESULTS")
    p.add_argument("--approver", metavar="NAME", required=True, help="who approves")
    p.add_argument("--reason", metavar="TEXT", required=True, help="why the failure is accepted")
    p.add_argument("--sign-key", metavar="PATH",
                   help="the approver's private key (default: the PEM in $ELIZON_SIGN_KEY)")
    p.add_argument("--public-key", metavar="PATH",
                   help="first verify the results' signature with this public key")
    p.set_defaults(run=_override)


def _add_verify(verbs: _Verbs) -> None:
    p = verbs.add_parser("verify", help="exit 0 only if the results may be activated",
                         description="Check a results file before activating: it must be a "
                                     "valid results file; with --public-key its signature must "
                                     "match; with --require-ack it must be acknowledged as it "
                                     "is; with --require-pass every must-pass suite must have "
                                     "passed; with --attestation the attestation's chain must "
                                     "hold and RESULTS must hold exactly the attested cases. "
                                     "One error line per failed check. Exit 1 for a failed "
                                     "check or a tampered attestation, 3 for a truncated one, "
                                     "4 for one whose header does not verify (wrong secret or "
                                     "tampered header); 2 for a file that cannot be used.",
                         epilog="Exit status: the highest that applies.")
    p.add_argument("results", metavar="RESULTS", nargs="?",
                   help="the results file (optional with --attestation)")
    p.add_argument("--public-key", metavar="PATH", help="the signer's public key (PEM)")
    p.add_argument("--attestation", metavar="FILE", action="append", default=[],
                   help="an attestation a run wrote (--elizon-attestation), checked with the "
                        "secret in $ELIZON_ATTESTATION_SECRET: every record must hold; with "
                        "RESULTS, its cases must be exactly the attested ones, as attested "
                        "(repeatable: one per shard of a merged file)")
    p.add_argument("--require-ack", action="store_true",
                   help="require RESULTS.ack.json for exactly this document")
    p.add_argument("--require-pass", action="store_true",
                   help="require every must-pass suite to have passed, or a failed gate "
                        "overridden by RESULTS.override.json whose signature verifies")
    p.add_argument("--approver-key", metavar="PATH",
                   help="the public key that signed the acknowledgement and the override "
                        "(default: --public-key)")
    p.set_defaults(run=_verify, usage_error=p.error)


def _add_import(verbs: _Verbs) -> None:
    p = verbs.add_parser("import", help="bring existing evals in: import promptfoo CONFIG -o DIR",
                         description="Convert another tool's evals into an Elizon package.")
    sources = p.add_subparsers(dest="source", metavar="SOURCE", parser_class=_Parser,
                               required=True)
    q = sources.add_parser("promptfoo", help="a promptfooconfig.yaml as an Elizon package",
                           description="Write elizon.yaml and suite.yaml (and "
                                       "promptfoo_checks.py for python asserts) into DIR from "
                                       "a promptfoo config: its tests, defaultTest, file:// "
                                       "test files, vars and assertions. What has no Elizon "
                                       "equivalent is listed at the end and kept as a comment "
                                       "on its case. Providers are not converted. What is "
                                       "written is checked first: a package that would not "
                                       "load is an error and nothing is written.")
    q.add_argument("config", metavar="CONFIG")
    q.add_argument("-o", "--output", metavar="DIR", required=True,
                   help="the package folder to write")
    q.add_argument("--force", action="store_true",
                   help="overwrite files that exist (a link is replaced, never written "
                        "through)")
    q.set_defaults(run=_import_promptfoo)


def _add_probes(verbs: _Verbs) -> None:
    p = verbs.add_parser("probes", help="the red-team probe pack: probes list [--category C]",
                         description="The probe pack shipped with the plugin, one "
                                     "file per category ("
                                     + ", ".join(probe_names.CATEGORIES)
                                     + "), which a manifest's probes: includes.")
    actions = p.add_subparsers(dest="action", metavar="ACTION", parser_class=_Parser,
                               required=True)
    q = actions.add_parser("list", help="print the catalogue",
                           description="Print every probe: category, id, severity, what it "
                                       "checks, and its input ({canary} is the run's canary).")
    q.add_argument("--category", choices=probe_names.CATEGORIES, help="only this category")
    q.set_defaults(run=_probes_list)


def _add_annotations(verbs: _Verbs) -> None:
    p = verbs.add_parser("annotations", help="several people's labels: annotations summarize "
                                             "FILE", description="Summaries of human labels.")
    actions = p.add_subparsers(dest="action", metavar="ACTION", parser_class=_Parser,
                               required=True)
    q = actions.add_parser("summarize", help="gold labels, agreement, disputes, Fleiss' kappa",
                           description="Read an annotations file (JSONL or CSV rows: case, "
                                       "annotator, label, optional confidence, output, input) "
                                       "and print per case the gold (majority) label and the "
                                       "share of raters who gave it, the overall agreement, "
                                       "the disputed cases and Fleiss' kappa (null unless "
                                       "every case has the same number, at least 2, of "
                                       "raters).")
    q.add_argument("file", metavar="FILE")
    q.add_argument("--dispute-below", type=float, default=0.8, metavar="SHARE",
                   help="a case whose agreement is below this is disputed (default 0.8)")
    q.add_argument("--gold", metavar="PATH",
                   help="write the gold labels as a judge-alignment labels file (JSONL)")
    q.add_argument("--json", action="store_true", help="print the summary as JSON")
    q.set_defaults(run=_annotations_summarize)


def _add_align(verbs: _Verbs) -> None:
    p = verbs.add_parser("align", help="measure a package's judge against its human labels",
                         description="Grade every labelled output of the package's "
                                     "alignment: labels with its judge and print agreement, "
                                     "Cohen's kappa with its 95% interval, mean absolute "
                                     "error, Pearson r, the confusion matrix and the "
                                     "Landis-Koch label. The result is kept where pytest runs "
                                     "in this folder look for it (.pytest_cache/d/elizon/"
                                     "alignment). Exit 1 when kappa is below minKappa.")
    p.add_argument("package", metavar="PACKAGE", help="the package folder or its elizon.yaml")
    p.add_argument("--judge", metavar="SPEC",
                   help="the judge, as --elizon-judge takes it (default: the manifest's judge:)")
    p.add_argument("--cache-dir", default=".pytest_cache", metavar="DIR",
                   help="pytest's cache folder of the project (default .pytest_cache)")
    p.add_argument("--refresh", action="store_true",
                   help="grade anew instead of reusing cached grades")
    p.add_argument("--timeout", type=float, default=90.0, metavar="SECONDS",
                   help="time limit of each grade (default 90)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(run=_align)


def _add_dataset(verbs: _Verbs) -> None:
    dataset_cli.add_parser(verbs, _dataset_hash)


def _add_prompts(verbs: _Verbs) -> None:
    prompts_cli.add_parser(verbs, _prompts)


def _add_history(verbs: _Verbs) -> None:
    p = verbs.add_parser("history", help="ask the history store: trends, failing and flaky "
                                         "cases; history diff RUN_A RUN_B",
                         description="Per suite, the trend of its last runs (pass rate with "
                                     "its 95% Wilson interval, cost, p95 latency, judge "
                                     "score); the cases that fail in their latest run and the "
                                     "run since which they fail; the cases flaky across runs "
                                     "(outcome changed back and forth while the suite file, "
                                     "entry point and case stayed the same). 'history diff "
                                     "RUN_A RUN_B [STORE]' compares two runs as 'diff' "
                                     "compares two results files (a run: its number, "
                                     "'latest', or -N, the Nth from the latest). STORE "
                                     "is a SQLite file or a postgresql:// URL (default: "
                                     ".elizon/history.sqlite here or in the nearest parent "
                                     "folder that has one).")
    p.add_argument("words", nargs="*", metavar="STORE | diff RUN_A RUN_B [STORE]")
    p.add_argument("--suite", action="append", default=[], metavar="PATH",
                   help="only this suite (a path or a glob pattern; repeatable)")
    p.add_argument("--last", type=int, default=30, metavar="N",
                   help="the last N runs (default 30)")
    p.add_argument("--format", choices=("table", "json"), default="table")
    p.set_defaults(run=_history)


def _add_power(verbs: _Verbs) -> None:
    p = verbs.add_parser("power", help="cases or repeats needed to detect a pass-rate drop",
                         description="How many cases detect a pass-rate fall from --rate by "
                                     "--drop at --alpha and --power, by the tests "
                                     "--elizon-baseline runs: McNemar's exact test for cases "
                                     "each run once, and with --cases N the repeats N cases "
                                     "need for the paired t-test on per-case pass rates; "
                                     "without --drop, the smallest drop --cases (x --repeats) "
                                     "detect.")
    p.add_argument("--rate", metavar="P", required=True, type=_share("a pass rate", True),
                   help="the suite's pass rate now, above 0 and at most 1, e.g. 0.9")
    p.add_argument("--drop", metavar="D", type=_share("a drop in pass rate", True),
                   help="the fall to detect, e.g. 0.1 (at most P)")
    p.add_argument("--cases", metavar="N", type=_count("cases"), help="the suite's cases")
    p.add_argument("--repeats", metavar="K", type=_count("repeats"), default=1,
                   help="runs of each case (default 1; with --cases and without --drop)")
    p.add_argument("--alpha", metavar="A", type=_share("a significance level", False),
                   default=0.05, help="significance level (default 0.05)")
    p.add_argument("--power", metavar="POWER", type=_share("a power", False), default=0.8,
                   help="chance of detecting the drop when it is there (default 0.8)")
    p.set_defaults(run=_power)


#: Each verb's sub-parser, in the order 'elizon-eval --help' lists them. A new verb is a
#: function that adds its sub-parser (its ``set_defaults(run=...)`` names the function
#: that runs it) and one line here.
VERBS: tuple[Callable[[_Verbs], None], ...] = (
    _add_keygen,
    _add_show,
    _add_diff,
    _add_merge,
    _add_acknowledge,
    _add_override,
    _add_verify,
    _add_import,
    _add_probes,
    _add_annotations,
    _add_align,
    _add_dataset,
    _add_prompts,
    _add_history,
    _add_power,
)


def _history_store(given: str | None) -> Any:
    # deferred: only here
    from .history.store import DEFAULT_PATH, HistoryError, Store, describe, is_url

    if given is None:
        here = Path.cwd()
        found = next((d / DEFAULT_PATH for d in (here, *here.parents)
                      if (d / DEFAULT_PATH).is_file()), None)
        if found is None:
            raise Trouble(f"no history store: no {DEFAULT_PATH} here or in a parent folder; "
                          "name one (a SQLite file or a postgresql:// URL)")
        given = str(found)
    elif not is_url(given) and not Path(given).is_file():
        raise Trouble(f"no history store at {describe(given)}")  # a URL's login unshown
    try:
        return Store.open(given)
    except HistoryError as exc:
        raise Trouble(str(exc)) from None


def _history(args: argparse.Namespace, out: Out) -> int:
    from .history import queries  # deferred: only this verb reads the store

    words = list(args.words)
    if words and words[0] == "diff":
        return _history_diff(words[1:], out)
    if len(words) > 1:
        raise Trouble(f"expected at most one STORE, got {len(words)} words: "
                      f"{' '.join(safe(w) for w in words)}")
    if args.last < 1:
        raise Trouble(f"--last {args.last}: expected a number of runs of at least 1")
    store = _history_store(words[0] if words else None)
    try:
        found = queries.ask(store, last=args.last, suites=args.suite)
    finally:
        store.close()
    if args.format == "json":
        out.line(json.dumps(found.to_data(), ensure_ascii=False, indent=2))
        return EXIT_OK
    shown = f"runs {found.runs[0][0]}..{found.runs[-1][0]}" if found.runs else "no runs"
    out.line(f"history of {safe(found.store)}: {len(found.runs)} of {found.runs_total} runs "
             f"shown ({shown})", {"bold": True})
    for path, pooled in found.trends.items():
        # a suite run under variants: a table per variant, never their cases pooled
        # (docs/cli.md#history)
        apart = found.variant_trends.get(path)
        blocks = [(path, pooled)] if apart is None else [
            (f"{path}, variant {name}" if name is not None else f"{path}, without a variant",
             points) for name, points in apart.items()]
        for title, points in blocks:
            _trend_table(out, title, points)
    out.line("")
    if found.started_failing:
        out.line("not passing in their latest run:", {"bold": True})
        for case in found.started_failing:
            before = f"passed in run {case.last_passed}" if case.last_passed is not None \
                else "no pass in the runs shown"
            out.line(f"  {safe(case.nodeid)}  {case.outcome} since run {case.since} "
                     f"({before})", {"red": True})
    else:
        out.line("every case passed in its latest run", {"green": True})
    if found.flaky:
        out.line("flaky across runs (outcome changed, suite, entry point and case unchanged):",
                 {"bold": True})
        for flaky in found.flaky:
            counts = ", ".join(f"{o} ×{n}" for o, n in flaky.outcomes.items())
            out.line(f"  {safe(flaky.nodeid)}  {flaky.changes} change"
                     f"{'s' if flaky.changes != 1 else ''} in {flaky.runs} runs: {counts}",
                     {"yellow": True})
    else:
        out.line("no case flaky across the runs shown")
    return EXIT_OK


def _trend_table(out: Out, title: str, points: Sequence[Any]) -> None:
    """One suite's (or one variant's) trend: a row per run."""
    from .reporting.usage_text import dollars  # deferred: only the history verb

    out.line("")
    out.line(f"{safe(title)}", {"bold": True})
    head = ("run", "started", "cases", "pass rate [95% CI]", "cost", "p95 ms", "judge")
    rows = [(str(p.run) + ("" if p.status == "finished" else f" ({p.status})"),
             safe(p.started), str(p.cases),
             f"{p.pass_rate:.3f} [{p.interval[0]:.3f}, {p.interval[1]:.3f}]",
             dollars(p.cost_usd, "-"),
             "-" if p.p95_latency_ms is None else f"{p.p95_latency_ms:.1f}",
             "-" if p.judge_score is None else f"{p.judge_score:.3f}") for p in points]
    widths = [max(len(row[i]) for row in [head, *rows]) for i in range(len(head))]
    changed = {i for i in range(1, len(points))
               if points[i].application != points[i - 1].application}
    for i, row in enumerate([head, *rows]):
        if i - 1 in changed:  # docs/cli.md#history: a boundary, not a trend
            out.line(f"  -- the application changed: {safe(points[i - 1].application)}",
                     {"yellow": True})
        out.line("  " + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True))
                 .rstrip(), {"bold": i == 0})


def _history_diff(words: list[str], out: Out) -> int:
    from .history import queries  # deferred: only this verb reads the store
    from .reporting import results  # deferred: the older run as a results document

    if len(words) not in (2, 3):
        raise Trouble("usage: elizon-eval history diff RUN_A RUN_B [STORE]")
    try:  # a run number, or counted from the latest: latest = -1, the one before -2
        given = [-1 if w == "latest" else int(w) for w in words[:2]]
    except ValueError:
        raise Trouble(f"runs are numbers as 'elizon-eval history' lists them, 'latest', or "
                      f"-N (the Nth run from the latest): got {safe(words[0])} "
                      f"{safe(words[1])}") from None
    store = _history_store(words[2] if len(words) == 3 else None)
    try:
        back = max(-n for n in given)
        recent = [int(r[0]) for r in store.rows("SELECT id FROM runs ORDER BY id DESC "
                                                "LIMIT ?", (back,))] if back > 0 else []
        first, second = (recent[-n - 1] if 0 < -n <= len(recent) else n for n in given)
        known = {int(r[0]) for r in store.rows("SELECT id FROM runs WHERE id IN (?, ?)",
                                               (first, second))}
        missing = [str(r) for r in (first, second) if r not in known]
        if missing:
            raise Trouble(f"no run {' or '.join(missing)} in {safe(store.where)}"
                          + (f" (it holds {len(recent)} runs)" if any(
                              int(m) < 0 for m in missing) else ""))
        old, new = queries.run_aggregate(store, first), queries.run_aggregate(store, second)
    finally:
        store.close()
    regression = compare(results.build(old), new, f"run {first}")
    counts = regression.counts()
    out.line(f"run {first} -> run {second}: "
             + ", ".join(f"{n} {kind}" for kind, n in counts.items()), {"bold": True})
    for path in regression.changed_suites:
        out.line(f"suite file changed: {safe(path)}", {"yellow": True})
    rows = [(c.change, safe(c.nodeid), c.before or "-", c.after or "-")
            for c in regression.changes if c.change != "unchanged"]
    head = ("change", "case", "before", "after")
    widths = [max(len(row[i]) for row in [head, *rows]) for i in range(len(head))]
    for row in [head, *rows] if rows else []:
        out.line("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip(),
                 {"bold": row is head, "red": row[0] == "regressed",
                  "green": row[0] == "improved"})
    if not rows:
        out.line("no case changed")
    return EXIT_OK



def _share(what: str, one: bool) -> Callable[[str], float]:
    """An argparse type: a number above 0 and below 1 (at most 1 when ``one``)."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not (0.0 < value < 1.0 or (one and value == 1.0)):
            top = "at most 1" if one else "below 1"
            raise argparse.ArgumentTypeError(f"expected {what} above 0 and {top}, got {text!r}")
        return value
    return parse


def _count(what: str) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = 0
        if not 1 <= value <= 10_000_000:
            raise argparse.ArgumentTypeError(f"expected a whole number of {what} from 1, "
                                             f"got {text!r}")
        return value
    return parse


def _power(args: argparse.Namespace, out: Out) -> int:
    from .power import power_lines  # deferred: only this verb needs it

    if args.drop is not None and args.drop > args.rate:
        raise Trouble(f"--drop {args.drop:g} is more than --rate {args.rate:g}: a pass rate "
                      "cannot fall below 0")
    if args.drop is None and args.cases is None:
        raise Trouble("give --drop D (the cases needed), or --cases N (the drop N cases "
                      "detect)")
    for line in power_lines(rate=args.rate, drop=args.drop, cases=args.cases,
                            repeats=args.repeats, alpha=args.alpha, power=args.power):
        out.line(line)
    return EXIT_OK


def _probes_list(args: argparse.Namespace, out: Out) -> int:
    from .redteam import pack as redteam  # deferred: the other verbs do without the probe pack

    for line in redteam.catalogue_lines(args.category):
        out.line(line)
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``elizon-eval``; the exit status."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:  # an ASCII locale still prints ✓ and Δ, escaped
            reconfigure(errors="backslashreplace")
    top = parser()
    args = top.parse_args(argv)
    run: Callable[[argparse.Namespace, Out], int] | None = getattr(args, "run", None)
    if run is None:
        top.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        return run(args, Out(sys.stdout))
    except Trouble as exc:
        print(f"elizon-eval {args.verb}: {safe(exc)}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # | head: the reader has what it wanted
        return EXIT_OK
    except Exception as exc:  # never a traceback for a file someone handed over
        print(f"elizon-eval {args.verb}: unexpected {type(exc).__name__}: {safe(exc)[:200]}",
              file=sys.stderr)
        return EXIT_USAGE
