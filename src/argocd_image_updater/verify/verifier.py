"""Verify one image digest against a :class:`~argocd_image_updater.verify.policy.TrustPolicy`.

The digest is the one that will be written: the chosen tag is resolved once (or the digest the
``digest`` strategy found is taken), its signatures are read (see
:mod:`~argocd_image_updater.verify.discovery`) and each is checked until one passes:

1. the payload must vouch for exactly this digest (a signature copied from another image is
   refused: anti-replay);
2. the signature must verify with a configured key over what was signed (payload bytes, or the
   DSSE pre-authentication encoding). Key-based signatures need no transparency-log entry, as in
   the original; or, with ``keyless``, it must be a keyless signature whose certificate, identity,
   issuer and transparency-log entry pass (:mod:`~argocd_image_updater.verify.keyless`).

Anything else — no signature, an unreadable one, a registry error, a Secret that cannot be read —
is a refusal with its cause: verification fails closed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from argocd_image_updater.model.registry import CredentialProvider, RegistryEndpoint
from argocd_image_updater.observe.log import get_logger
from argocd_image_updater.registry.errors import RegistryError
from argocd_image_updater.registry.manifest import is_digest
from argocd_image_updater.registry.scanner import Scanner
from argocd_image_updater.registry.singleflight import SingleFlight
from argocd_image_updater.verify.cache import CacheKey, VerdictCache
from argocd_image_updater.verify.discovery import Discovery
from argocd_image_updater.verify.keyless import KeylessResult, check_keyless
from argocd_image_updater.verify.payloads import PayloadError, Signed, signed_digests
from argocd_image_updater.verify.policy import TrustPolicy

log = get_logger("verify")

EndpointFor = Callable[[str, str], RegistryEndpoint]
CredentialsFor = Callable[[RegistryEndpoint], CredentialProvider | None]


@dataclass(frozen=True, slots=True)
class Finding:
    """One signature looked at: where, its layout, and ``problem`` (``""`` = it passed)."""

    where: str
    layout: str
    problem: str = ""
    signer: str = ""
    """The keyless certificate's identity and issuer, when one was read."""


@dataclass(frozen=True, slots=True)
class Verdict:
    """``digest`` passed when ``error`` is empty; ``findings`` and ``notes`` explain it."""

    digest: str
    error: str = ""
    findings: tuple[Finding, ...] = ()
    notes: tuple[str, ...] = ()
    cached: bool = False
    location: str = ""

    @property
    def passed(self) -> bool:
        return not self.error and bool(self.digest)


@dataclass(frozen=True, slots=True)
class Target:
    """The image to verify: its endpoint and repository path, the tag chosen and, when already
    known (``digest`` strategy), the digest to verify instead of resolving the tag."""

    endpoint: RegistryEndpoint
    repository: str
    tag: str
    digest: str = ""
    credentials: CredentialProvider | None = None
    name: str = ""
    """``registry/repository`` for messages."""


def assess(signed: Signed, digest: str, policy: TrustPolicy) -> KeylessResult:
    """Whether ``signed`` vouches for ``digest`` under ``policy`` (``problem`` ``""`` when it
    does); ``signer`` names a keyless certificate's identity and issuer."""
    try:
        digests = signed_digests(signed)
    except PayloadError as err:
        return KeylessResult(str(err))
    if digest not in digests:
        return KeylessResult(
            f"it signs {', '.join(digests) or 'no digest'}, not the image's {digest} "
            "(a signature of another image)"
        )
    if not policy.keys and policy.keyless is None:
        return KeylessResult("no key is configured to check it with")
    problems = []
    for key in policy.keys:
        if key.verify(signed.signature, signed.message):
            return KeylessResult()
    if policy.keys:
        problems.append(f"the signature does not verify with the {policy.keys[0].description}")
    signer = ""
    if policy.keyless is not None:
        result = check_keyless(signed, policy.keyless)
        if not result.problem:
            return result
        problems.append(result.problem)
        signer = result.signer
    return KeylessResult("; ".join(problems), signer)


def check_signature(signed: Signed, digest: str, policy: TrustPolicy) -> str:
    """Why ``signed`` does not vouch for ``digest`` under ``policy`` (``""`` when it does)."""
    return assess(signed, digest, policy).problem


@dataclass(slots=True)
class Verifier:
    """Verifies digests through the scanner's registry clients (same limits, tokens and
    credentials as the scans); passed verdicts are cached by (location, digest, policy)."""

    scanner: Scanner
    cache: VerdictCache = field(default_factory=VerdictCache)
    _flights: SingleFlight[CacheKey, Verdict] = field(default_factory=SingleFlight)

    async def verify(
        self,
        target: Target,
        policy: TrustPolicy,
        endpoint_for: EndpointFor | None = None,
        credentials_for: CredentialsFor | None = None,
    ) -> Verdict:
        name = target.name or target.repository
        client = self.scanner.client(target.endpoint)
        digest = target.digest
        if not digest:
            try:
                digest = await client.head_digest(target.repository, target.tag, target.credentials)
            except RegistryError as err:
                return Verdict("", f"cannot resolve {name}:{target.tag} to a digest: {err}")
        if not is_digest(digest):
            return Verdict("", f"{name}:{target.tag} has digest '{digest}', not sha256:<hex>")
        endpoint, repository, credentials = target.endpoint, target.repository, target.credentials
        if policy.signature_repository is not None:
            ref = policy.signature_repository
            if endpoint_for is None:
                return Verdict(digest, "cosignRepository cannot be used in this mode")
            try:
                endpoint = endpoint_for(ref.registry, ref.name)
            except Exception as err:  # a configuration lookup; it fails this image only
                return Verdict(digest, f"cosignRepository {ref.full_name}: {err}")
            repository = endpoint.repository_path(ref.name)
            if endpoint.api_url != target.endpoint.api_url:
                credentials = credentials_for(endpoint) if credentials_for is not None else None
        location = f"{endpoint.api_url.rstrip('/')}/{repository}"
        key = CacheKey(location, digest, policy.fingerprint)
        where = self.cache.passed(key)
        if where is not None:
            return Verdict(
                digest, findings=(Finding(where, "cached"),), cached=True, location=location
            )
        discovery = Discovery(self.scanner.client(endpoint), repository, credentials, digest)
        verdict, _ = await self._flights.do(
            key, lambda: self._discover(discovery, policy, location, name)
        )
        if verdict.passed:
            self.cache.remember(key, verdict.findings[-1].where)
        return verdict

    async def _discover(
        self, discovery: Discovery, policy: TrustPolicy, location: str, name: str
    ) -> Verdict:
        digest = discovery.digest
        findings: list[Finding] = []
        async for candidate in discovery.candidates():
            if candidate.signed is None:
                findings.append(Finding(candidate.where, "unreadable", candidate.problem))
                continue
            result = assess(candidate.signed, digest, policy)
            problem = result.problem
            findings.append(
                Finding(candidate.where, candidate.signed.layout, problem, result.signer)
            )
            if not problem:
                log.debug(
                    "signature verified",
                    image=name,
                    digest=digest,
                    where=candidate.where,
                    key=policy.description,
                )
                return Verdict(
                    digest, "", tuple(findings), tuple(discovery.notes), location=location
                )
        if findings:
            causes = "; ".join(
                f"{f.where}: {f.problem}" + (f" ({f.signer})" if f.signer else "") for f in findings
            )
            error = f"no valid signature for {name}@{digest} ({causes})"
        else:
            error = (
                f"no signature found for {name}@{digest} in {location} ("
                + "; ".join(discovery.notes)
                + ")"
            )
        return Verdict(digest, error, tuple(findings), tuple(discovery.notes), location=location)
