"""``test --verify-key`` and ``--verify-identity``: the real CLI against the real registry, signatures laid out by cosign's
rules with keys made here."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from test_cli_test_command import cli, conf_for

from argocd_image_updater_testing import cosign
from argocd_image_updater_testing.keyless import Sigstore
from argocd_image_updater_testing.push import ImagePusher
from argocd_image_updater_testing.registry import RegistryServer

CREATED = datetime(2026, 7, 1, tzinfo=UTC)


async def test_verify_key_explains_what_was_found_and_pins_the_digest(
    registry: RegistryServer, repo: str, tmp_path: Path
) -> None:
    image = f"{registry.host}/{repo}"
    key, stranger = cosign.generate_key(), cosign.generate_key()
    (tmp_path / "cosign.pub").write_bytes(cosign.public_pem(key))
    async with ImagePusher(registry.url) as pusher:
        await pusher.push_image(repo, "1.0.0", created=CREATED)
        digest = await pusher.push_image(repo, "1.1.0", created=CREATED)
        args = ["test", image, "--registries-conf-path", str(conf_for(tmp_path, registry))]
        args += ["--verify-key", str(tmp_path / "cosign.pub"), "--explain"]

        unsigned = cli(*args)
        assert unsigned.returncode == 5, unsigned.stderr
        assert "verification: ECDSA P-256 key sha256:" in unsigned.stdout
        assert "verification: referrers API: not supported by the registry (404)" in unsigned.stdout
        assert f"verification: failed: no signature found for {image}@{digest}" in unsigned.stdout
        assert "level=error" in unsigned.stderr + unsigned.stdout
        assert "latest image according to constraint" not in unsigned.stdout

        payload = cosign.simple_signing_payload(image, digest)
        await cosign.push_signature_tag(
            pusher, repo, digest, [(payload, cosign.sign(stranger, payload))]
        )
        foreign = cli(*args)
        assert foreign.returncode == 5
        sig_tag = f"tag {digest.replace(':', '-')}.sig"
        assert f"signature: {sig_tag} (simple signing): refused: the signature does not verify" in (
            foreign.stdout
        )

        await cosign.push_signature_tag(
            pusher, repo, digest, [(payload, cosign.sign(key, payload))]
        )
        signed = cli(*args)
    assert signed.returncode == 0, signed.stdout + signed.stderr
    assert f"signature: {sig_tag} (simple signing): verified" in signed.stdout
    assert f"verification: passed, {digest} is written with the tag" in signed.stdout
    assert f"latest image according to constraint is {image}:1.1.0@{digest}" in signed.stdout


async def test_unusable_key_file_names_the_flag(
    registry: RegistryServer, repo: str, tmp_path: Path
) -> None:
    conf = str(conf_for(tmp_path, registry))
    (tmp_path / "private.pem").write_bytes(b"-----BEGIN PRIVATE KEY-----\nAAAA\n")
    for path, problem in (
        (tmp_path / "missing.pub", "No such file or directory"),
        (tmp_path / "private.pem", "this is a private key"),
    ):
        result = cli(
            "test",
            f"{registry.host}/{repo}",
            "--registries-conf-path",
            conf,
            "--verify-key",
            str(path),
        )
        assert result.returncode == 1
        assert f"--verify-key {path}: {problem}" in result.stdout + result.stderr


async def test_verify_identity_explains_the_certificate_found(
    registry: RegistryServer, repo: str, tmp_path: Path
) -> None:
    image = f"{registry.host}/{repo}"
    sigstore = Sigstore()
    (tmp_path / "trusted_root.json").write_bytes(sigstore.trusted_root())
    async with ImagePusher(registry.url) as pusher:
        await pusher.push_image(repo, "1.0.0", created=CREATED)
        digest = await pusher.push_image(repo, "1.1.0", created=CREATED)
        payload, signature, annotations = sigstore.sign_sig_layer(
            image, digest, "dev@example.com", "https://issuer.example"
        )
        await cosign.push_signature_tag(
            pusher, repo, digest, [(payload, signature)], extra_annotations=annotations
        )
    args = ["test", image, "--registries-conf-path", str(conf_for(tmp_path, registry))]
    args += ["--verify-trusted-root", str(tmp_path / "trusted_root.json"), "--explain"]
    sig_tag = f"tag {digest.replace(':', '-')}.sig"

    stranger = cli(*args, "--verify-identity", "ops@example.com", "--verify-issuer", "regexp:.*")
    assert stranger.returncode == 5, stranger.stdout + stranger.stderr
    assert "verification: keyless: identity ops@example.com, issuer regexp:.*" in stranger.stdout
    assert (
        f"signature: {sig_tag} (simple signing): refused: the identity does not match "
        "ops@example.com" in stranger.stdout
    )
    assert (
        f"signature: {sig_tag}: certificate identity dev@example.com, issuer "
        "https://issuer.example" in stranger.stdout
    )

    public = cli(
        *args[:-3],
        "--explain",
        "--verify-identity",
        "dev@example.com",
        "--verify-issuer",
        "https://issuer.example",
    )
    assert public.returncode == 5  # the public Sigstore root does not know the test's log
    assert "(trusted root: the public Sigstore trusted root)" in public.stdout
    assert "is not in the public Sigstore trusted root" in public.stdout

    signed = cli(
        *args,
        "--verify-identity",
        "regexp:dev@example\\.com",
        "--verify-issuer",
        "https://issuer.example",
    )
    assert signed.returncode == 0, signed.stdout + signed.stderr
    assert f"signature: {sig_tag} (simple signing): verified" in signed.stdout
    assert f"latest image according to constraint is {image}:1.1.0@{digest}" in signed.stdout


def test_keyless_flags_are_checked_naming_the_flag(tmp_path: Path) -> None:
    (tmp_path / "root.json").write_text('{"mediaType": "something else"}')
    for flags, problem in (
        (["--verify-identity", "a@b.c"], "--verify-identity and --verify-issuer must be given"),
        (["--verify-trusted-root", "x.json"], "--verify-trusted-root needs --verify-identity"),
        (
            ["--verify-identity", "regexp:(", "--verify-issuer", "i"],
            "--verify-identity: 'regexp:(' is not a valid regular expression",
        ),
        (
            [
                "--verify-identity",
                "a",
                "--verify-issuer",
                "i",
                "--verify-trusted-root",
                str(tmp_path / "root.json"),
            ],
            f"--verify-trusted-root {tmp_path / 'root.json'}: mediaType is 'something else'",
        ),
    ):
        result = cli("test", "localhost:1/x", *flags)
        assert result.returncode == 1, result.stdout + result.stderr
        assert problem in result.stdout + result.stderr
