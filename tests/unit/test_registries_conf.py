from __future__ import annotations

import io
import textwrap
from datetime import timedelta
from pathlib import Path

import pytest
import trustme

from argocd_image_updater.config.registries import DOCKER_HUB, RegistriesConfError, RegistryConfig
from argocd_image_updater.config.registries_conf import parse_registries_conf
from argocd_image_updater.config.registries_file import load_registries_conf
from argocd_image_updater.model.registry import RegistryEndpoint, TagSortMode
from argocd_image_updater.observe import log

EXAMPLE = """\
registries:
- name: Docker Hub
  prefix: docker.io
  api_url: https://registry-1.docker.io
  credentials: env:SOME_ENV_VAR
  defaultns: library
  default: true
- name: Google Container Registry
  api_url: https://gcr.io
  prefix: gcr.io
  credentials: pullsecret:foo/bar
- name: RedHat Quay
  api_url: https://quay.io
  ping: false
  prefix: quay.io
  credentials: secret:foo/bar#creds
- name: GitHub Container Registry
  api_url: https://ghcr.io
  ping: no
  prefix: ghcr.io
  credentials: ext:/some/script
  credsexpire: 5h
"""


def parse(text: str, tls_dir: Path | str = "/nonexistent-tls-dir") -> RegistryConfig:
    return parse_registries_conf(textwrap.dedent(text), tls_dir=tls_dir)


def problems(text: str, tls_dir: Path | str = "/nonexistent-tls-dir") -> str:
    with pytest.raises(RegistriesConfError) as info:
        parse(text, tls_dir)
    assert isinstance(info.value, ValueError)
    return str(info.value)


@pytest.fixture(scope="module")
def ca_pem() -> str:
    return trustme.CA().cert_pem.bytes().decode()


# --- parsing: the original's cases --------------------------------------------------------------


def test_rc1_rc8_example_config() -> None:
    config = parse(EXAMPLE)
    assert sorted(e.prefix for e in config.endpoints) == [
        "docker.io",
        "gcr.io",
        "ghcr.io",
        "quay.io",
    ]
    gcr = config.endpoint_for("gcr.io", "project/image")
    assert gcr.credentials == "pullsecret:foo/bar"
    ghcr = config.endpoint_for("ghcr.io", "org/image")
    assert (ghcr.credentials, ghcr.creds_expire) == ("ext:/some/script", timedelta(hours=5))
    hub = config.default_endpoint
    assert (hub.prefix, hub.credentials, hub.default_ns, hub.is_default) == (
        "docker.io",
        "env:SOME_ENV_VAR",
        "library",
        True,
    )
    assert hub.limit == 0  # configured without limit: unlimited, as in the original


def test_rc2_rc3_ca_file_and_ca_data(tmp_path: Path, ca_pem: str) -> None:
    ca_file = tmp_path / "registry-ca.pem"
    ca_file.write_text(ca_pem)
    text = (
        "registries:\n"
        "- name: With file\n"
        "  api_url: https://file.example.com\n"
        "  prefix: file.example.com\n"
        f"  ca_file: {ca_file}\n"
        "- name: With data\n"
        "  api_url: https://data.example.com\n"
        "  prefix: data.example.com\n"
        "  ca_data: |\n" + textwrap.indent(ca_pem, "    ")
    )
    config = parse_registries_conf(text, tls_dir=tmp_path)
    assert config.endpoint_for("file.example.com", "x").ca_file == str(ca_file)
    assert "BEGIN CERTIFICATE" in config.endpoint_for("data.example.com", "x").ca_data


def test_rc4_name_missing() -> None:
    message = problems(
        """\
        registries:
        - api_url: https://foo.io
          ping: false
        """
    )
    assert "registry name is missing for entry registries[0]" in message
    assert message.startswith("registries.conf: ")


def test_rc5_api_url_missing() -> None:
    message = problems(
        """\
        registries:
        - name: Foobar Registry
          ping: false
        """
    )
    assert "API URL must be specified for registry Foobar Registry" in message


def test_rc6_only_one_entry_without_prefix() -> None:
    message = problems(
        """\
        registries:
        - name: Foobar Registry
          api_url: https://foobar.io
        - name: Barbar Registry
          api_url: https://barbar.io
        """
    )
    assert (
        "registries[1] (Barbar Registry): there must be only one default registry "
        "(already is Foobar Registry), Barbar Registry needs a prefix"
    ) in message


def test_rc7_unknown_tag_sort_mode() -> None:
    message = problems(
        """\
        registries:
        - name: Foobar Registry
          api_url: https://foobar.io
          prefix: foobar.io
          tagsortmode: invalid
        """
    )
    assert "unknown tag sort mode for registry Foobar Registry: invalid" in message


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        ("latest-first", TagSortMode.LATEST_FIRST),
        ("latest-last", TagSortMode.LATEST_LAST),
        ("none", TagSortMode.NONE),
        ('""', TagSortMode.NONE),
    ],
)
def test_tag_sort_modes(mode: str, expected: TagSortMode) -> None:
    config = parse(
        f"""\
        registries:
        - name: R
          api_url: https://r.io
          prefix: r.io
          tagsortmode: {mode}
        """
    )
    assert config.endpoint_for("r.io", "x").tag_sort_mode is expected


def test_rc9_defaults_infer_unknown_registries() -> None:
    gcr = RegistryConfig().endpoint_for("gcr.io", "project/image")
    assert (gcr.prefix, gcr.credentials) == ("gcr.io", "")


def test_rc10_missing_file_is_an_error_unless_allowed(tmp_path: Path) -> None:
    with pytest.raises(RegistriesConfError, match="no such file or directory"):
        load_registries_conf(tmp_path / "registries.conf")


def test_rc11_two_defaults() -> None:
    message = problems(
        """\
        registries:
        - name: Reg One
          prefix: regone.io
          api_url: https://regone.io
          default: true
        - name: Reg Two
          prefix: regtwo.io
          api_url: https://regtwo.io
          default: true
        """
    )
    assert (
        "cannot set registry regtwo.io as default - only one default registry allowed, "
        "currently set to regone.io"
    ) in message


def test_rc12_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "registries.conf"
    path.write_text("")
    loaded = load_registries_conf(path)
    assert not loaded.missing
    assert [e.prefix for e in loaded.config.endpoints] == ["docker.io"]
    assert [e.prefix for e in parse("registries: []\n").endpoints] == ["docker.io"]
    assert [e.prefix for e in parse("registries:\n").endpoints] == ["docker.io"]


def test_rc13_invalid_yaml_names_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "registries.conf"
    path.write_text("registries:\n- name: x\n  prefix: [\n")
    with pytest.raises(RegistriesConfError) as info:
        load_registries_conf(path, missing_ok=True)
    assert str(info.value).startswith(f"{path}: invalid YAML at line 4, column 1")


def test_duplicate_yaml_keys() -> None:
    message = problems("registries:\n- name: a\n  name: b\n")
    assert "invalid YAML at line 3, column 3: duplicate key" in message


def test_rc14_missing_file_or_directory_gives_defaults(tmp_path: Path) -> None:
    out = io.StringIO()
    log.setup("info", "text", out)
    missing = load_registries_conf(tmp_path / "nope.conf", missing_ok=True)
    assert missing.missing and missing.reason == "no such file or directory"
    assert [e.prefix for e in missing.config.endpoints] == ["docker.io"]
    directory = load_registries_conf(tmp_path, missing_ok=True)
    assert directory.missing and directory.reason == "is a directory"
    assert "level=warning" in out.getvalue() and "nope.conf" in out.getvalue()
    with pytest.raises(RegistriesConfError, match="is a directory"):
        load_registries_conf(tmp_path)


def test_rc15_time_sorted_registry_logs_a_warning() -> None:
    out = io.StringIO()
    log.setup("info", "text", out)
    parse(
        """\
        registries:
        - name: Sorted
          api_url: https://sorted.io
          prefix: sorted.io
          tagsortmode: latest-first
        """
    )
    assert "level=warning" in out.getvalue()
    assert "tag metadata is not fetched" in out.getvalue()


# --- parsing: strictness and clear errors -------------------------------------------------------


def test_unknown_key_names_file_entry_and_suggests() -> None:
    message = problems(
        """\
        registries:
        - name: Other
          api_url: https://other.io
          prefix: other.io
        - name: Foobar Registry
          api_url: https://foobar.io
          prefix: foobar.io
          ratelimit: 10
        """
    )
    assert message.startswith(
        "registries.conf: registries[1] (Foobar Registry): unknown key 'ratelimit' "
        "(did you mean 'limit'?)"
    )


def test_unknown_top_level_key() -> None:
    message = problems("registry:\n- name: x\n")
    assert "unknown top-level key 'registry' (did you mean 'registries'?)" in message


@pytest.mark.parametrize(
    ("line", "fragment"),
    [
        ("limit: lots", "registries[0] (R): key 'limit': input should be a valid number"),
        ("credsexpire: 5x", "key 'credsexpire': unknown unit 'x' in duration '5x'"),
        ("credsexpire: 3600", "key 'credsexpire': 3600 has no unit"),
        ("credsexpire: -5m", "key 'credsexpire': '-5m' is negative"),
        ("timeout: 30", "key 'timeout': 30 is not a duration; write one like '30s'"),
        ("timeout: 0s", "key 'timeout': '0s' is not positive"),
        ("timeout: -1m", "key 'timeout': '-1m' is not positive"),
        ("timeout: soon", "key 'timeout': "),
        ("insecure: maybe", "key 'insecure': input should be a valid boolean"),
        ("limit: true", "key 'limit': 'True' is not a number"),
        ("credentials: user:secretpassword", "key 'credentials': invalid credential reference"),
        ("credentials: ext:script.sh", "path to script must be absolute"),
        ("prefix: https://r.io", "prefix 'https://r.io' must be written without a scheme"),
    ],
)
def test_bad_values_name_entry_and_key(line: str, fragment: str) -> None:
    message = problems(
        f"""\
        registries:
        - name: R
          api_url: https://r.io
          {line}
        """
    )
    assert fragment in message
    assert "secretpassword" not in message


def test_timeout_is_the_request_deadline_default_60s() -> None:
    config = parse(
        """\
        registries:
        - name: Slow
          api_url: https://slow.example
          prefix: slow.example
          timeout: 2m30s
        - name: Usual
          api_url: https://usual.example
          prefix: usual.example
        """
    )
    assert config.endpoint_for("slow.example", "a/b").timeout == 150.0
    assert config.endpoint_for("usual.example", "a/b").timeout == 60.0
    assert config.default_endpoint.timeout == 60.0


def test_api_url_must_be_http() -> None:
    message = problems("registries:\n- name: R\n  prefix: r.io\n  api_url: r.io\n")
    assert "api_url 'r.io' of registry R must be an http:// or https:// URL" in message


def test_all_problems_are_reported_together() -> None:
    message = problems(
        """\
        registries:
        - name: A
          api_url: https://a.io
          prefix: a.io
          tagsortmode: bad
        - name: B
          api_url: https://b.io
          prefix: b.io
          limmit: 3
        """
    )
    assert len(message.splitlines()) == 2
    assert "registries[0] (A)" in message and "registries[1] (B)" in message


def test_duplicate_prefixes_are_an_error() -> None:
    message = problems(
        """\
        registries:
        - name: Hub
          api_url: https://registry-1.docker.io
          prefix: docker.io
        - name: Hub again
          api_url: https://registry-1.docker.io
          prefix: index.docker.io
        """
    )
    assert (
        "registries[1] (Hub again): prefix 'index.docker.io' is already used by registries[0]"
        in (message)
    )


def test_values_are_normalised_and_kept() -> None:
    config = parse(
        """\
        registries:
        - name: Example
          api_url: https://api.example.com/
          prefix: example.com
          credentials: env:EXAMPLE_CREDS
          credsexpire: 30m
          defaultns: default
          insecure: true
          limit: 10
          tagsortmode: latest-first
        - name: Negative
          api_url: https://neg.example.com
          prefix: neg.example.com
          limit: -1
        """
    )
    ep = config.endpoint_for("example.com", "x")
    assert ep == RegistryEndpoint(
        prefix="example.com",
        name="Example",
        api_url="https://api.example.com",
        credentials="env:EXAMPLE_CREDS",
        creds_expire=timedelta(minutes=30),
        default_ns="default",
        insecure=True,
        limit=10.0,
        tag_sort_mode=TagSortMode.LATEST_FIRST,
    )
    assert config.endpoint_for("neg.example.com", "x").limit == 0


# --- TLS ----------------------------------------------------------------------------------------


def test_ep11_invalid_ca(tmp_path: Path) -> None:
    bad = tmp_path / "bad.pem"
    bad.write_text("not a certificate")
    message = problems(
        f"""\
        registries:
        - name: R
          api_url: https://r.io
          prefix: r.io
          ca_file: {bad}
          ca_data: "-----BEGIN CERTIFICATE-----\\nnope\\n-----END CERTIFICATE-----\\n"
        """
    )
    assert f"ca_file '{bad}' does not contain a valid PEM certificate" in message
    assert "ca_data does not contain a valid PEM certificate" in message
    assert "cannot be read" in problems(
        f"registries:\n- name: R\n  api_url: https://r.io\n  ca_file: {tmp_path / 'gone.pem'}\n"
    )


def test_ep11_insecure_skips_ca_processing(tmp_path: Path) -> None:
    config = parse(
        f"""\
        registries:
        - name: R
          api_url: https://r.io
          prefix: r.io
          insecure: true
          ca_file: {tmp_path / "missing.pem"}
          ca_data: garbage
        """
    )
    ep = config.endpoint_for("r.io", "x")
    assert ep.insecure and ep.ca_file == "" and ep.ca_data == ""


def test_ep12_ca_file_is_discovered_in_the_tls_dir(tmp_path: Path, ca_pem: str) -> None:
    (tmp_path / "registry.example.com").write_text(ca_pem)
    config = parse(
        """\
        registries:
        - name: R
          api_url: https://registry.example.com:5000
          prefix: registry.example.com:5000
        - name: Other
          api_url: https://other.example.com
          prefix: other.example.com
        """,
        tls_dir=tmp_path,
    )
    found = config.endpoint_for("registry.example.com:5000", "x").ca_file
    assert found == str(tmp_path / "registry.example.com")
    assert config.endpoint_for("other.example.com", "x").ca_file == ""
    (tmp_path / "bad.example.com").write_text("garbage")
    message = problems(
        "registries:\n- name: B\n  api_url: https://bad.example.com\n  prefix: bad.example.com\n",
        tls_dir=tmp_path,
    )
    assert "does not contain a valid PEM certificate" in message


# --- endpoint lookup ----------------------------------------------------------------------------


def test_ep1_ep2_ep9_built_in_docker_hub() -> None:
    config = RegistryConfig()
    assert config.default_endpoint == DOCKER_HUB
    assert (DOCKER_HUB.name, DOCKER_HUB.api_url, DOCKER_HUB.default_ns, DOCKER_HUB.limit) == (
        "Docker Hub",
        "https://registry-1.docker.io",
        "library",
        10.0,
    )
    assert DOCKER_HUB.is_default
    assert config.endpoint_for("", "nginx") == DOCKER_HUB
    assert [e.prefix for e in config.endpoints] == ["docker.io"]


def test_ep3_inferred_endpoints_are_remembered() -> None:
    config = RegistryConfig()
    ep = config.endpoint_for("foobar.com", "some/image")
    assert ep == RegistryEndpoint(
        prefix="foobar.com", name="foobar.com", api_url="https://foobar.com", limit=20.0
    )
    assert ep.tag_sort_mode is TagSortMode.NONE and not ep.insecure
    assert config.endpoint_for("foobar.com", "other") is ep
    assert "foobar.com" not in [e.prefix for e in config.endpoints]


def test_ep7_longest_prefix_wins() -> None:
    config = parse(
        """\
        registries:
        - {name: P1, api_url: "https://foo.bar", prefix: foo.bar/prefix1, credentials: env:FOOBAR_1}
        - {name: P2, api_url: "https://foo.bar", prefix: foo.bar/prefix2, credentials: env:FOOBAR_2}
        - name: Sub
          api_url: https://foo.bar
          prefix: foo.bar/prefix1/sub-prefix
          credentials: env:FOOBAR_SUB_1
        """
    )
    assert config.endpoint_for("foo.bar", "prefix1/sub-prefix/image").credentials == (
        "env:FOOBAR_SUB_1"
    )
    assert config.endpoint_for("foo.bar", "prefix1/image").credentials == "env:FOOBAR_1"
    assert config.endpoint_for("foo.bar", "prefix2/image").credentials == "env:FOOBAR_2"
    # whole path segments only: prefix1 does not cover prefix10
    assert config.endpoint_for("foo.bar", "prefix10/image").credentials == ""


def test_path_entry_beats_host_entry() -> None:
    config = parse(
        """\
        registries:
        - {name: Host, api_url: "https://corp.io", prefix: corp.io, credentials: env:HOST}
        - {name: Team, api_url: "https://corp.io", prefix: corp.io/team, credentials: env:TEAM}
        """
    )
    assert config.endpoint_for("corp.io", "team/app").credentials == "env:TEAM"
    assert config.endpoint_for("corp.io", "other/app").credentials == "env:HOST"
    assert config.endpoint_for("corp.io.evil.com", "team/app").prefix == "corp.io.evil.com"


def test_ep8_configured_default_registry() -> None:
    config = parse(
        """\
        registries:
        - name: GHCR
          api_url: https://ghcr.io
          prefix: ghcr.io
          default: true
        """
    )
    assert config.endpoint_for("", "org/app").prefix == "ghcr.io"
    assert config.default_endpoint.is_default
    hub = config.endpoint_for("docker.io", "library/nginx")
    assert hub.prefix == "docker.io" and not hub.is_default


@pytest.mark.parametrize("prefix", ["docker.io", "index.docker.io", "registry-1.docker.io"])
def test_docker_io_entry_applies_to_unprefixed_images(prefix: str) -> None:
    config = parse(
        f"""\
        registries:
        - name: My Hub
          api_url: https://registry-1.docker.io
          prefix: {prefix}
          credentials: env:HUB
          defaultns: library
          limit: 5
        """
    )
    for registry in ("", "docker.io", "index.docker.io", "registry-1.docker.io"):
        ep = config.endpoint_for(registry, "nginx")
        assert (ep.name, ep.credentials, ep.prefix) == ("My Hub", "env:HUB", "docker.io")
    assert config.default_endpoint.name == "My Hub" and config.default_endpoint.is_default
    assert [e.name for e in config.endpoints] == ["My Hub"]


def test_unprefixed_images_use_docker_io_path_entries() -> None:
    config = parse(
        """\
        registries:
        - {name: Org, api_url: "https://registry-1.docker.io", prefix: docker.io/myorg,
           credentials: env:ORG}
        """
    )
    assert config.endpoint_for("", "myorg/app").credentials == "env:ORG"
    assert config.endpoint_for("docker.io", "myorg/app").credentials == "env:ORG"
    assert config.endpoint_for("", "nginx") == DOCKER_HUB


def test_prefixless_entry_catches_unknown_registries() -> None:
    config = parse(
        """\
        registries:
        - {name: Mirror, api_url: "https://mirror.corp"}
        """
    )
    assert config.endpoint_for("quay.io", "org/app").name == "Mirror"
    assert config.endpoint_for("", "nginx") == DOCKER_HUB


def test_with_overrides_changes_one_endpoint_only() -> None:
    config = parse(EXAMPLE)
    changed = config.with_overrides("quay.io", "org/app", credentials="env:OTHER", limit=7)
    quay = changed.endpoint_for("quay.io", "org/app")
    assert (quay.credentials, quay.limit, quay.name) == ("env:OTHER", 7.0, "RedHat Quay")
    assert config.endpoint_for("quay.io", "org/app").credentials == "secret:foo/bar#creds"
    assert changed.endpoint_for("gcr.io", "x") == config.endpoint_for("gcr.io", "x")
    inferred = RegistryConfig().with_overrides("my.registry", "app", credentials="env:X")
    assert inferred.endpoint_for("my.registry", "app").credentials == "env:X"
    assert inferred.endpoint_for("my.registry", "app").limit == 20.0
    hub = RegistryConfig().with_overrides("", "nginx", limit=1)
    assert hub.endpoint_for("", "nginx").limit == 1.0
    assert hub.default_endpoint.is_default


def test_config_rejects_conflicting_endpoints() -> None:
    one = RegistryEndpoint("a.io", "A", "https://a.io", is_default=True)
    two = RegistryEndpoint("b.io", "B", "https://b.io", is_default=True)
    with pytest.raises(ValueError, match="only one default registry"):
        RegistryConfig([one, two])
    with pytest.raises(ValueError, match=r"same prefix 'a\.io'"):
        RegistryConfig([one, RegistryEndpoint("a.io", "A2", "https://a.io")])
