"""Verification for the ``test`` command: a policy from files given on the command line, the
check of the chosen tag, and ``--explain`` lines saying what was found, where, and why each
signature passed or not."""

from __future__ import annotations

from pathlib import Path

from argocd_image_updater.model.registry import CredentialProvider, RegistryEndpoint
from argocd_image_updater.registry.scanner import Scanner
from argocd_image_updater.verify.keys import UnusableKey, VerifyingKey, load_public_key
from argocd_image_updater.verify.policy import (
    PolicyProblem,
    TrustPolicy,
    build_policy,
    keyless_policy,
    load_trusted_root,
)
from argocd_image_updater.verify.trustroot import public_trusted_root
from argocd_image_updater.verify.verifier import EndpointFor, Target, Verdict, Verifier


def _read(path: str, flag: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as err:
        raise PolicyProblem(f"{flag} {path}: {err.strerror or err}") from None


def policy_from_files(
    key_file: str = "",
    signature_repository: str = "",
    *,
    identity: str = "",
    issuer: str = "",
    trusted_root_file: str = "",
) -> TrustPolicy:
    """``--verify-key FILE`` and/or ``--verify-identity``/``--verify-issuer``
    [``--verify-trusted-root FILE``] (and ``--verify-cosign-repository``);
    :class:`PolicyProblem` names the flag."""
    keys: tuple[VerifyingKey, ...] = ()
    if key_file:
        try:
            keys = (load_public_key(_read(key_file, "--verify-key")),)
        except UnusableKey as err:
            raise PolicyProblem(f"--verify-key {key_file}: {err}") from None
    if bool(identity) != bool(issuer):
        raise PolicyProblem("--verify-identity and --verify-issuer must be given together")
    if trusted_root_file and not identity:
        raise PolicyProblem("--verify-trusted-root needs --verify-identity and --verify-issuer")
    keyless = None
    if identity:
        where = f"--verify-trusted-root {trusted_root_file}"
        root = (
            load_trusted_root(
                _read(trusted_root_file, "--verify-trusted-root"),
                f"the trusted root {trusted_root_file}",
                where,
            )
            if trusted_root_file
            else public_trusted_root()
        )
        try:
            keyless = keyless_policy(identity, issuer, root, "imagesVerification.keyless")
        except PolicyProblem as err:
            raise PolicyProblem(
                str(err)
                .replace("imagesVerification.keyless.identity", "--verify-identity")
                .replace("imagesVerification.keyless.issuer", "--verify-issuer")
            ) from None
    try:
        return build_policy(keys, signature_repository, keyless)
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
        if finding.signer:
            lines.append(f"signature: {finding.where}: {finding.signer}")
    lines.append(
        f"verification: passed, {verdict.digest} is written with the tag"
        if verdict.passed
        else f"verification: failed: {verdict.error}"
    )
    return lines
