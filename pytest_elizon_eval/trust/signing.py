"""Ed25519 signatures over results documents, and the keys that make them.

Owns what a signature is (docs/contract.md#trust): the canonical
serialisation of a document (:func:`canonical`), the signature file written
beside a results file (``<results>.sig``, :data:`SIGNATURE_FORMAT`) with its
signed per-case digests (:class:`CaseDigests`), key pairs (:func:`generate`)
and loading keys from PEM text without ever putting the key's text into a
message. A signature either verifies or raises :class:`SignatureInvalid` with
a reason a person can act on — for a results document changed after signing,
the first case that changed.

``cryptography`` is imported when a key is used, never at plugin start-up.
No pytest import here.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import (
        Ed25519PrivateKey,
        Ed25519PublicKey,
    )

__all__ = [
    "ALGORITHM",
    "CANONICALIZATION",
    "KEY_FILE",
    "PUBLIC_KEY_FILE",
    "SIGNATURE_FORMAT",
    "CaseDigests",
    "SignatureInvalid",
    "SigningKey",
    "canonical",
    "changed_case",
    "check_document",
    "document_sha256",
    "fingerprint",
    "generate",
    "load_public_key",
    "signature_file",
    "signature_path",
    "signature_text",
    "verify",
]

SIGNATURE_FORMAT = "pytest-elizon-eval/signature/v1"
ALGORITHM = "ed25519"
CANONICALIZATION = "pytest-elizon-eval/canonical-json/v1"
#: Prefixed to the canonical bytes before signing, so a signature made with an Elizon key
#: can never be replayed as a signature over something else that key signs.
CONTEXT = b"pytest-elizon-eval/signature/v1\n"
KEY_FILE = "elizon-eval.key"
PUBLIC_KEY_FILE = "elizon-eval.pub"
#: A PEM key is a few hundred bytes; anything far larger is not one (and is not read whole).
MAX_KEY_BYTES = 64 * 1024
#: Prefixed to the per-case digests before signing them, so that signature can never pass
#: for one of a document (or of anything else the key signs).
CASES_CONTEXT = b"pytest-elizon-eval/signature/v1/cases\n"
#: Each case's digest: the first 8 bytes of the SHA-256 of its canonical bytes. Enough to
#: tell which case changed; what proves the document is the signature over all of it.
CASE_DIGEST = "sha256/8"
_DIGEST_BYTES = 8
#: A run of more cases keeps no per-case digests: the signature file stays under the 1 MiB
#: a reader reads of it (65,536 digests are 699,052 characters of base64).
MAX_CASE_DIGESTS = 65_536


class SignatureInvalid(Exception):
    """The signature does not vouch for this document with this key; the message says why."""


def canonical(data: Any) -> bytes:
    """The bytes a signature covers: JSON with keys sorted, no whitespace, non-ASCII
    characters as themselves, numbers as Python's ``json`` writes them, UTF-8.

    Re-indenting a results file does not change them; any change of a value does.
    ``ValueError`` for data JSON cannot hold (NaN, infinity)."""
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False)
    # A lone surrogate (a file the plugin writes never holds one) still has one encoding.
    return text.encode("utf-8", "surrogatepass")


def _cases(data: Any) -> list[Any] | None:
    """A results document's cases in document order (``suites[].cases[]``); None for a
    document without suites (an acknowledgement, an override)."""
    suites = data.get("suites") if isinstance(data, dict) else None
    if not isinstance(suites, list):
        return None
    found: list[Any] = []
    for suite in suites:
        cases = suite.get("cases") if isinstance(suite, dict) else None
        if isinstance(cases, list):
            found += cases
    return found


def _digest(case: Any) -> bytes:
    return hashlib.sha256(canonical(case)).digest()[:_DIGEST_BYTES]


class CaseDigests:
    """The per-case digests of a results document, gathered a case at a time from each
    case's canonical bytes (as the writer makes them, or from the document read back)."""

    def __init__(self) -> None:
        self.count = 0
        self._packed = bytearray()

    def add(self, case_canonical: bytes) -> None:
        self.count += 1
        if self.count <= MAX_CASE_DIGESTS:
            self._packed += hashlib.sha256(case_canonical).digest()[:_DIGEST_BYTES]

    @classmethod
    def of(cls, data: Any) -> CaseDigests | None:
        cases = _cases(data)
        if cases is None:
            return None
        found = cls()
        for case in cases:
            found.add(canonical(case))
        return found

    def payload(self, document_sha256: str) -> dict[str, Any] | None:
        """What the cases' signature covers; None past :data:`MAX_CASE_DIGESTS`."""
        if self.count > MAX_CASE_DIGESTS:
            return None
        return {"count": self.count, "digest": CASE_DIGEST,
                "digests": base64.b64encode(bytes(self._packed)).decode("ascii"),
                "document_sha256": document_sha256}


def document_sha256(data: Any) -> str:
    """SHA-256 of the canonical bytes: the identity signatures and acknowledgements bind."""
    return hashlib.sha256(canonical(data)).hexdigest()


def signature_path(results: Path) -> Path:
    return results.with_name(results.name + ".sig")


def fingerprint(public_key: Ed25519PublicKey) -> str:
    """``sha256:`` and the hex SHA-256 of the raw 32-byte public key."""
    # deferred: cryptography costs start-up time; only signing and verifying need it
    from cryptography.hazmat.primitives import serialization

    raw = public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return "sha256:" + hashlib.sha256(raw).hexdigest()


def _pem_text(data: bytes) -> bytes:
    # CI secret stores sometimes keep a pasted PEM on one line with literal "\n"s.
    if b"\n" not in data.strip() and b"\\n" in data:
        data = data.replace(b"\\n", b"\n")
    return data.strip() + b"\n"


@dataclass(frozen=True, repr=False)
class SigningKey:
    """A private key, and where it came from. Its ``repr`` and every message name the source
    and the public fingerprint only, never the key."""

    key: Ed25519PrivateKey
    source: str

    def __repr__(self) -> str:
        return f"SigningKey({self.source}, {self.fingerprint})"

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.key.public_key())

    @classmethod
    def from_pem(cls, data: bytes, source: str) -> SigningKey:
        """``ValueError`` naming ``source`` (never the text) if ``data`` is not an unencrypted
        Ed25519 private key in PEM."""
        # deferred: cryptography costs start-up time; only signing and verifying need it
        from cryptography.exceptions import UnsupportedAlgorithm
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

        if b"PRIVATE KEY-----" not in data:
            raise ValueError(f"{source}: not a PEM private key (expected a '-----BEGIN PRIVATE "
                             "KEY-----' block, as 'elizon-eval keygen' writes)")
        try:
            key = serialization.load_pem_private_key(_pem_text(data), password=None)
        except TypeError:
            raise ValueError(f"{source}: the private key is encrypted; give an unencrypted "
                             "key (keep it in a CI secret instead)") from None
        except (ValueError, UnsupportedAlgorithm):
            raise ValueError(f"{source}: the PEM block is not a private key this plugin can "
                             "read") from None
        if not isinstance(key, Ed25519PrivateKey):
            raise ValueError(f"{source}: not an Ed25519 key (it is "
                             f"{type(key).__name__.lstrip('_')}); create one with "
                             "'elizon-eval keygen DIR'")
        return cls(key, source)

    @classmethod
    def from_file(cls, path: Path, source: str) -> SigningKey:
        return cls.from_pem(_read_key_file(path, source), source)

    def sign(self, data: Any) -> dict[str, Any]:
        """The signature file's data for the document ``data``."""
        return self.sign_canonical([canonical(data)])

    def sign_results(self, data: Any) -> dict[str, Any]:
        """:meth:`sign`, with the signed per-case digests of a results document."""
        return self.sign_canonical([canonical(data)], CaseDigests.of(data))

    def sign_canonical(self, parts: Iterable[bytes], cases: CaseDigests | None = None
                       ) -> dict[str, Any]:
        """:meth:`sign` of the document whose canonical bytes are ``parts`` joined (made
        piece by piece by a writer that never holds the document itself). Ed25519 signs
        the whole message, so the bytes are gathered once, in one buffer. ``cases``, filled
        while ``parts`` are made, adds the signed per-case digests (``cases``)."""
        message = bytearray(CONTEXT)
        digest = hashlib.sha256()
        for part in parts:
            digest.update(part)
            message += part
        signed: dict[str, Any] = {
            "format": SIGNATURE_FORMAT,
            "algorithm": ALGORITHM,
            "canonicalization": CANONICALIZATION,
            "document_sha256": digest.hexdigest(),
            "public_key_fingerprint": self.fingerprint,
            "signature": base64.b64encode(self.key.sign(message)).decode("ascii"),
        }
        payload = cases.payload(signed["document_sha256"]) if cases is not None else None
        if payload is not None:  # an extra key: verifiers of the document ignore it
            signed["cases"] = {
                "count": payload["count"], "digest": payload["digest"],
                "digests": payload["digests"],
                "signature": base64.b64encode(self.key.sign(
                    CASES_CONTEXT + canonical(payload))).decode("ascii")}
        return signed


def _read_key_file(path: Path, source: str) -> bytes:
    try:
        with path.open("rb") as fh:
            data = fh.read(MAX_KEY_BYTES + 1)
    except OSError as exc:
        raise ValueError(f"{source}: cannot read the key file: {exc.strerror or exc}") from None
    if len(data) > MAX_KEY_BYTES:
        raise ValueError(f"{source}: larger than {MAX_KEY_BYTES:,} bytes; not a key file")
    return data


def load_public_key(path: Path, source: str) -> Ed25519PublicKey:
    """An Ed25519 public key from a PEM file; ``ValueError`` naming ``source`` if it is not."""
    # deferred: cryptography costs start-up time; only signing and verifying need it
    from cryptography.exceptions import UnsupportedAlgorithm
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    data = _read_key_file(path, source)
    if b"PRIVATE KEY" in data:
        raise ValueError(f"{source}: this is a private key; give the public key "
                         f"({PUBLIC_KEY_FILE}), and keep the private one secret")
    try:
        key = serialization.load_pem_public_key(_pem_text(data))
    except (ValueError, UnsupportedAlgorithm):
        raise ValueError(f"{source}: not a PEM public key") from None
    if not isinstance(key, Ed25519PublicKey):
        raise ValueError(f"{source}: not an Ed25519 public key")
    return key


def check_document(data: Any, signature: Any) -> str:
    """What can be checked of ``signature`` (a signature file's data, untrusted) without a
    key: its form, and that it is for the document ``data``. The fingerprint of the key it
    names (not yet verified); SignatureInvalid says why it is not for this document."""
    return _for_document(data, signature)[0]


class _OtherDocument(SignatureInvalid):
    """The signature is for another document: a results file changed after signing."""


def _for_document(data: Any, signature: Any) -> tuple[str, bytes]:
    """:func:`check_document`'s fingerprint, and the canonical bytes (made once: a results
    file may be large)."""
    if not isinstance(signature, dict) or signature.get("format") != SIGNATURE_FORMAT:
        raise SignatureInvalid(f"the signature file is not a {SIGNATURE_FORMAT} file")
    if signature.get("algorithm") != ALGORITHM:
        raise SignatureInvalid(f"unsupported algorithm {str(signature.get('algorithm'))[:40]!r}"
                               f" (expected {ALGORITHM})")
    if signature.get("canonicalization") != CANONICALIZATION:
        raise SignatureInvalid("unsupported canonicalization "
                               f"{str(signature.get('canonicalization'))[:60]!r}")
    body = canonical(data)
    digest = hashlib.sha256(body).hexdigest()
    if signature.get("document_sha256") != digest:
        raise _OtherDocument(
            "the signature is for another document (it names document sha256 "
            f"{str(signature.get('document_sha256'))[:64]}, this one is {digest}): the results "
            "were changed after signing, or the signature file belongs to another results file")
    named = signature.get("public_key_fingerprint")
    if not isinstance(named, str):
        raise SignatureInvalid("the signature file names no public key fingerprint")
    return named, body


def verify(data: Any, signature: Any, public_key: Ed25519PublicKey) -> str:
    """Check ``signature`` (a signature file's data, untrusted) over the document ``data``
    with ``public_key``; the key's fingerprint when it verifies, else SignatureInvalid."""
    # deferred: cryptography costs start-up time; only signing and verifying need it
    from cryptography.exceptions import InvalidSignature

    try:
        named, body = _for_document(data, signature)
    except _OtherDocument as exc:
        where = changed_case(data, signature, public_key)
        raise SignatureInvalid(f"{exc}; {where}" if where else str(exc)) from None
    expected = fingerprint(public_key)
    if named != expected:
        raise SignatureInvalid(
            f"signed with another key ({named[:80]}), "
            f"not the given public key ({expected})")
    raw = signature.get("signature")
    try:
        sig = base64.b64decode(raw if isinstance(raw, str) else "", validate=True)
    except ValueError:
        sig = b""
    if len(sig) != 64:
        raise SignatureInvalid("the signature value is not a base64 Ed25519 signature")
    try:
        public_key.verify(sig, CONTEXT + body)
    except InvalidSignature:
        raise SignatureInvalid("the signature does not match the document and the key") from None
    return expected


def _case_label(position: int, case: Any) -> str:
    """``case 3 (id ID, node id NODEID)``: its 1-based place among the document's cases."""
    named = case if isinstance(case, dict) else {}
    return (f"case {position} (id {str(named.get('id'))[:200]}, node id "
            f"{str(named.get('nodeid'))[:200]})")


def changed_case(data: Any, signature: Any, public_key: Ed25519PublicKey) -> str | None:
    """Which case of the results document ``data`` is not as signed, by the signature's
    per-case digests (``cases``), once their own signature verifies with ``public_key``.
    None when there are none to go by: an older signature, one by another key, a run of
    more than :data:`MAX_CASE_DIGESTS` cases, or a document without suites."""
    # deferred: cryptography costs start-up time; only signing and verifying need it
    from cryptography.exceptions import InvalidSignature

    cases = signature.get("cases") if isinstance(signature, dict) else None
    now = _cases(data)
    if not isinstance(cases, dict) or now is None or cases.get("digest") != CASE_DIGEST:
        return None
    payload = {"count": cases.get("count"), "digest": CASE_DIGEST,
               "digests": cases.get("digests"),
               "document_sha256": signature.get("document_sha256")}
    try:
        packed = base64.b64decode(str(payload["digests"]), validate=True)
        sig = base64.b64decode(str(cases.get("signature")), validate=True)
        public_key.verify(sig, CASES_CONTEXT + canonical(payload))
    except (ValueError, InvalidSignature):
        return None  # not this key's digests: they could point anywhere
    count = payload["count"]
    if not isinstance(count, int) or len(packed) != count * _DIGEST_BYTES:
        return None
    signed = [packed[i:i + _DIGEST_BYTES] for i in range(0, len(packed), _DIGEST_BYTES)]
    current = [_digest(case) for case in now]
    for i, (was, is_) in enumerate(zip(signed, current, strict=False)):
        if was == is_:
            continue
        # one case taken out, or one put in, moves every later one: say so of the first
        if len(current) < len(signed) and signed[i + 1:i + 2] == [is_]:
            return (f"signed case {i + 1} was removed after signing "
                    f"({_case_label(i + 1, now[i])} was signed as case {i + 2})")
        if len(current) > len(signed) and current[i + 1:i + 2] == [was]:
            return f"{_case_label(i + 1, now[i])} was added after signing"
        return f"{_case_label(i + 1, now[i])} was changed after signing"
    if len(current) > len(signed):
        return f"{_case_label(len(signed) + 1, now[len(signed)])} was added after signing"
    if len(current) < len(signed):
        gone = len(signed) - len(current)
        return (f"the last {gone} signed case{'s' if gone != 1 else ''} "
                f"{'were' if gone != 1 else 'was'} removed after signing")
    return ("every case is as signed: what changed is outside the cases (the verdict, a "
            "suite's fields, the provenance)")


def generate(folder: Path) -> tuple[Path, Path, str]:
    """Write a new key pair into ``folder``: the private key (mode 0600, PKCS#8 PEM) and the
    public key (PEM). Never overwrites: ``FileExistsError`` if either file exists."""
    # deferred: cryptography costs start-up time; only signing and verifying need it
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    private_path, public_path = folder / KEY_FILE, folder / PUBLIC_KEY_FILE
    for path in (private_path, public_path):
        if path.exists():
            raise FileExistsError(path)
    folder.mkdir(parents=True, exist_ok=True)
    key = Ed25519PrivateKey.generate()
    private_pem = key.private_bytes(serialization.Encoding.PEM,
                                    serialization.PrivateFormat.PKCS8,
                                    serialization.NoEncryption())
    public_pem = key.public_key().public_bytes(serialization.Encoding.PEM,
                                               serialization.PublicFormat.SubjectPublicKeyInfo)
    # Created with mode 0600 (O_EXCL: never through a file or link someone placed there),
    # so the key is never readable by others, not even for a moment.
    fd = os.open(private_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(private_pem)
    os.chmod(private_path, 0o600)  # whatever the umask did
    fd = os.open(public_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    with os.fdopen(fd, "wb") as fh:
        fh.write(public_pem)
    return private_path, public_path, fingerprint(key.public_key())


def signature_text(results_text: str, key: SigningKey) -> str:
    """The signature file for the results file whose text is ``results_text``."""
    return signature_file(key.sign_results(json.loads(results_text)))


def signature_file(signed: dict[str, Any]) -> str:
    """The signature file's text for :meth:`SigningKey.sign`'s data."""
    return json.dumps(signed, indent=2) + "\n"
