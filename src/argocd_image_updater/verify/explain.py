"""Verification for the ``test`` command: a policy from files given on the command line, the
check of the chosen tag, and ``--explain`` lines saying what was found, where, and why each
signature passed or not."""

from __future__ import annotations

from pathlib import Path

from argocd_image_updater.model.registry import CredentialProvider, RegistryEndpoint
from argocd_image_updater.registry.scanner import Scanner
from argocd_image_updater.verify.keys import UnusableKey, load_public_key
from argocd_image_updater.verify.policy import PolicyProblem, TrustPolicy, build_policy
from argocd_image_updater.verify.verifier import EndpointFor, Target, Verdict, Verifier


def policy_from_files(key_file: str, signature_repository: str = "") -> TrustPolicy:
    """``--verify-key FILE`` (and ``--verify-cosign-repository``); :class:`PolicyProblem`
    names the flag."""
    try:
        pem = Path(key_file).read_bytes()
    except OSError as err:
        raise PolicyProblem(f"--verify-key {key_file}: {err.strerror or err}") from None
    try:
        key = load_public_key(pem)
    except UnusableKey as err:
        raise PolicyProblem(f"--verify-key {key_file}: {err}") from None
    try:
        return build_policy((key,), signature_repository)
    except PolicyProblem as err:
        raise PolicyProblem(
            str(err).replace("imagesVerification.cosignRepository", "--verify-cosign-repository")
        ) from None


async def verify_chosen(
    endpoint: RegistryEndpoint,
    repository: str,
    tag: str,
    digest: str,
    credentials: CredentialProvider | None,
    policy: TrustPolicy,
    endpoint_for: EndpointFor,
    name: str,
) -> Verdict:
    """Verify ``tag`` (or ``digest``, when the strategy found it) of one image."""
    async with Scanner() as scanner:
        target = Target(endpoint, repository, tag, digest, credentials, name)
        return await Verifier(scanner).verify(target, policy, endpoint_for)


def verdict_lines(verdict: Verdict, policy: TrustPolicy) -> list[str]:
    lines = [f"verification: {policy.description}"]
    if verdict.digest:
        lines.append(f"verification: digest {verdict.digest} ({verdict.location or 'not read'})")
    lines += [f"verification: {note}" for note in verdict.notes]
    for finding in verdict.findings:
        outcome = "verified" if not finding.problem else f"refused: {finding.problem}"
        lines.append(f"signature: {finding.where} ({finding.layout}): {outcome}")
    lines.append(
        f"verification: passed, {verdict.digest} is written with the tag"
        if verdict.passed
        else f"verification: failed: {verdict.error}"
    )
    return lines
