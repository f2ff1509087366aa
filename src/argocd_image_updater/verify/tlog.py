"""Transparency-log (Rekor) evidence of a keyless signature, checked offline.

An entry is read from either layout:

* a sigstore bundle's ``verificationMaterial.tlogEntries[]`` (``canonicalizedBody``,
  ``integratedTime``, ``logIndex``, ``logId.keyId``, ``inclusionPromise.signedEntryTimestamp``,
  ``inclusionProof`` with its ``checkpoint``);
* cosign's ``dev.sigstore.cosign/bundle`` annotation: ``{"SignedEntryTimestamp": …, "Payload":
  {"body", "integratedTime", "logIndex", "logID"}}``.

It is accepted with either proof of inclusion, checked against the log keys of the trusted root:

* the **signed entry timestamp** (SET): the log's signature over the canonical JSON
  ``{"body","integratedTime","logID","logIndex"}`` (RFC 8785 key order), which also binds the
  integrated time;
* an **inclusion proof** (RFC 6962 Merkle audit path from ``SHA-256(0x00 || body)`` to
  ``rootHash``) whose **checkpoint** (a signed note: origin, tree size, root hash) is signed by
  the log and names the same tree size and root.

The entry's body must describe this very signature: same signature bytes, same certificate, same
hash of what was signed (``hashedrekord`` and ``dsse`` entries, as cosign writes them).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from argocd_image_updater.verify.keys import verify_with
from argocd_image_updater.verify.trustroot import TrustedRoot

if TYPE_CHECKING:  # imported where used: a controller that verifies nothing never loads it
    from cryptography import x509

_NOTE_SEPARATOR = "\n\n"
_SIGNATURE_PREFIX = "\u2014 "


class LogEntryError(ValueError):
    """A transparency-log entry that is missing, malformed or does not verify."""


@dataclass(frozen=True, slots=True)
class InclusionProof:
    log_index: int
    tree_size: int
    root_hash: bytes
    hashes: tuple[bytes, ...]
    checkpoint: str


@dataclass(frozen=True, slots=True)
class LogEntry:
    body: bytes
    integrated_time: int
    log_index: int
    log_id: bytes
    signed_entry_timestamp: bytes = b""
    proof: InclusionProof | None = None

    @property
    def time(self) -> datetime:
        return datetime.fromtimestamp(self.integrated_time, UTC)


def _b64(value: Any, what: str) -> bytes:
    if not isinstance(value, str) or not value:
        raise LogEntryError(f"{what} is missing")
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise LogEntryError(f"{what} is not base64") from None


def _int(value: Any, what: str) -> int:
    if isinstance(value, bool):
        raise LogEntryError(f"{what} is not an integer")
    try:
        return int(value)
    except (TypeError, ValueError):
        raise LogEntryError(f"{what} is missing or not an integer") from None


def _obj(value: Any, what: str) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise LogEntryError(f"{what} is missing or not an object")
    return value


def parse_entry(raw: Mapping[str, Any]) -> LogEntry:
    """A bundle ``tlogEntries[]`` item or cosign's Rekor bundle annotation."""
    if "Payload" in raw or "SignedEntryTimestamp" in raw:
        payload = _obj(raw.get("Payload"), "Rekor bundle Payload")
        log_id = payload.get("logID")
        try:
            key_id = bytes.fromhex(log_id) if isinstance(log_id, str) else b""
        except ValueError:
            key_id = b""
        if not key_id:
            raise LogEntryError("Rekor bundle Payload.logID is missing or not hex")
        return LogEntry(
            body=_b64(payload.get("body"), "Rekor bundle Payload.body"),
            integrated_time=_int(payload.get("integratedTime"), "Payload.integratedTime"),
            log_index=_int(payload.get("logIndex"), "Payload.logIndex"),
            log_id=key_id,
            signed_entry_timestamp=_b64(
                raw.get("SignedEntryTimestamp"), "Rekor bundle SignedEntryTimestamp"
            ),
        )
    promise = raw.get("inclusionPromise")
    proof = raw.get("inclusionProof")
    return LogEntry(
        body=_b64(raw.get("canonicalizedBody"), "tlog entry canonicalizedBody"),
        integrated_time=_int(raw.get("integratedTime", 0), "tlog entry integratedTime"),
        log_index=_int(raw.get("logIndex"), "tlog entry logIndex"),
        log_id=_b64(_obj(raw.get("logId"), "tlog entry logId").get("keyId"), "logId.keyId"),
        signed_entry_timestamp=_b64(
            _obj(promise, "inclusionPromise").get("signedEntryTimestamp"),
            "inclusionPromise.signedEntryTimestamp",
        )
        if promise
        else b"",
        proof=_proof(_obj(proof, "inclusionProof")) if proof else None,
    )


def _proof(raw: Mapping[str, Any]) -> InclusionProof:
    checkpoint = _obj(raw.get("checkpoint"), "inclusionProof.checkpoint").get("envelope")
    if not isinstance(checkpoint, str) or not checkpoint:
        raise LogEntryError("inclusionProof.checkpoint.envelope is missing")
    hashes = raw.get("hashes") or []
    if not isinstance(hashes, list):
        raise LogEntryError("inclusionProof.hashes is not a list")
    return InclusionProof(
        log_index=_int(raw.get("logIndex"), "inclusionProof.logIndex"),
        tree_size=_int(raw.get("treeSize"), "inclusionProof.treeSize"),
        root_hash=_b64(raw.get("rootHash"), "inclusionProof.rootHash"),
        hashes=tuple(_b64(h, "inclusionProof.hashes[]") for h in hashes),
        checkpoint=checkpoint,
    )


# --- inclusion --------------------------------------------------------------------------------


def set_payload(entry: LogEntry) -> bytes:
    """What the signed entry timestamp signs (canonical JSON, keys in RFC 8785 order)."""
    document = {
        "body": base64.b64encode(entry.body).decode(),
        "integratedTime": entry.integrated_time,
        "logID": entry.log_id.hex(),
        "logIndex": entry.log_index,
    }
    return json.dumps(document, sort_keys=True, separators=(",", ":")).encode()


def leaf_hash(body: bytes) -> bytes:
    return hashlib.sha256(b"\x00" + body).digest()


def _node(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(b"\x01" + left + right).digest()


def root_from_proof(index: int, size: int, leaf: bytes, path: tuple[bytes, ...]) -> bytes:
    """RFC 9162 §2.1.3.2: the root an audit path leads to; :class:`LogEntryError` if none."""
    if not 0 <= index < size:
        raise LogEntryError(f"inclusion proof index {index} is outside a tree of {size}")
    fn, sn, node = index, size - 1, leaf
    for sibling in path:
        if sn == 0:
            raise LogEntryError("inclusion proof is longer than the tree is deep")
        if fn % 2 == 1 or fn == sn:
            node = _node(sibling, node)
            while fn % 2 == 0 and fn != 0:
                fn, sn = fn >> 1, sn >> 1
        else:
            node = _node(node, sibling)
        fn, sn = fn >> 1, sn >> 1
    if sn != 0:
        raise LogEntryError("inclusion proof is shorter than the tree is deep")
    return node


def _checkpoint(note: str, root: TrustedRoot) -> tuple[int, bytes]:
    """Tree size and root hash of a checkpoint signed by a log of ``root``."""
    text, separator, signatures = note.partition(_NOTE_SEPARATOR)
    if not separator:
        raise LogEntryError("checkpoint has no signature")
    lines = text.split("\n")
    if len(lines) < 3:
        raise LogEntryError("checkpoint lacks origin, tree size or root hash")
    try:
        size, root_hash = int(lines[1]), base64.b64decode(lines[2], validate=True)
    except (ValueError, binascii.Error):
        raise LogEntryError("checkpoint tree size or root hash is malformed") from None
    signed = (text + "\n").encode()
    for line in signatures.split("\n"):
        if not line.startswith(_SIGNATURE_PREFIX):
            continue
        _, _, encoded = line[len(_SIGNATURE_PREFIX) :].rpartition(" ")
        try:
            blob = base64.b64decode(encoded, validate=True)
        except (binascii.Error, ValueError):
            continue
        signature = blob[4:]
        if any(verify_with(log.key, signature, signed) for log in root.logs):
            return size, root_hash
    raise LogEntryError(f"checkpoint is not signed by a log of {root.name}")


def verify_inclusion(entry: LogEntry, root: TrustedRoot) -> str:
    """Check the entry's inclusion; returns how (``signed entry timestamp`` / ``inclusion
    proof``). :class:`LogEntryError` when neither verifies."""
    log = root.log(entry.log_id)
    if log is None:
        raise LogEntryError(f"the entry's log {entry.log_id.hex()[:16]}… is not in {root.name}")
    if not log.valid.covers(entry.time):
        raise LogEntryError(
            f"the log key {entry.log_id.hex()[:16]}… of {root.name} was not valid at the "
            f"entry's integrated time {entry.time.isoformat()}"
        )
    problems = []
    if entry.signed_entry_timestamp:
        if verify_with(log.key, entry.signed_entry_timestamp, set_payload(entry)):
            return "signed entry timestamp"
        problems.append("the signed entry timestamp does not verify with the log's key")
    if entry.proof is not None:
        try:
            proof = entry.proof
            computed = root_from_proof(
                proof.log_index, proof.tree_size, leaf_hash(entry.body), proof.hashes
            )
            if computed != proof.root_hash:
                raise LogEntryError("the inclusion proof does not lead to its root hash")
            size, root_hash = _checkpoint(proof.checkpoint, root)
            if (size, root_hash) != (proof.tree_size, proof.root_hash):
                raise LogEntryError("the checkpoint is of another tree than the inclusion proof")
            return "inclusion proof"
        except LogEntryError as err:
            problems.append(str(err))
    if not problems:
        raise LogEntryError("the entry has neither a signed entry timestamp nor an inclusion proof")
    raise LogEntryError("; ".join(problems))


# --- the entry's body -------------------------------------------------------------------------


def _same_certificate(encoded: Any, leaf: x509.Certificate) -> bool:
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization

    try:
        pem = _b64(encoded, "entry public key")
        cert = x509.load_pem_x509_certificate(pem)
    except (LogEntryError, ValueError):
        return False
    return cert.public_bytes(serialization.Encoding.DER) == leaf.public_bytes(
        serialization.Encoding.DER
    )


def check_body(
    entry: LogEntry, leaf: x509.Certificate, signature: bytes, signed: bytes, payload: bytes
) -> None:
    """The entry must record this signature by this certificate over this content:
    ``hashedrekord`` over ``signed`` (the bytes the signature is over), or ``dsse`` over
    ``payload`` (the envelope's payload)."""
    try:
        body = json.loads(entry.body)
    except (ValueError, UnicodeDecodeError):
        raise LogEntryError("the entry body is not JSON") from None
    body = _obj(body, "entry body")
    kind, version = body.get("kind"), body.get("apiVersion")
    spec = _obj(body.get("spec"), "entry spec")
    if kind == "hashedrekord":
        sig = _obj(spec.get("signature"), "hashedrekord signature")
        digest = _obj(_obj(spec.get("data"), "hashedrekord data").get("hash"), "data.hash")
        if _b64(sig.get("content"), "hashedrekord signature") != signature:
            raise LogEntryError("the log entry records another signature")
        if not _same_certificate(_obj(sig.get("publicKey"), "publicKey").get("content"), leaf):
            raise LogEntryError("the log entry records another certificate")
        if digest.get("value") != hashlib.sha256(signed).hexdigest():
            raise LogEntryError("the log entry records the hash of other content")
        return
    if kind == "dsse":
        payload_hash = _obj(spec.get("payloadHash"), "dsse payloadHash")
        if payload_hash.get("value") != hashlib.sha256(payload).hexdigest():
            raise LogEntryError("the log entry records the hash of another payload")
        for item in spec.get("signatures") or []:
            if (
                isinstance(item, dict)
                and _b64(item.get("signature"), "dsse signature") == signature
                and _same_certificate(item.get("verifier"), leaf)
            ):
                return
        raise LogEntryError("the log entry records another signature or certificate")
    raise LogEntryError(f"log entries of kind {kind!r} {version!r} are not supported")
