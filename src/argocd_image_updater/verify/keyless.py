"""Keyless (Fulcio certificate) signatures, checked offline against a Sigstore trusted root.

A keyless signature carries a short-lived certificate (and maybe its chain) and a transparency
log entry. It passes when:

1. the log entry verifies (:mod:`~argocd_image_updater.verify.tlog`: signed entry timestamp, or
   inclusion proof with a signed checkpoint) and records this signature and certificate;
2. the certificate chains to a certificate authority of the trusted root, every certificate
   valid at the entry's **integrated time** (Fulcio certificates live ten minutes; the log
   proves the signature was made while it was valid), the authority's ``validFor`` covering it
   too; the leaf is for code signing;
3. its subject alternative name (email, URI, or Fulcio's username) matches ``identity`` and its
   issuer extension (``1.3.6.1.4.1.57264.1.8``, else the older ``…1.1``) matches ``issuer``;
4. the signature verifies with the certificate's key.

Why not the ``sigstore`` package's verifier: it cannot check cosign's classic ``.sig`` layout
(its log entries carry only a signed entry timestamp, and sigstore 4.x requires an inclusion
proof with a checkpoint for every entry), it requires an embedded certificate-transparency
timestamp in every certificate, and it brings about thirty packages (requests, tuf, rich, …;
its import alone takes about 1.8 s against 0.25 s for ``cryptography``). The path validation
here is ``cryptography``'s own X.509 verifier (RFC 5280 and Web PKI profile checks), with
Fulcio's code-signing usage allowed; only the log checks are written here, following the
Rekor and RFC 9162 definitions. ``cryptography`` is imported by the functions that use it: a
controller that verifies no signature never loads it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from argocd_image_updater.kits.re2match import Regexp, RegexpError, compile_re2
from argocd_image_updater.verify.keys import UnusableKey, check_key, verify_with
from argocd_image_updater.verify.payloads import Signed
from argocd_image_updater.verify.tlog import (
    LogEntry,
    LogEntryError,
    check_body,
    parse_entry,
    verify_inclusion,
)
from argocd_image_updater.verify.trustroot import TrustedRoot

if TYPE_CHECKING:
    from cryptography import x509

ISSUER_V2 = "1.3.6.1.4.1.57264.1.8"
ISSUER_V1 = "1.3.6.1.4.1.57264.1.1"
USERNAME = "1.3.6.1.4.1.57264.1.7"
"""Fulcio's certificate extensions (dotted object identifiers)."""
REGEXP = "regexp:"


class MatcherError(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class Matcher:
    """An exact value, or ``regexp:<expression>`` matching the whole value (RE2, Go's syntax)."""

    text: str
    pattern: Regexp | None = None

    @classmethod
    def parse(cls, text: str) -> Matcher:
        if not text.startswith(REGEXP):
            return cls(text)
        try:
            return cls(text, compile_re2(text[len(REGEXP) :]))
        except RegexpError as err:
            raise MatcherError(f"'{text}' is not a valid regular expression ({err})") from None

    def matches(self, value: str) -> bool:
        if self.pattern is None:
            return value == self.text
        return self.pattern.matches_whole(value)


@dataclass(frozen=True, slots=True)
class KeylessPolicy:
    identity: Matcher
    issuer: Matcher
    root: TrustedRoot

    @property
    def description(self) -> str:
        return (
            f"keyless: identity {self.identity.text}, issuer {self.issuer.text} "
            f"(trusted root: {self.root.name})"
        )


@dataclass(frozen=True, slots=True)
class KeylessResult:
    """``problem`` is ``""`` when the signature passed; ``signer`` names the certificate's
    identity and issuer when one was read."""

    problem: str = ""
    signer: str = ""


def _certificates(data: bytes) -> list[x509.Certificate]:
    from cryptography import x509

    if data.lstrip().startswith(b"-----BEGIN"):
        return x509.load_pem_x509_certificates(data.strip())
    return [x509.load_der_x509_certificate(data)]  # DER: its last bytes may look like spaces


def identities(cert: x509.Certificate) -> list[str]:
    """Emails, URIs and Fulcio usernames of the subject alternative name."""
    from cryptography import x509

    try:
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return []
    found: list[str] = [*san.get_values_for_type(x509.RFC822Name)]
    found += san.get_values_for_type(x509.UniformResourceIdentifier)
    for other in san.get_values_for_type(x509.OtherName):
        if other.type_id.dotted_string == USERNAME:
            found.append(_utf8_string(other.value) or "")
    return [value for value in found if value]


def _utf8_string(der: bytes) -> str | None:
    """A DER UTF8String (tag 12, short or long length)."""
    if len(der) < 2 or der[0] != 0x0C:
        return None
    length, start = der[1], 2
    if length & 0x80:
        count = length & 0x7F
        length, start = int.from_bytes(der[2 : 2 + count], "big"), 2 + count
    value = der[start : start + length]
    return value.decode("utf-8", "replace") if len(value) == length else None


def issuer(cert: x509.Certificate) -> str:
    """The OIDC issuer Fulcio recorded (``…57264.1.8``, else the deprecated ``…1.1``)."""
    from cryptography import x509
    from cryptography.x509.oid import ObjectIdentifier

    for oid, decode in ((ISSUER_V2, _utf8_string), (ISSUER_V1, None)):
        try:
            ext = cert.extensions.get_extension_for_oid(ObjectIdentifier(oid)).value
        except x509.ExtensionNotFound:
            continue
        raw = ext.value if isinstance(ext, x509.UnrecognizedExtension) else b""
        value = decode(raw) if decode is not None else raw.decode("utf-8", "replace")
        if value:
            return value
    return ""


def _verify_chain(
    leaf: x509.Certificate, untrusted: list[x509.Certificate], when: datetime, root: TrustedRoot
) -> None:
    from cryptography import x509
    from cryptography.x509.oid import ExtendedKeyUsageOID
    from cryptography.x509.verification import (
        Criticality,
        ExtensionPolicy,
        PolicyBuilder,
        Store,
        VerificationError,
    )

    anchors = [c for a in root.authorities if a.valid.covers(when) for c in a.certificates]
    if not anchors:
        raise ValueError(f"no certificate authority of {root.name} was valid at {when.isoformat()}")
    intermediates = [c for a in root.authorities for c in a.certificates[:-1]] + untrusted
    builder = PolicyBuilder().store(Store(anchors)).time(when)
    if not hasattr(builder, "extension_policies"):  # cryptography < 45
        raise ValueError("keyless verification needs cryptography 45 or newer")
    ca_policy = ExtensionPolicy.webpki_defaults_ca().may_be_present(
        x509.ExtendedKeyUsage, Criticality.NON_CRITICAL, None
    )
    ee_policy = ExtensionPolicy.webpki_defaults_ee().may_be_present(
        x509.ExtendedKeyUsage, Criticality.NON_CRITICAL, None
    )
    verifier = builder.extension_policies(
        ca_policy=ca_policy, ee_policy=ee_policy
    ).build_client_verifier()
    try:
        verifier.verify(leaf, intermediates)
    except VerificationError as err:
        raise ValueError(
            f"the certificate does not chain to a certificate authority of {root.name} "
            f"valid at the entry's integrated time {when.isoformat()} ({err})"
        ) from None
    try:
        usage = leaf.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    except x509.ExtensionNotFound:
        usage = None
    if usage is None or ExtendedKeyUsageOID.CODE_SIGNING not in usage:
        raise ValueError("the certificate is not for code signing")


def check_keyless(signed: Signed, policy: KeylessPolicy) -> KeylessResult:
    """Whether ``signed`` is a keyless signature ``policy`` accepts (its digest was checked)."""
    if not signed.certificate:
        return KeylessResult("it carries no certificate (not a keyless signature)")
    try:
        leaf = _certificates(signed.certificate)[0]
        untrusted = [c for blob in signed.chain for c in _certificates(blob)]
    except (ValueError, IndexError) as err:
        return KeylessResult(f"its certificate cannot be read ({err})")
    names, oidc = identities(leaf), issuer(leaf)
    signer = f"certificate identity {', '.join(names) or '(none)'}, issuer {oidc or '(none)'}"
    if not any(policy.identity.matches(name) for name in names):
        return KeylessResult(f"the identity does not match {policy.identity.text}", signer)
    if not policy.issuer.matches(oidc):
        return KeylessResult(f"the issuer does not match {policy.issuer.text}", signer)
    if not signed.tlog:
        return KeylessResult("it has no transparency-log entry", signer)
    problems = []
    entry: LogEntry | None = None
    for raw in signed.tlog:
        try:
            candidate = parse_entry(raw)
            check_body(candidate, leaf, signed.signature, signed.message, signed.payload)
            verify_inclusion(candidate, policy.root)
        except LogEntryError as err:
            problems.append(str(err))
            continue
        entry = candidate
        break
    if entry is None:
        return KeylessResult(f"transparency log: {'; '.join(problems)}", signer)
    try:
        _verify_chain(leaf, untrusted, entry.time, policy.root)
        key = check_key(leaf.public_key())
    except (ValueError, UnusableKey) as err:
        return KeylessResult(str(err), signer)
    if not verify_with(key, signed.signature, signed.message):
        return KeylessResult("the signature does not verify with the certificate's key", signer)
    return KeylessResult("", signer)
