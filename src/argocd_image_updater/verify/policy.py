"""What a signature must satisfy: the merged ``imagesVerification`` of an image, with its key
material read (the cosign key Secret and the trusted root ConfigMap live in the ImageUpdater's
namespace, never elsewhere).

The :attr:`TrustPolicy.fingerprint` changes whenever anything that decides a verdict changes
(the key bytes, the signature repository, the keyless identity and issuer, the trusted root), so
cached verdicts of an older policy are never reused.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from argocd_image_updater.config.secrets import SecretError, SecretReader, read_field
from argocd_image_updater.model.image import ImageRef, ImageRefError
from argocd_image_updater.model.update_config import Verification
from argocd_image_updater.verify.keyless import KeylessPolicy, Matcher, MatcherError
from argocd_image_updater.verify.keys import (
    UnusableKey,
    VerifyingKey,
    fingerprint,
    load_public_key,
)
from argocd_image_updater.verify.trustroot import (
    TrustedRoot,
    TrustRootError,
    parse_trusted_root,
    public_trusted_root,
)


class PolicyProblem(Exception):
    """The verification policy cannot be applied; the message names the field."""


class ConfigMapReader(Protocol):
    async def read_configmap(self, namespace: str, name: str) -> Mapping[str, str]: ...


@dataclass(frozen=True, slots=True)
class TrustPolicy:
    keys: tuple[VerifyingKey, ...]
    signature_repository: ImageRef | None = None
    """Where signatures are stored when not beside the image (``cosignRepository``)."""
    fingerprint: str = ""
    keyless: KeylessPolicy | None = None
    """Keyless signatures accepted (any configured method passing is enough)."""

    @property
    def description(self) -> str:
        parts = [k.description for k in self.keys]
        if self.keyless is not None:
            parts.append(self.keyless.description)
        if self.signature_repository is not None:
            parts.append(f"signatures in {self.signature_repository.full_name}")
        return ", ".join(parts)


def parse_signature_repository(text: str, where: str) -> ImageRef:
    """``<registry host>/<repository>`` (no tag, no digest)."""
    try:
        ref = ImageRef.parse(text)
    except ImageRefError as err:
        raise PolicyProblem(f"{where}: {err}") from None
    if ref.tag or ref.digest or ref.alias:
        raise PolicyProblem(
            f"{where}: '{text}' must be <registry host>/<repository>, without tag or digest"
        )
    return ref


def build_policy(
    keys: tuple[VerifyingKey, ...],
    signature_repository: str = "",
    keyless: KeylessPolicy | None = None,
) -> TrustPolicy:
    """A policy from loaded keys and keyless rules (``test`` flags and the resolved CR
    policy)."""
    repo = (
        parse_signature_repository(signature_repository, "imagesVerification.cosignRepository")
        if signature_repository
        else None
    )
    material = {
        "keys": sorted(k.description + ":" + _key_id(k) for k in keys),
        "repository": repo.full_name if repo is not None else "",
        "keyless": [keyless.identity.text, keyless.issuer.text, keyless.root.fingerprint]
        if keyless is not None
        else [],
    }
    fingerprint = hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()
    return TrustPolicy(keys, repo, fingerprint, keyless)


def keyless_policy(identity: str, issuer: str, root: TrustedRoot, where: str) -> KeylessPolicy:
    """``where`` prefixes the field names in errors (``imagesVerification.keyless``)."""
    matchers = []
    for name, text in (("identity", identity), ("issuer", issuer)):
        try:
            matchers.append(Matcher.parse(text))
        except MatcherError as err:
            raise PolicyProblem(f"{where}.{name}: {err}") from None
    return KeylessPolicy(matchers[0], matchers[1], root)


def load_trusted_root(document: bytes, name: str, where: str) -> TrustedRoot:
    try:
        return parse_trusted_root(document, name)
    except TrustRootError as err:
        raise PolicyProblem(f"{where}: {err}") from None


def _key_id(key: VerifyingKey) -> str:
    return fingerprint(key.key)


async def resolve(
    verification: Verification,
    namespace: str,
    secrets: SecretReader | None,
    config_maps: ConfigMapReader | None = None,
) -> TrustPolicy:
    """The policy of an image whose merged verification is enabled; :class:`PolicyProblem`
    names the field and the Secret or ConfigMap when it cannot be applied (the image is then not
    written)."""
    if not verification.has_method:
        raise PolicyProblem(
            "imagesVerification: verification is enabled but no method is configured "
            "(set cosignKey or keyless)"
        )
    keys: tuple[VerifyingKey, ...] = ()
    if verification.has_key:
        keys = (await _cosign_key(verification, namespace, secrets),)
    keyless = None
    if verification.has_keyless:
        root = await _trusted_root(verification, namespace, config_maps)
        keyless = keyless_policy(
            verification.keyless_identity or "",
            verification.keyless_issuer or "",
            root,
            "imagesVerification.keyless",
        )
    return build_policy(keys, verification.cosign_repository or "", keyless)


async def _cosign_key(
    verification: Verification, namespace: str, secrets: SecretReader | None
) -> VerifyingKey:
    name, field = verification.cosign_secret_name or "", verification.cosign_key or ""
    where = f"imagesVerification.cosignKey (Secret {namespace}/{name}, key {field})"
    if secrets is None:
        raise PolicyProblem(f"{where}: Secrets cannot be read in this mode")
    try:
        pem = await read_field(secrets, namespace, name, field)
    except SecretError as err:
        raise PolicyProblem(f"{where}: {err}") from None
    try:
        return load_public_key(pem)
    except UnusableKey as err:
        raise PolicyProblem(f"{where}: {err}") from None


async def _trusted_root(
    verification: Verification, namespace: str, config_maps: ConfigMapReader | None
) -> TrustedRoot:
    """The ``trustedRoot`` ConfigMap's root, or the public Sigstore root shipped with the
    package when none is configured."""
    name, key = verification.trusted_root_config_map, verification.trusted_root_key
    if not name or not key:
        return public_trusted_root()
    source = f"ConfigMap {namespace}/{name}, key {key}"
    where = f"imagesVerification.trustedRoot ({source})"
    if config_maps is None:
        raise PolicyProblem(f"{where}: ConfigMaps cannot be read in this mode")
    try:
        data = await config_maps.read_configmap(namespace, name)
    except Exception as err:  # KubeError (not found, forbidden) or a transport error
        raise PolicyProblem(f"{where}: cannot read the ConfigMap ({err})") from None
    document = data.get(key)
    if document is None:
        raise PolicyProblem(f"{where}: the ConfigMap has no key '{key}'")
    return load_trusted_root(document.encode(), f"the trusted root of {source}", where)
