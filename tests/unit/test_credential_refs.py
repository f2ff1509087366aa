"""Credential references and Docker config matching (``config.credentials``,
``config.dockerconfig``): pure, with plain values."""

from __future__ import annotations

import base64
import json

import pytest

from argocd_image_updater.config.credentials import (
    CredentialKind,
    CredentialRef,
    CredentialRefError,
    parse_credential_ref,
    split_user_password,
)
from argocd_image_updater.config.dockerconfig import (
    DockerConfigError,
    credentials_from_docker_config,
)
from argocd_image_updater.model.registry import Credentials

HUB_API = "https://registry-1.docker.io"
VALID_CONFIG = '{"auths":{"https://registry-1.docker.io/v2/":{"auth":"Zm9vOmJhcg=="}}}'
NOPROTO_CONFIG = '{"auths":{"registry-1.docker.io":{"auth":"Zm9vOmJhcg=="}}}'


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


# --- parsing ------------------------------------------------------------------------------------


def test_cr1_secret_with_registry_prefix() -> None:
    ref = parse_credential_ref("gcr.io=secret:mynamespace/mysecret#anyfield", True)
    assert ref == CredentialRef(
        CredentialKind.SECRET, "gcr.io", namespace="mynamespace", name="mysecret", field="anyfield"
    )
    assert ref.key == "secret:mynamespace/mysecret#anyfield"
    assert str(ref) == "gcr.io=secret:mynamespace/mysecret#anyfield"


@pytest.mark.parametrize("require", [True, False])
def test_cr2_cr15_pullsecret(require: bool) -> None:
    ref = parse_credential_ref("gcr.io=pullsecret:mynamespace/mysecret", require)
    assert ref.kind is CredentialKind.PULLSECRET
    assert (ref.registry, ref.namespace, ref.name) == ("gcr.io", "mynamespace", "mysecret")
    assert ref.field == ".dockerconfigjson"
    assert ref.key == "pullsecret:mynamespace/mysecret"


def test_cr3_registry_prefix_required() -> None:
    with pytest.raises(CredentialRefError, match="'<registry>=' prefix is required"):
        parse_credential_ref("secret:mynamespace/mysecret#anyfield", True)


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("=secret:mynamespace/mysecret#anyfield", "registry before '=' is empty"),  # CR-4
        ("gcr.io=secrets:mynamespace/mysecret#anyfield", "unknown credential type"),  # CR-5
        ("gcr.io=secret:mynamespace/mysecret#", "needs a field after '#'"),  # CR-6
        ("gcr.io=secret:/mysecret#anyfield", "namespace before '/' is empty"),  # CR-7
        ("gcr.io=secret:mynamespace/#anyfield", "secret name after '/' is empty"),  # CR-8
        ("gcr.io=secret:", "nothing after 'secret:'"),  # CR-9
        ("gcr.io=pullsecret:/mysecret", "namespace before '/' is empty"),  # CR-10
        ("gcr.io=pullsecret:mynamespace", "no '/'"),  # CR-11
        ("foo/bar", "no '<type>:' found"),  # CR-16
        ("secret:mynamespace/mysecret", "needs a field after '#'"),
        ("pullsecret:ns/name#field", "takes no '#<field>'"),
        ("secret:My_NS/name#f", "not a valid Kubernetes namespace"),
        ("ext:relative/script.sh", "path to script must be absolute, but is 'relative/script.sh'"),
        ("env:", "nothing after 'env:'"),
        ("env:WITH SPACE", "environment variable name"),
    ],
)
def test_invalid_references(text: str, fragment: str) -> None:
    for require in (True, False):
        if require and "=" not in text:
            continue
        with pytest.raises(CredentialRefError) as info:
            parse_credential_ref(text, require)
        message = str(info.value)
        assert fragment in message
        assert "env:<VARIABLE>" in message  # tells the accepted forms


def test_unknown_type_does_not_echo_what_may_be_a_password() -> None:
    with pytest.raises(CredentialRefError) as info:
        parse_credential_ref("admin:hunter2-very-secret")
    assert "hunter2" not in str(info.value)


def test_cr12_env() -> None:
    ref = parse_credential_ref("env:DUMMY_SECRET", False)
    assert (ref.kind, ref.env_name, ref.registry) == (CredentialKind.ENV, "DUMMY_SECRET", "")
    assert ref.key == "env:DUMMY_SECRET"


def test_cr13_ext() -> None:
    ref = parse_credential_ref("ext:/tmp/a.sh", False)
    assert (ref.kind, ref.script_path) == (CredentialKind.EXT, "/tmp/a.sh")


def test_ext_path_may_contain_colons() -> None:
    assert parse_credential_ref("ext:/opt/a:b.sh").script_path == "/opt/a:b.sh"


def test_cr14_secret_without_registry() -> None:
    ref = parse_credential_ref("secret:mynamespace/mysecret#anyfield", False)
    assert (ref.registry, ref.namespace, ref.name, ref.field) == (
        "",
        "mynamespace",
        "mysecret",
        "anyfield",
    )


def test_type_keyword_is_case_insensitive() -> None:
    assert parse_credential_ref("ENV:FOO").kind is CredentialKind.ENV
    assert parse_credential_ref("PullSecret:ns/name").kind is CredentialKind.PULLSECRET


# --- docker config matching ---------------------------------------------------------------------


def test_cr23_key_with_v2_suffix() -> None:
    assert credentials_from_docker_config(VALID_CONFIG, HUB_API, "") == Credentials("foo", "bar")


@pytest.mark.parametrize(
    "url",
    [
        "https://registry-1.docker.io",
        "http://registry-1.docker.io",
        "registry-1.docker.io",
        "https://registry-1.docker.io/",
    ],
)
def test_cr24_noproto_key(url: str) -> None:
    assert credentials_from_docker_config(NOPROTO_CONFIG, url, "") == Credentials("foo", "bar")


def test_cr25_no_matching_entry() -> None:
    with pytest.raises(DockerConfigError) as info:
        credentials_from_docker_config(VALID_CONFIG, "https://gcr.io", "gcr.io")
    assert "no valid auth entry for registry https://gcr.io found in image pull secret" in str(
        info.value
    )


@pytest.mark.parametrize(
    "key",
    [
        "https://index.docker.io/v1/",
        "index.docker.io",
        "docker.io",
        "https://docker.io",
        "registry-1.docker.io",
        "registry.hub.docker.com",
    ],
)
def test_docker_hub_aliases_match_the_docker_hub_endpoint(key: str) -> None:
    config = json.dumps({"auths": {key: {"auth": b64("hubuser:hubpass")}}})
    assert credentials_from_docker_config(config, HUB_API, "docker.io") == Credentials(
        "hubuser", "hubpass"
    )
    with pytest.raises(DockerConfigError):
        credentials_from_docker_config(config, "https://ghcr.io", "ghcr.io")


def test_most_specific_key_wins_deterministically() -> None:
    auths = {
        "https://index.docker.io/v1/": {"auth": b64("alias:x")},
        "https://registry-1.docker.io": {"auth": b64("literal:x")},
        "registry.example.com": {"auth": b64("host:x")},
        "registry.example.com/team": {"auth": b64("team:x")},
        "registry.example.com/team/sub": {"auth": b64("sub:x")},
    }
    for order in (list(auths), list(reversed(auths))):
        config = json.dumps({"auths": {k: auths[k] for k in order}})
        hub = credentials_from_docker_config(config, HUB_API, "docker.io")
        assert hub.username == "literal"
        example = "https://registry.example.com"
        assert credentials_from_docker_config(config, example, "registry.example.com").username == (
            "host"
        )
        assert (
            credentials_from_docker_config(config, example, "registry.example.com/team").username
            == "team"
        )
        assert (
            credentials_from_docker_config(
                config, example, "registry.example.com/team/sub/deeper"
            ).username
            == "sub"
        )


def test_username_password_entries_and_bad_entries() -> None:
    config = json.dumps({"auths": {"ghcr.io": {"username": "u", "password": "p"}}})
    assert credentials_from_docker_config(config, "https://ghcr.io", "ghcr.io") == Credentials(
        "u", "p"
    )
    bad = json.dumps({"auths": {"ghcr.io": {"auth": "%%%not-base64-secretvalue"}}})
    with pytest.raises(DockerConfigError) as info:
        credentials_from_docker_config(bad, "https://ghcr.io", "ghcr.io")
    assert "'auth' of entry 'ghcr.io' is not base64" in str(info.value)
    assert "secretvalue" not in str(info.value)
    with pytest.raises(DockerConfigError, match=r"not valid Docker config JSON \(line 1"):
        credentials_from_docker_config("{not json", "https://ghcr.io", "ghcr.io")
    with pytest.raises(DockerConfigError, match="no credentials in image pull secret"):
        credentials_from_docker_config("[]", "https://ghcr.io", "ghcr.io")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("user:pass", ("user", "pass")),
        ("user:pass\n", ("user", "pass")),
        ("user:pa:ss", ("user", "pa:ss")),
        ("user:", None),
        (":pass", None),
        ("userpass", None),
    ],
)
def test_split_user_password(value: str, expected: tuple[str, str] | None) -> None:
    creds = split_user_password(value)
    assert (None if creds is None else (creds.username, creds.password)) == expected
