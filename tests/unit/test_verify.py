"""Verification's pure parts: keys, payloads, the policy and its merge over the three levels."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from argocd_image_updater.config.imageupdater import parse_image_updater
from argocd_image_updater.config.imageupdater_refs import ref_verification
from argocd_image_updater.config.secrets import FileSecretReader
from argocd_image_updater.model.update_config import UpdateSettings, Verification
from argocd_image_updater.verify.keys import UnusableKey, load_public_key
from argocd_image_updater.verify.payloads import (
    IN_TOTO,
    SIMPLE_SIGNING,
    PayloadError,
    Signed,
    pae,
    parse_bundle,
    signed_digests,
)
from argocd_image_updater.verify.policy import PolicyProblem, build_policy, resolve
from argocd_image_updater.verify.verifier import check_signature
from argocd_image_updater_testing import cosign

D1 = "sha256:" + "a" * 64
D2 = "sha256:" + "b" * 64


def test_pae_is_the_dsse_v1_encoding() -> None:
    # The example of the DSSE specification.
    assert pae("http://example.com/HelloWorld", b"hello world") == (
        b"DSSEv1 29 http://example.com/HelloWorld 11 hello world"
    )


@pytest.mark.parametrize("kind", ["p256", "p384", "ed25519", "rsa"])
def test_supported_keys_verify_what_they_signed(kind: cosign.KeyKind) -> None:
    key = cosign.generate_key(kind)
    loaded = load_public_key(cosign.public_pem(key))
    assert loaded.verify(cosign.sign(key, b"payload"), b"payload")
    assert not loaded.verify(cosign.sign(key, b"payload"), b"other payload")
    assert not loaded.verify(b"garbage", b"payload")


def test_p384_signatures_over_sha384_verify_too() -> None:
    key = ec.generate_private_key(ec.SECP384R1())
    signature = key.sign(b"m", ec.ECDSA(hashes.SHA384()))
    assert load_public_key(cosign.public_pem(key)).verify(signature, b"m")


@pytest.mark.parametrize(
    ("pem", "problem"),
    [
        (
            ec.generate_private_key(ec.SECP256R1()).private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            ),
            "this is a private key",
        ),
        (b"ssh-ed25519 AAAA", "not a PEM public key"),
        (b"-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n", "not a readable"),
        (
            cosign.public_pem(ec.generate_private_key(ec.SECP521R1())),
            "ECDSA curve secp521r1 is not supported",
        ),
        (
            cosign.public_pem(rsa.generate_private_key(public_exponent=65537, key_size=1024)),
            "RSA key of 1024 bits is too small",
        ),
    ],
)
def test_unusable_keys_say_why(pem: bytes, problem: str) -> None:
    with pytest.raises(UnusableKey, match=problem):
        load_public_key(pem)


def test_signed_digests_of_both_payload_kinds() -> None:
    simple = cosign.simple_signing_payload("r/app", D1)
    assert signed_digests(Signed(simple, b"", simple, SIMPLE_SIGNING)) == (D1,)
    statement = cosign.statement("r/app", D2)
    assert signed_digests(Signed(b"", b"", statement, IN_TOTO)) == (D2,)
    with pytest.raises(PayloadError, match="unsupported payload type 'text/plain'"):
        signed_digests(Signed(b"", b"", b"x", "text/plain"))
    with pytest.raises(PayloadError, match=r"no critical\.image\.docker-manifest-digest"):
        signed_digests(Signed(b"", b"", b'{"critical": {"image": {}}}', SIMPLE_SIGNING))


def test_bundle_parsing_and_its_errors() -> None:
    key = cosign.generate_key()
    statement = cosign.statement("r/app", D1)
    signed = parse_bundle(cosign.dsse_bundle(key, statement))
    assert signed.message == pae(IN_TOTO, statement) and signed.payload == statement
    bundle = json.loads(cosign.dsse_bundle(key, statement))
    message = {**bundle, "messageSignature": {}}
    del message["dsseEnvelope"]
    with pytest.raises(PayloadError, match="message signatures do not name the image"):
        parse_bundle(json.dumps(message).encode())
    two = json.loads(json.dumps(bundle))
    two["dsseEnvelope"]["signatures"] *= 2
    with pytest.raises(PayloadError, match="exactly one signature"):
        parse_bundle(json.dumps(two).encode())
    with pytest.raises(PayloadError, match="media type 'x'"):
        parse_bundle(json.dumps({**bundle, "mediaType": "x"}).encode())


def test_check_signature_explains_replays_and_wrong_keys() -> None:
    key = cosign.generate_key()
    payload = cosign.simple_signing_payload("r/app", D1)
    signed = Signed(payload, cosign.sign(key, payload), payload, SIMPLE_SIGNING)
    good = build_policy((load_public_key(cosign.public_pem(key)),))
    assert check_signature(signed, D1, good) == ""
    assert "it signs " + D1 + ", not the image's " + D2 in check_signature(signed, D2, good)
    other = build_policy((load_public_key(cosign.public_pem(cosign.generate_key("ed25519"))),))
    assert "does not verify with the Ed25519 key" in check_signature(signed, D1, other)


def test_the_fingerprint_follows_key_and_repository() -> None:
    one = load_public_key(cosign.public_pem(cosign.generate_key()))
    two = load_public_key(cosign.public_pem(cosign.generate_key()))
    assert build_policy((one,)).fingerprint == build_policy((one,)).fingerprint
    assert build_policy((one,)).fingerprint != build_policy((two,)).fingerprint
    assert build_policy((one,)).fingerprint != build_policy((one,), "r.io/sigs").fingerprint
    with pytest.raises(PolicyProblem, match=r"imagesVerification\.cosignRepository: 'r\.io/s:1'"):
        build_policy((one,), "r.io/s:1")


async def test_the_key_is_read_from_the_imageupdaters_namespace(tmp_path: Path) -> None:
    key = cosign.generate_key()
    (tmp_path / "team-a" / "cosign").mkdir(parents=True)
    (tmp_path / "team-a" / "cosign" / "cosign.pub").write_bytes(cosign.public_pem(key))
    reader = FileSecretReader(tmp_path)
    v = Verification(True, "cosign", "cosign.pub")
    assert (await resolve(v, "team-a", reader)).keys[0].description.startswith("ECDSA P-256")
    with pytest.raises(PolicyProblem) as missing:
        await resolve(v, "team-b", reader)
    assert str(missing.value) == (
        "imagesVerification.cosignKey (Secret team-b/cosign, key cosign.pub): "
        "secret 'team-b/cosign' not found"
    )
    with pytest.raises(PolicyProblem, match=r"key other.*does not have a field 'other'"):
        await resolve(Verification(True, "cosign", "other"), "team-a", reader)
    with pytest.raises(PolicyProblem, match="Secrets cannot be read"):
        await resolve(v, "team-a", None)


def test_cosign_repository_merges_field_by_field() -> None:
    cr = parse_image_updater(
        {
            "metadata": {"name": "u", "namespace": "ns"},
            "spec": {
                "imagesVerification": {
                    "cosignKey": {"secretName": "cosign", "key": "cosign.pub"},
                    "cosignRepository": "r.io/signatures",
                },
                "applicationRefs": [
                    {
                        "namePattern": "*",
                        "imagesVerification": {
                            "cosignKey": {"secretName": "team", "key": "cosign.pub"}
                        },
                        "images": [
                            {
                                "alias": "a",
                                "imageName": "r.io/a",
                                "imagesVerification": {
                                    "enabled": False,
                                    "cosignRepository": "r.io/other",
                                },
                            },
                            {"alias": "b", "imageName": "r.io/b"},
                        ],
                    }
                ],
            },
        }
    )
    ref = cr.spec.application_refs[0]
    merged = ref_verification(cr, ref)
    assert merged == Verification(True, "team", "cosign.pub", "r.io/signatures")
    a, b = (image.to_spec(UpdateSettings(), merged) for image in ref.images or ())
    assert a.verification == Verification(False, "team", "cosign.pub", "r.io/other")
    assert b.verification == merged
