"""Signature discovery and key-based verification against the real registry.

Signatures are laid out as cosign lays them out (``sha256-<hex>.sig`` simple signing tags,
sigstore bundle v0.3 referrers, the ``sha256-<hex>`` referrers tag schema), signed with keys the
test makes. Distribution 2.8 has no Referrers API (404, the fallback path); a
:class:`ReferrersProxy` in front of it adds one for the referrers path."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

import pytest

from argocd_image_updater.config.registries import RegistryConfig
from argocd_image_updater.model.registry import RegistryEndpoint
from argocd_image_updater.registry.scanner import Scanner
from argocd_image_updater.verify.keys import load_public_key
from argocd_image_updater.verify.payloads import SIMPLE_SIGNING
from argocd_image_updater.verify.policy import TrustPolicy, build_policy
from argocd_image_updater.verify.verifier import Target, Verifier
from argocd_image_updater_testing import cosign
from argocd_image_updater_testing.faulty_proxy import FaultyProxy
from argocd_image_updater_testing.push import ImagePusher
from argocd_image_updater_testing.referrers_proxy import ReferrersProxy
from argocd_image_updater_testing.registry import RegistryServer

CREATED = datetime(2026, 6, 1, tzinfo=UTC)


def endpoint(url: str) -> RegistryEndpoint:
    host = url.split("://", 1)[1]
    return RegistryEndpoint(prefix=host, name=host, api_url=url)


def policy(key: cosign.PrivateKey, repository: str = "") -> TrustPolicy:
    return build_policy((load_public_key(cosign.public_pem(key)),), repository)


@dataclass
class Setup:
    url: str
    repo: str
    pusher: ImagePusher
    scanner: Scanner
    key: cosign.PrivateKey
    digest: str = ""
    other: str = ""
    """The digest of another image of the repository (for replays)."""

    @property
    def name(self) -> str:
        return f"{self.url.split('://', 1)[1]}/{self.repo}"

    async def verify(self, pol: TrustPolicy | None = None, tag: str = "1.1.0", **kw: Any) -> Any:
        verifier = kw.pop("verifier", None) or Verifier(self.scanner)
        target = Target(endpoint(self.url), self.repo, tag, name=self.name)
        return await verifier.verify(target, pol or policy(self.key), **kw)

    async def sign_sig_tag(self, key: cosign.PrivateKey | None = None, digest: str = "") -> None:
        signed = digest or self.digest
        payload = cosign.simple_signing_payload(self.name, signed)
        await cosign.push_signature_tag(
            self.pusher, self.repo, self.digest, [(payload, cosign.sign(key or self.key, payload))]
        )

    async def bundle(self, payload: bytes | None = None, payload_type: str = "") -> bytes:
        if payload is None:
            return cosign.dsse_bundle(self.key, cosign.statement(self.name, self.digest))
        return cosign.dsse_bundle(self.key, payload, payload_type)

    async def subject(self) -> dict[str, Any]:
        return await cosign.subject_descriptor(self.pusher, self.repo, self.digest)


async def _setup(
    url: str, repo: str, scanner: Scanner, key_kind: cosign.KeyKind = "p256"
) -> AsyncIterator[Setup]:
    async with ImagePusher(url) as pusher:
        made = Setup(url, repo, pusher, scanner, cosign.generate_key(key_kind))
        made.other = await pusher.push_image(repo, "1.0.0", created=CREATED)
        made.digest = await pusher.push_image(repo, "1.1.0", created=CREATED, labels={"v": "2"})
        yield made


@pytest.fixture
async def scanner() -> AsyncIterator[Scanner]:
    async with Scanner() as made:
        yield made


@pytest.fixture
async def plain(registry: RegistryServer, repo: str, scanner: Scanner) -> AsyncIterator[Setup]:
    """The registry itself: no Referrers API."""
    async for made in _setup(registry.url, repo, scanner):
        yield made


@pytest.fixture
async def referrers(registry: RegistryServer, repo: str, scanner: Scanner) -> AsyncIterator[Setup]:
    """The registry behind a proxy with the Referrers API (pushes go through it)."""
    async with ReferrersProxy(registry.url) as proxy:
        async for made in _setup(proxy.url, repo, scanner):
            made.proxy = proxy  # type: ignore[attr-defined]
            yield made


# --- discovery -----------------------------------------------------------------------------


async def test_sig_tag_on_a_registry_without_referrers_api(plain: Setup) -> None:
    await plain.sign_sig_tag()
    verdict = await plain.verify()
    assert verdict.passed and verdict.digest == plain.digest
    assert [f.where for f in verdict.findings] == [f"tag {plain.digest.replace(':', '-')}.sig"]
    assert verdict.findings[0].layout == "simple signing"
    assert "referrers API: not supported by the registry (404)" in verdict.notes


async def test_unsigned_image_is_refused_naming_every_place_looked_at(plain: Setup) -> None:
    verdict = await plain.verify()
    assert not verdict.passed
    assert verdict.error.startswith(f"no signature found for {plain.name}@{plain.digest}")
    hex_tag = plain.digest.replace(":", "-")
    for place in ("referrers API: not supported", f"tag {hex_tag}: not found", f"{hex_tag}.sig"):
        assert place in verdict.error


async def test_bundle_found_through_the_referrers_api(referrers: Setup) -> None:
    _, _ = await cosign.push_bundle_referrer(
        referrers.pusher, referrers.repo, await referrers.subject(), await referrers.bundle()
    )
    verdict = await referrers.verify()
    assert verdict.passed
    [finding] = verdict.findings
    assert finding.where.startswith("referrer sha256:")
    assert finding.layout == "sigstore bundle (DSSE, in-toto statement)"
    proxy: ReferrersProxy = referrers.proxy  # type: ignore[attr-defined]
    assert proxy.counts["referrers"] == 1


async def test_bundle_over_simple_signing_through_the_referrers_api(referrers: Setup) -> None:
    payload = cosign.simple_signing_payload(referrers.name, referrers.digest)
    bundle = await referrers.bundle(payload, SIMPLE_SIGNING)
    await cosign.push_bundle_referrer(
        referrers.pusher, referrers.repo, await referrers.subject(), bundle
    )
    verdict = await referrers.verify()
    assert verdict.passed
    assert verdict.findings[0].layout == f"sigstore bundle (DSSE, {SIMPLE_SIGNING})"


async def test_empty_referrers_fall_back_to_the_sig_tag(referrers: Setup) -> None:
    """cosign v2 writes .sig tags even where the registry has the Referrers API."""
    await referrers.sign_sig_tag()
    verdict = await referrers.verify()
    assert verdict.passed
    assert "referrers API: no sigstore bundle refers to the image" in verdict.notes
    assert verdict.findings[-1].where.endswith(".sig")


async def test_referrers_tag_schema_on_a_registry_without_the_api(plain: Setup) -> None:
    _, descriptor = await cosign.push_bundle_referrer(
        plain.pusher, plain.repo, await plain.subject(), await plain.bundle()
    )
    await cosign.push_referrers_tag(plain.pusher, plain.repo, plain.digest, [descriptor])
    verdict = await plain.verify()
    assert verdict.passed
    assert verdict.findings[0].where.startswith(f"tag {plain.digest.replace(':', '-')} → sha256:")


async def test_sig_tag_holding_an_index_of_bundles(plain: Setup) -> None:
    manifest, descriptor = await cosign.push_bundle_referrer(
        plain.pusher, plain.repo, await plain.subject(), await plain.bundle()
    )
    index = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [descriptor],
    }
    await plain.pusher.put_manifest(
        plain.repo, plain.digest.replace(":", "-") + ".sig", json.dumps(index).encode()
    )
    verdict = await plain.verify()
    assert verdict.passed and manifest in verdict.findings[0].where


# --- refusals ------------------------------------------------------------------------------


async def test_a_signature_of_another_digest_is_refused(plain: Setup) -> None:
    """Anti-replay: a valid signature of another image copied to this image's .sig tag."""
    await plain.sign_sig_tag(digest=plain.other)
    verdict = await plain.verify()
    assert not verdict.passed
    assert f"it signs {plain.other}, not the image's {plain.digest}" in verdict.error


async def test_a_referrer_whose_subject_is_another_image_is_refused(plain: Setup) -> None:
    other = {**await plain.subject(), "digest": plain.other}
    bundle = cosign.dsse_bundle(plain.key, cosign.statement(plain.name, plain.digest))
    _, descriptor = await cosign.push_bundle_referrer(plain.pusher, plain.repo, other, bundle)
    await cosign.push_referrers_tag(plain.pusher, plain.repo, plain.digest, [descriptor])
    verdict = await plain.verify()
    assert not verdict.passed
    assert f"its subject is {plain.other}, not the image {plain.digest}" in verdict.error


async def test_a_signature_by_another_key_is_refused(plain: Setup) -> None:
    await plain.sign_sig_tag(key=cosign.generate_key())
    verdict = await plain.verify()
    assert not verdict.passed
    assert "the signature does not verify with the ECDSA P-256 key" in verdict.error


async def test_a_tampered_bundle_payload_is_refused(referrers: Setup) -> None:
    """The statement is swapped for one naming the image, the signature kept."""
    signature = cosign.sign(referrers.key, b"something else")
    bundle = cosign.dsse_bundle(
        referrers.key, cosign.statement(referrers.name, referrers.digest), signature=signature
    )
    await cosign.push_bundle_referrer(
        referrers.pusher, referrers.repo, await referrers.subject(), bundle
    )
    verdict = await referrers.verify()
    assert not verdict.passed and "does not verify" in verdict.error


@pytest.mark.parametrize("kind", ["p384", "ed25519", "rsa"])
async def test_other_key_types(
    registry: RegistryServer, repo: str, scanner: Scanner, kind: cosign.KeyKind
) -> None:
    async for made in _setup(registry.url, repo, scanner, kind):
        await made.sign_sig_tag()
        assert (await made.verify()).passed
        wrong = policy(cosign.generate_key(kind))
        assert not (await made.verify(wrong)).passed


# --- signature repository, cache -----------------------------------------------------------


async def test_signatures_in_a_separate_repository(plain: Setup, registry: RegistryServer) -> None:
    signatures = f"{plain.repo}-signatures"
    payload = cosign.simple_signing_payload(plain.name, plain.digest)
    await cosign.push_signature_tag(
        plain.pusher, signatures, plain.digest, [(payload, cosign.sign(plain.key, payload))]
    )
    assert not (await plain.verify()).passed  # not beside the image
    registries = RegistryConfig()
    host = registry.url.split("://", 1)[1]

    def endpoint_for(registry_host: str, name: str) -> RegistryEndpoint:
        assert registry_host == host
        return replace(registries.endpoint_for(registry_host, name), api_url=registry.url)

    verdict = await plain.verify(
        policy(plain.key, f"{host}/{signatures}"), endpoint_for=endpoint_for
    )
    assert verdict.passed, verdict.error
    assert verdict.location == f"{registry.url}/{signatures}"


async def test_passed_digests_are_cached_per_policy(
    registry: RegistryServer, repo: str, proxy: Any
) -> None:
    counting: FaultyProxy = await proxy(registry)
    async with Scanner() as scanner:
        async for made in _setup(counting.url, repo, scanner):
            await made.sign_sig_tag()
            verifier = Verifier(scanner)
            first = await made.verify(verifier=verifier)
            assert first.passed and not first.cached
            counting.counts.clear()
            again = await made.verify(verifier=verifier)
            assert again.passed and again.cached
            # The tag is resolved again (tags move); nothing else is read.
            assert dict(counting.counts) == {"manifest_head": 1}
            # Another key is another policy: nothing verified under the old one is reused.
            second_key = cosign.generate_key()
            other = await made.verify(policy(second_key), verifier=verifier)
            assert not other.passed and not other.cached
            # Refusals are not kept: a signature pushed later is found.
            await made.sign_sig_tag(key=second_key)
            later = await made.verify(policy(second_key), verifier=verifier)
            assert later.passed and not later.cached
