"""Keyless verification's pure parts: Merkle proofs, matchers, trusted roots, certificates, the
policy (fields named in errors) and the configuration merge."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec

from argocd_image_updater.config.imageupdater import (
    MSG_VERIFICATION,
    ImageUpdaterError,
    parse_image_updater,
)
from argocd_image_updater.config.imageupdater_refs import ref_verification
from argocd_image_updater.model.update_config import UpdateSettings, Verification
from argocd_image_updater.verify.keyless import (
    KeylessPolicy,
    Matcher,
    MatcherError,
    check_keyless,
    identities,
    issuer,
)
from argocd_image_updater.verify.payloads import parse_bundle
from argocd_image_updater.verify.policy import PolicyProblem, build_policy, keyless_policy, resolve
from argocd_image_updater.verify.tlog import LogEntryError, leaf_hash, root_from_proof
from argocd_image_updater.verify.trustroot import (
    PUBLIC_NAME,
    TrustRootError,
    parse_trusted_root,
    public_trusted_root,
)
from argocd_image_updater_testing import keyless as fake

D1 = "sha256:" + "a" * 64
ID = "dev@example.com"
ISS = "https://issuer.example"


@pytest.fixture(scope="module")
def sigstore() -> fake.Sigstore:
    return fake.Sigstore()


def policy(sigstore: fake.Sigstore, identity: str = ID, iss: str = ISS) -> KeylessPolicy:
    root = parse_trusted_root(sigstore.trusted_root(), "the test root")
    return KeylessPolicy(Matcher.parse(identity), Matcher.parse(iss), root)


# --- Merkle inclusion (RFC 9162) ---------------------------------------------------------------


def test_every_leaf_of_trees_up_to_33_proves_against_the_root() -> None:
    for size in range(1, 34):
        leaves = [leaf_hash(bytes([i])) for i in range(size)]
        root = fake._tree_hash(leaves)
        for index in range(size):
            path = tuple(fake._audit_path(index, leaves))
            assert root_from_proof(index, size, leaves[index], path) == root
            if path:  # a changed sibling, or a path for another index, leads elsewhere
                tampered = (hashlib.sha256(path[0]).digest(), *path[1:])
                assert root_from_proof(index, size, leaves[index], tampered) != root


@pytest.mark.parametrize(
    ("index", "size", "path_length", "problem"),
    [
        (5, 5, 3, "outside a tree of 5"),
        (0, 8, 2, "shorter than the tree is deep"),
        (0, 2, 3, "longer than the tree is deep"),
    ],
)
def test_malformed_proofs_are_refused(
    index: int, size: int, path_length: int, problem: str
) -> None:
    with pytest.raises(LogEntryError, match=problem):
        root_from_proof(index, size, b"x" * 32, tuple(b"y" * 32 for _ in range(path_length)))


# --- matchers ----------------------------------------------------------------------------------


def test_matchers_are_exact_or_whole_value_regexps() -> None:
    assert Matcher.parse("a@b.c").matches("a@b.c")
    assert not Matcher.parse("a@b.c").matches("xa@b.c")
    assert not Matcher.parse("a.b").matches("axb")  # exact: no pattern characters
    pattern = Matcher.parse(r"regexp:https://github\.com/org/.*")
    assert pattern.matches("https://github.com/org/repo/.github/workflows/x.yml@refs/heads/main")
    assert not pattern.matches("https://evil.example/?https://github.com/org/x")
    assert not Matcher.parse(r"regexp:https://github\.com/org/").matches("https://github.com/org/x")
    with pytest.raises(MatcherError, match="'regexp:\\(' is not a valid regular expression"):
        Matcher.parse("regexp:(")


def test_matcher_regexps_are_re2_and_errors_name_the_field(sigstore: fake.Sigstore) -> None:
    assert Matcher.parse(r"regexp:^\pL+@example\.com\z").matches("dév@example.com")
    assert Matcher.parse("regexp:(a+)+").matches("a" * 10_000)
    assert not Matcher.parse("regexp:(a+)+").matches("a" * 10_000 + "!")
    root = parse_trusted_root(sigstore.trusted_root(), "the test root")
    with pytest.raises(PolicyProblem) as refused:
        keyless_policy(ID, "regexp:https://(?=x)", root, "imagesVerification.keyless")
    assert str(refused.value) == (
        "imagesVerification.keyless.issuer: 'regexp:https://(?=x)' is not a valid regular "
        "expression (invalid perl operator: (?=)"
    )


# --- trusted roots -----------------------------------------------------------------------------


def test_the_shipped_public_root_is_sigstores() -> None:
    root = public_trusted_root()
    assert root.name == PUBLIC_NAME
    assert any("fulcio.sigstore.dev" in a.uri for a in root.authorities)
    assert any("rekor.sigstore.dev" in log.url for log in root.logs)
    # The Rekor production log's id is the SHA-256 of its key.
    assert any(log.key_id.hex().startswith("c0d23d6ad406973f") for log in root.logs)


def _root(sigstore: fake.Sigstore, **changes: object) -> bytes:
    document = json.loads(sigstore.trusted_root())
    for path, value in changes.items():
        *parents, last = path.split("__")
        node = document
        for part in parents:
            node = node[int(part)] if part.isdigit() else node[part]
        node[int(last) if last.isdigit() else last] = value
    return json.dumps(document).encode()


@pytest.mark.parametrize(
    ("changes", "problem"),
    [
        ({"mediaType": "x"}, "mediaType is 'x', expected"),
        ({"tlogs": []}, "tlogs is empty"),
        ({"certificateAuthorities": []}, "certificateAuthorities is empty"),
        (
            {"certificateAuthorities__0__certChain__certificates__1__rawBytes": "!"},
            r"certificateAuthorities\[0\]\.certChain\.certificates\[1\]\.rawBytes is not base64",
        ),
        (
            {"certificateAuthorities__0__certChain__certificates__0__rawBytes": "AAAA"},
            r"certificateAuthorities\[0\]\.certChain\.certificates\[0\]\.rawBytes: not a DER",
        ),
        ({"tlogs__0__publicKey__rawBytes": "AAAA"}, r"tlogs\[0\]\.publicKey\.rawBytes: not a"),
        (
            {"certificateAuthorities__0__validFor": {"start": "yesterday"}},
            r"certificateAuthorities\[0\]\.validFor\.start: 'yesterday' is not an RFC 3339",
        ),
    ],
)
def test_unusable_trusted_roots_name_the_field(
    sigstore: fake.Sigstore, changes: Mapping[str, object], problem: str
) -> None:
    with pytest.raises(TrustRootError, match=problem):
        parse_trusted_root(_root(sigstore, **changes), "r")  # type: ignore[arg-type]
    with pytest.raises(TrustRootError, match="not valid JSON"):
        parse_trusted_root(b"{", "r")


# --- certificates ------------------------------------------------------------------------------


def test_identity_and_issuer_are_read_from_the_fulcio_extensions(sigstore: fake.Sigstore) -> None:
    _, cert = sigstore.certificate("https://ci.example/workflow@refs/tags/v1", ISS)
    assert identities(cert) == ["https://ci.example/workflow@refs/tags/v1"]
    assert issuer(cert) == ISS


def test_the_deprecated_issuer_extension_is_read_when_alone(sigstore: fake.Sigstore) -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([]))
        .issuer_name(sigstore.intermediate.subject)
        .public_key(key.public_key())
        .serial_number(1)
        .not_valid_before(datetime.now(UTC))
        .not_valid_after(datetime.now(UTC) + timedelta(minutes=10))
        .add_extension(x509.UnrecognizedExtension(fake.ISSUER_V1, b"https://old.example"), False)
        .sign(sigstore.intermediate_key, hashes.SHA256())
    )
    assert issuer(cert) == "https://old.example"
    assert identities(cert) == []


def test_a_bundle_passes_and_each_broken_part_is_named(sigstore: fake.Sigstore) -> None:
    good = parse_bundle(sigstore.sign_bundle("r/x", D1, ID, ISS))
    assert check_keyless(good, policy(sigstore)).problem == ""
    stale = sigstore.log(json.dumps({"kind": "dsse"}).encode())
    assert stale  # another entry in between does not disturb later proofs
    entry_time_far = datetime.now(UTC) + timedelta(hours=2)
    late = parse_bundle(sigstore.sign_bundle("r/x", D1, ID, ISS, when=entry_time_far))
    assert "valid at the entry's integrated time" in check_keyless(late, policy(sigstore)).problem
    assert check_keyless(good, policy(sigstore, identity="x@y.z")).problem.startswith(
        "the identity does not match x@y.z"
    )
    unsigned = parse_bundle(sigstore.sign_bundle("r/x", D1, ID, ISS, promise=False, proof=False))
    assert "neither a signed entry timestamp nor an inclusion proof" in (
        check_keyless(unsigned, policy(sigstore)).problem
    )


def test_a_log_key_not_yet_valid_at_the_integrated_time_is_refused(
    sigstore: fake.Sigstore,
) -> None:
    future = datetime.now(UTC) + timedelta(days=1)
    root = parse_trusted_root(sigstore.trusted_root(log_valid_from=future), "the test root")
    signed = parse_bundle(sigstore.sign_bundle("r/x", D1, ID, ISS))
    problem = check_keyless(signed, KeylessPolicy(Matcher(ID), Matcher(ISS), root)).problem
    assert "was not valid at the entry's integrated time" in problem


# --- policy ------------------------------------------------------------------------------------


def test_the_fingerprint_follows_identity_issuer_and_root(sigstore: fake.Sigstore) -> None:
    root = parse_trusted_root(sigstore.trusted_root(), "r")
    other_root = parse_trusted_root(fake.Sigstore().trusted_root(), "r")

    def fp(identity: str, iss: str, r: object = root) -> str:
        return build_policy((), "", keyless_policy(identity, iss, r, "k")).fingerprint  # type: ignore[arg-type]

    assert fp(ID, ISS) == fp(ID, ISS)
    assert len({fp(ID, ISS), fp("o@x.y", ISS), fp(ID, "https://o"), fp(ID, ISS, other_root)}) == 4


class ConfigMaps:
    def __init__(self, data: Mapping[str, Mapping[str, str]]) -> None:
        self.data = data

    async def read_configmap(self, namespace: str, name: str) -> dict[str, str]:
        try:
            return dict(self.data[f"{namespace}/{name}"])
        except KeyError:
            raise LookupError(f"configmap '{namespace}/{name}' not found") from None


async def test_resolve_reads_the_trusted_root_from_the_imageupdaters_namespace(
    sigstore: fake.Sigstore,
) -> None:
    maps = ConfigMaps({"team-a/root": {"trusted_root.json": sigstore.trusted_root().decode()}})
    v = Verification(
        keyless_issuer=ISS,
        keyless_identity=ID,
        trusted_root_config_map="root",
        trusted_root_key="trusted_root.json",
    )
    resolved = await resolve(v, "team-a", None, maps)
    assert resolved.keyless is not None and not resolved.keys
    assert resolved.keyless.root.name == (
        "the trusted root of ConfigMap team-a/root, key trusted_root.json"
    )
    where = "imagesVerification.trustedRoot (ConfigMap team-b/root, key trusted_root.json)"
    with pytest.raises(PolicyProblem, match=rf"^{_re(where)}: cannot read the ConfigMap"):
        await resolve(v, "team-b", None, maps)
    with pytest.raises(PolicyProblem, match="ConfigMaps cannot be read in this mode"):
        await resolve(v, "team-a", None, None)
    wrong_key = Verification(
        keyless_issuer=ISS,
        keyless_identity=ID,
        trusted_root_config_map="root",
        trusted_root_key="x",
    )
    with pytest.raises(PolicyProblem, match="the ConfigMap has no key 'x'"):
        await resolve(wrong_key, "team-a", None, maps)
    broken = ConfigMaps({"team-a/root": {"trusted_root.json": "{}"}})
    with pytest.raises(PolicyProblem, match=r"key trusted_root\.json\): mediaType is None"):
        await resolve(v, "team-a", None, broken)
    public = await resolve(Verification(keyless_issuer=ISS, keyless_identity=ID), "team-a", None)
    assert public.keyless is not None and public.keyless.root.name == PUBLIC_NAME
    bad = Verification(keyless_issuer="regexp:[", keyless_identity=ID)
    with pytest.raises(PolicyProblem, match=r"^imagesVerification\.keyless\.issuer: 'regexp:\['"):
        await resolve(bad, "team-a", None)


def _re(text: str) -> str:
    import re

    return re.escape(text)


# --- configuration -----------------------------------------------------------------------------


def _cr(spec_verification: object, ref_verification_: object, image_verification: object) -> object:
    image: dict[str, object] = {"alias": "a", "imageName": "r.io/a"}
    if image_verification is not None:
        image["imagesVerification"] = image_verification
    ref: dict[str, object] = {"namePattern": "*", "images": [image]}
    if ref_verification_ is not None:
        ref["imagesVerification"] = ref_verification_
    return parse_image_updater(
        {
            "metadata": {"name": "u", "namespace": "ns"},
            "spec": {"imagesVerification": spec_verification, "applicationRefs": [ref]},
        }
    )


def test_keyless_and_trusted_root_merge_each_as_a_whole() -> None:
    cr = _cr(
        {
            "keyless": {"issuer": ISS, "identity": ID},
            "trustedRoot": {"configMapName": "root", "key": "trusted_root.json"},
        },
        {"cosignKey": {"secretName": "cosign", "key": "cosign.pub"}},
        {"keyless": {"issuer": "https://other", "identity": "regexp:.*"}},
    )
    ref = cr.spec.application_refs[0]  # type: ignore[attr-defined]
    merged = ref_verification(cr, ref)  # type: ignore[arg-type]
    assert merged is not None and merged.has_key and merged.has_keyless
    [image] = ref.images
    spec = image.to_spec(UpdateSettings(), merged).verification
    assert spec == Verification(
        True,
        "cosign",
        "cosign.pub",
        None,
        keyless_issuer="https://other",
        keyless_identity="regexp:.*",
        trusted_root_config_map="root",
        trusted_root_key="trusted_root.json",
    )
    opted_out = Verification.merge(merged, Verification(enabled=False))
    assert opted_out is not None and not opted_out.enabled and opted_out.has_keyless


@pytest.mark.parametrize(
    ("verification", "problem"),
    [
        ({}, f"spec.imagesVerification: {MSG_VERIFICATION}"),
        (
            {"keyless": {"issuer": ISS}},
            "spec.imagesVerification.keyless.identity: required field is missing",
        ),
        (
            {"keyless": {"issuer": ISS, "identity": ""}},
            "spec.imagesVerification.keyless.identity:",
        ),
        (
            {"keyless": {"issuer": ISS, "identity": ID}, "trustedRoot": {"key": "k"}},
            "spec.imagesVerification.trustedRoot.configMapName: required field is missing",
        ),
    ],
)
def test_invalid_keyless_blocks_name_the_field(verification: object, problem: str) -> None:
    with pytest.raises(ImageUpdaterError) as err:
        _cr(verification, None, None)
    assert any(line.startswith(problem) for line in err.value.errors), err.value.errors


def test_keyless_alone_is_a_method() -> None:
    cr = _cr({"keyless": {"issuer": ISS, "identity": ID}}, None, None)
    merged = ref_verification(cr, cr.spec.application_refs[0])  # type: ignore[attr-defined]
    assert merged == Verification(keyless_issuer=ISS, keyless_identity=ID)
    assert "cosignKey or keyless" in MSG_VERIFICATION


def test_der_certificates_ending_in_whitespace_bytes_are_read(sigstore: fake.Sigstore) -> None:
    """A DER certificate is not text: its last byte (of the signature) may be 0x20 or 0x0a."""
    from cryptography.hazmat.primitives import serialization

    from argocd_image_updater.verify.keyless import _certificates

    for _ in range(2000):
        _, cert = sigstore.certificate(ID, ISS)
        der = cert.public_bytes(serialization.Encoding.DER)
        if der[-1:].isspace():
            break
    else:
        pytest.fail("no certificate ending in a whitespace byte was made")
    assert _certificates(der) == [cert]
