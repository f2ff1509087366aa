"""Keyless verification against the real registry: a CA made here acts as Fulcio, a log key
made here as Rekor, and the trusted root naming them is the test's own ``trusted_root.json``.
Signatures are laid out as cosign lays them out: ``sha256-<hex>.sig`` simple signing layers with
the certificate, chain and Rekor bundle annotations, and sigstore bundle v0.3 referrers (through
a :class:`ReferrersProxy`, distribution 2.8 has no Referrers API)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from fleet import registries_conf

from argocd_image_updater.cli.run_cmd import build_controller, close_resource
from argocd_image_updater.config.settings import resolve
from argocd_image_updater.model.registry import RegistryEndpoint
from argocd_image_updater.registry.scanner import Scanner
from argocd_image_updater.verify.policy import (
    TrustPolicy,
    build_policy,
    keyless_policy,
    load_trusted_root,
)
from argocd_image_updater.verify.verifier import Target, Verdict, Verifier
from argocd_image_updater_testing import cosign, objects
from argocd_image_updater_testing.keyless import Sigstore
from argocd_image_updater_testing.kube import KubeApiServer
from argocd_image_updater_testing.push import ImagePusher
from argocd_image_updater_testing.referrers_proxy import ReferrersProxy
from argocd_image_updater_testing.registry import RegistryServer

CREATED = datetime(2026, 6, 1, tzinfo=UTC)
NS = "argocd"
IDENTITY = "https://github.com/shop/web/.github/workflows/release.yml@refs/tags/v1.1.0"
ISSUER = "https://token.actions.githubusercontent.com"


def endpoint(url: str) -> RegistryEndpoint:
    host = url.split("://", 1)[1]
    return RegistryEndpoint(prefix=host, name=host, api_url=url)


@dataclass
class Setup:
    url: str
    repo: str
    pusher: ImagePusher
    scanner: Scanner
    sigstore: Sigstore
    digest: str = ""

    @property
    def name(self) -> str:
        return f"{self.url.split('://', 1)[1]}/{self.repo}"

    def policy(self, identity: str = IDENTITY, issuer: str = ISSUER) -> TrustPolicy:
        root = load_trusted_root(self.sigstore.trusted_root(), "the test's trusted root", "test")
        return build_policy((), "", keyless_policy(identity, issuer, root, "keyless"))

    async def verify(self, policy: TrustPolicy | None = None) -> Verdict:
        target = Target(endpoint(self.url), self.repo, "1.1.0", name=self.name)
        return await Verifier(self.scanner).verify(target, policy or self.policy())

    async def sig_tag(self, identity: str = IDENTITY, issuer: str = ISSUER, **kw: Any) -> None:
        payload, signature, annotations = self.sigstore.sign_sig_layer(
            self.name, self.digest, identity, issuer, **kw
        )
        await cosign.push_signature_tag(
            self.pusher,
            self.repo,
            self.digest,
            [(payload, signature)],
            extra_annotations=annotations,
        )

    async def referrer(self, identity: str = IDENTITY, issuer: str = ISSUER, **kw: Any) -> None:
        bundle = self.sigstore.sign_bundle(self.name, self.digest, identity, issuer, **kw)
        subject = await cosign.subject_descriptor(self.pusher, self.repo, self.digest)
        await cosign.push_bundle_referrer(self.pusher, self.repo, subject, bundle)


async def _setup(url: str, repo: str, scanner: Scanner) -> AsyncIterator[Setup]:
    async with ImagePusher(url) as pusher:
        made = Setup(url, repo, pusher, scanner, Sigstore())
        await pusher.push_image(repo, "1.0.0", created=CREATED)
        made.digest = await pusher.push_image(repo, "1.1.0", created=CREATED, labels={"v": "2"})
        yield made


@pytest.fixture
async def scanner() -> AsyncIterator[Scanner]:
    async with Scanner() as made:
        yield made


@pytest.fixture
async def plain(registry: RegistryServer, repo: str, scanner: Scanner) -> AsyncIterator[Setup]:
    async for made in _setup(registry.url, repo, scanner):
        yield made


@pytest.fixture
async def referrers(registry: RegistryServer, repo: str, scanner: Scanner) -> AsyncIterator[Setup]:
    async with ReferrersProxy(registry.url) as proxy:
        async for made in _setup(proxy.url, repo, scanner):
            yield made


def refused(verdict: Verdict, problem: str) -> None:
    assert not verdict.passed
    assert problem in verdict.error, verdict.error


# --- both layouts ------------------------------------------------------------------------------


async def test_legacy_sig_tag_with_certificate_chain_and_rekor_bundle(plain: Setup) -> None:
    await plain.sig_tag()
    verdict = await plain.verify()
    assert verdict.passed, verdict.error
    [finding] = verdict.findings
    assert finding.layout == "simple signing"
    assert finding.signer == f"certificate identity {IDENTITY}, issuer {ISSUER}"


async def test_legacy_sig_tag_without_the_chain_annotation(plain: Setup) -> None:
    """The intermediate comes from the trusted root then."""
    await plain.sig_tag(chain=False)
    assert (await plain.verify()).passed


@pytest.mark.parametrize(
    "evidence",
    [
        {"chain": False},
        {"chain": True},
        {"promise": False},  # inclusion proof with a signed checkpoint only
        {"proof": False},  # signed entry timestamp only
    ],
    ids=["certificate", "x509-chain", "inclusion-proof-only", "set-only"],
)
async def test_bundle_referrer(referrers: Setup, evidence: dict[str, bool]) -> None:
    await referrers.referrer(**evidence)
    verdict = await referrers.verify()
    assert verdict.passed, verdict.error
    assert verdict.findings[0].where.startswith("referrer sha256:")
    assert verdict.findings[0].layout == "sigstore bundle (DSSE, in-toto statement)"


# --- identity and issuer -----------------------------------------------------------------------


async def test_another_identity_is_refused_naming_what_was_found(plain: Setup) -> None:
    await plain.sig_tag(identity="mallory@example.com")
    verdict = await plain.verify()
    refused(verdict, f"the identity does not match {IDENTITY}")
    assert "certificate identity mallory@example.com" in verdict.error


async def test_another_issuer_is_refused(referrers: Setup) -> None:
    await referrers.referrer(issuer="https://accounts.google.com")
    verdict = await referrers.verify()
    refused(verdict, f"the issuer does not match {ISSUER}")
    assert "issuer https://accounts.google.com" in verdict.error


async def test_regexp_forms_match_the_whole_value(plain: Setup) -> None:
    await plain.sig_tag()
    workflow = r"regexp:https://github\.com/shop/web/\.github/workflows/release\.yml@refs/tags/v.*"
    issuer = r"regexp:https://token\.actions\.githubusercontent\.com"
    assert (await plain.verify(plain.policy(workflow, issuer))).passed
    # A prefix alone does not match: the expression must cover the whole identity.
    prefix = plain.policy(r"regexp:https://github\.com/shop/", issuer)
    refused(await plain.verify(prefix), "the identity does not match regexp:")
    other_org = plain.policy(r"regexp:https://github\.com/other/.*", issuer)
    refused(await plain.verify(other_org), "the identity does not match")
    email = plain.policy(r"regexp:.*@example\.com", issuer)
    refused(await plain.verify(email), "the identity does not match")


# --- certificate chain -------------------------------------------------------------------------


async def test_a_certificate_of_another_ca_is_refused(plain: Setup) -> None:
    stranger = Sigstore()
    certificate = plain.sigstore.certificate(
        IDENTITY, ISSUER, signer=(stranger.intermediate, stranger.intermediate_key)
    )
    await plain.sig_tag(certificate=certificate, chain=False)
    refused(await plain.verify(), "does not chain to a certificate authority")


async def test_a_certificate_not_valid_at_the_integrated_time_is_refused(
    referrers: Setup,
) -> None:
    """Valid ten minutes, an hour before the log entry."""
    expired = referrers.sigstore.certificate(
        IDENTITY, ISSUER, not_before=datetime.now(UTC) - timedelta(hours=1)
    )
    await referrers.referrer(certificate=expired)
    verdict = await referrers.verify()
    refused(verdict, "does not chain to a certificate authority")
    assert "valid at the entry's integrated time" in verdict.error


# --- transparency log --------------------------------------------------------------------------


async def test_a_rekor_bundle_without_a_set_is_refused(plain: Setup) -> None:
    await plain.sig_tag(promise=False)
    refused(await plain.verify(), "Rekor bundle SignedEntryTimestamp is missing")


async def test_a_set_by_another_log_key_is_refused(plain: Setup) -> None:
    from cryptography.hazmat.primitives.asymmetric import ec

    await plain.sig_tag(log_key=ec.generate_private_key(ec.SECP256R1()))
    refused(await plain.verify(), "the signed entry timestamp does not verify with the log's key")


async def test_an_entry_with_neither_set_nor_proof_is_refused(referrers: Setup) -> None:
    await referrers.referrer(promise=False, proof=False)
    refused(await referrers.verify(), "neither a signed entry timestamp nor an inclusion proof")


async def test_a_checkpoint_by_another_log_key_is_refused(referrers: Setup) -> None:
    from cryptography.hazmat.primitives.asymmetric import ec

    await referrers.referrer(promise=False, log_key=ec.generate_private_key(ec.SECP256R1()))
    refused(
        await referrers.verify(), "checkpoint is not signed by a log of the test's trusted root"
    )


async def test_an_entry_of_a_log_not_in_the_trusted_root_is_refused(plain: Setup) -> None:
    await plain.sig_tag()
    other = Sigstore()
    root = load_trusted_root(other.trusted_root(), "another root", "test")
    # Same CA, another log: the entry's log is unknown.
    policy = build_policy((), "", keyless_policy(IDENTITY, ISSUER, root, "keyless"))
    refused(await plain.verify(policy), "is not in another root")


async def test_an_entry_recording_another_signature_is_refused(plain: Setup) -> None:
    """The certificate, signature and Rekor bundle of one image copied onto another payload."""
    payload, _, annotations = plain.sigstore.sign_sig_layer(
        plain.name, plain.digest, IDENTITY, ISSUER
    )
    forged = cosign.sign(cosign.generate_key(), payload)
    await cosign.push_signature_tag(
        plain.pusher, plain.repo, plain.digest, [(payload, forged)], extra_annotations=annotations
    )
    refused(await plain.verify(), "the log entry records another signature")


async def test_a_key_signature_does_not_pass_a_keyless_policy(plain: Setup) -> None:
    key = cosign.generate_key()
    payload = cosign.simple_signing_payload(plain.name, plain.digest)
    await cosign.push_signature_tag(
        plain.pusher, plain.repo, plain.digest, [(payload, cosign.sign(key, payload))]
    )
    refused(await plain.verify(), "it carries no certificate (not a keyless signature)")


# --- the controller: trusted root ConfigMap, write pinned, image-level opt-out -----------------


async def test_controller_writes_the_keyless_verified_digest_and_honours_enabled_false(
    registry: RegistryServer, repo: str, tmp_path: Path
) -> None:
    """Three images under a spec-level keyless policy with a trustedRoot ConfigMap: the signed
    one is written pinned to its digest, the one signed by another identity is refused, and the
    unsigned one opted out with ``enabled: false`` is written without a digest."""
    sigstore = Sigstore()
    names, digests = {}, {}
    async with ImagePusher(registry.url) as pusher:
        for app in ("signed", "stranger", "opted-out"):
            names[app] = f"{registry.host}/{repo}-{app}"
            await pusher.push_image(f"{repo}-{app}", "1.0.0", created=CREATED)
            digests[app] = await pusher.push_image(
                f"{repo}-{app}", "1.1.0", created=CREATED + timedelta(days=1)
            )
        for app, identity in (("signed", IDENTITY), ("stranger", "mallory@example.com")):
            payload, signature, annotations = sigstore.sign_sig_layer(
                names[app], digests[app], identity, ISSUER
            )
            await cosign.push_signature_tag(
                pusher,
                f"{repo}-{app}",
                digests[app],
                [(payload, signature)],
                extra_annotations=annotations,
            )
    async with KubeApiServer(namespaces=(NS,)) as kube:
        kube.store.put(
            objects.config_map("sigstore-root", NS, {"root.json": sigstore.trusted_root().decode()})
        )
        refs = []
        for app, image in names.items():
            kube.store.put(
                objects.application(
                    app, NS, images=[f"{image}:1.0.0"], kustomize_images=[f"{image}:1.0.0"]
                )
            )
            entry: dict[str, Any] = {"alias": "web", "imageName": image}
            if app == "opted-out":
                entry["imagesVerification"] = {"enabled": False}
            refs.append({"namePattern": app, "images": [entry]})
        spec = {
            "imagesVerification": {
                "keyless": {"issuer": ISSUER, "identity": f"regexp:{IDENTITY[:30]}.*"},
                "trustedRoot": {"configMapName": "sigstore-root", "key": "root.json"},
            },
            "applicationRefs": refs,
        }
        kube.store.put(objects.image_updater("web", NS, spec))
        settings = resolve(
            "run",
            {
                "kubeconfig": str(kube.write_kubeconfig(tmp_path / "kubeconfig", namespace=NS)),
                "registries_conf_path": str(registries_conf(tmp_path, registry)),
                "once": True,
            },
            env={},
        )
        controller, closers = await build_controller(settings)
        try:
            result = await controller.cycle()
        finally:
            for closer in reversed(closers):
                await close_resource(closer)

        def running(app: str) -> list[str]:
            stored = kube.store.get("applications", NS, app)
            return list(stored["spec"]["source"]["kustomize"]["images"])

        assert result.images_updated == 2 and result.errors == 1
        assert running("signed") == [f"{names['signed']}:1.1.0@{digests['signed']}"]
        assert running("stranger") == [f"{names['stranger']}:1.0.0"]
        assert running("opted-out") == [f"{names['opted-out']}:1.1.0"]
        events = [e for e in kube.store.list("events", NS) if e.get("type") == "Warning"]
        assert any("certificate identity mallory@example.com" in e["message"] for e in events), (
            events
        )


async def test_controller_names_a_missing_trusted_root_config_map(
    registry: RegistryServer, repo: str, tmp_path: Path
) -> None:
    async with ImagePusher(registry.url) as pusher:
        await pusher.push_image(repo, "1.0.0", created=CREATED)
        await pusher.push_image(repo, "1.1.0", created=CREATED + timedelta(days=1))
    image = f"{registry.host}/{repo}"
    async with KubeApiServer(namespaces=(NS,)) as kube:
        kube.store.put(
            objects.application(
                "web", NS, images=[f"{image}:1.0.0"], kustomize_images=[f"{image}:1.0.0"]
            )
        )
        verification = {
            "keyless": {"issuer": ISSUER, "identity": IDENTITY},
            "trustedRoot": {"configMapName": "missing", "key": "root.json"},
        }
        kube.store.put(
            objects.image_updater(
                "web",
                NS,
                {
                    "imagesVerification": verification,
                    "applicationRefs": [
                        {"namePattern": "web", "images": [{"alias": "web", "imageName": image}]}
                    ],
                },
            )
        )
        settings = resolve(
            "run",
            {
                "kubeconfig": str(kube.write_kubeconfig(tmp_path / "kubeconfig", namespace=NS)),
                "registries_conf_path": str(registries_conf(tmp_path, registry)),
                "once": True,
            },
            env={},
        )
        controller, closers = await build_controller(settings)
        try:
            result = await controller.cycle()
        finally:
            for closer in reversed(closers):
                await close_resource(closer)
        assert result.images_updated == 0 and result.errors == 1
        [app] = result.apps
        assert app.plan is not None
        [image_result] = app.plan.results
        assert (
            f"imagesVerification.trustedRoot (ConfigMap {NS}/missing, key root.json): "
            "cannot read the ConfigMap" in image_result.message
        ), image_result.message
        stored = kube.store.get("applications", NS, "web")
        assert stored["spec"]["source"]["kustomize"]["images"] == [f"{image}:1.0.0"]
