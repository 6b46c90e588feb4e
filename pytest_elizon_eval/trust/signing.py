"""Ed25519 signatures over results documents, and the keys that make them.

Owns what a signature is (docs/contract.md#trust): the canonical
serialisation of a document (:func:`canonical`), the signature file written
beside a results file (``<results>.sig``, :data:`SIGNATURE_FORMAT`), key
pairs (:func:`generate`) and loading keys from PEM text without ever putting
the key's text into a message. A signature either verifies or raises
:class:`SignatureInvalid` with a reason a person can act on.

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
    "SignatureInvalid",
    "SigningKey",
    "canonical",
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

    def sign(self, data: Any) -> dict[str, str]:
        """The signature file's data for the document ``data``."""
        return self.sign_canonical([canonical(data)])

    def sign_canonical(self, parts: Iterable[bytes]) -> dict[str, str]:
        """:meth:`sign` of the document whose canonical bytes are ``parts`` joined (made
        piece by piece by a writer that never holds the document itself). Ed25519 signs
        the whole message, so the bytes are gathered once, in one buffer."""
        message = bytearray(CONTEXT)
        digest = hashlib.sha256()
        for part in parts:
            digest.update(part)
            message += part
        return {
            "format": SIGNATURE_FORMAT,
            "algorithm": ALGORITHM,
            "canonicalization": CANONICALIZATION,
            "document_sha256": digest.hexdigest(),
            "public_key_fingerprint": self.fingerprint,
            "signature": base64.b64encode(self.key.sign(message)).decode("ascii"),
        }


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
        raise SignatureInvalid(
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

    named, body = _for_document(data, signature)
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
    return signature_file(key.sign(json.loads(results_text)))


def signature_file(signed: dict[str, str]) -> str:
    """The signature file's text for :meth:`SigningKey.sign`'s data."""
    return json.dumps(signed, indent=2) + "\n"
