"""What a signature must satisfy: the merged ``imagesVerification`` of an image, with its key
material read (the cosign key Secret lives in the ImageUpdater's namespace, never elsewhere).

The :attr:`TrustPolicy.fingerprint` changes whenever anything that decides a verdict changes
(the key bytes, the signature repository), so cached verdicts of an older policy are never
reused.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from argocd_image_updater.config.secrets import SecretError, SecretReader, read_field
from argocd_image_updater.config.update_config import Verification
from argocd_image_updater.model.image import ImageRef, ImageRefError
from argocd_image_updater.verify.keys import (
    UnusableKey,
    VerifyingKey,
    fingerprint,
    load_public_key,
)


class PolicyProblem(Exception):
    """The verification policy cannot be applied; the message names the field."""


@dataclass(frozen=True, slots=True)
class TrustPolicy:
    keys: tuple[VerifyingKey, ...]
    signature_repository: ImageRef | None = None
    """Where signatures are stored when not beside the image (``cosignRepository``)."""
    fingerprint: str = ""

    @property
    def description(self) -> str:
        parts = [k.description for k in self.keys]
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


def build_policy(keys: tuple[VerifyingKey, ...], signature_repository: str = "") -> TrustPolicy:
    """A policy from loaded keys (``--verify-key`` and the resolved CR policy)."""
    repo = (
        parse_signature_repository(signature_repository, "imagesVerification.cosignRepository")
        if signature_repository
        else None
    )
    material = {
        "keys": sorted(k.description + ":" + _key_id(k) for k in keys),
        "repository": repo.full_name if repo is not None else "",
    }
    fingerprint = hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()
    return TrustPolicy(keys, repo, fingerprint)


def _key_id(key: VerifyingKey) -> str:
    return fingerprint(key.key)


async def resolve(
    verification: Verification, namespace: str, secrets: SecretReader | None
) -> TrustPolicy:
    """The policy of an image whose merged verification is enabled; :class:`PolicyProblem`
    names the field and the Secret when it cannot be applied (the image is then not written)."""
    if not verification.has_method:
        raise PolicyProblem(
            "imagesVerification: verification is enabled but no method is configured "
            "(set cosignKey)"
        )
    name, field = verification.cosign_secret_name or "", verification.cosign_key or ""
    where = f"imagesVerification.cosignKey (Secret {namespace}/{name}, key {field})"
    if secrets is None:
        raise PolicyProblem(f"{where}: Secrets cannot be read in this mode")
    try:
        pem = await read_field(secrets, namespace, name, field)
    except SecretError as err:
        raise PolicyProblem(f"{where}: {err}") from None
    try:
        key = load_public_key(pem)
    except UnusableKey as err:
        raise PolicyProblem(f"{where}: {err}") from None
    return build_policy((key,), verification.cosign_repository or "")
