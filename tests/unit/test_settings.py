from datetime import timedelta
from pathlib import Path

import pytest

from argocd_image_updater.config import settings_doc
from argocd_image_updater.config.settings import (
    OPTIONS,
    SettingsError,
    read_configmap_dir,
    resolve,
)

DOCS = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"


def test_defaults_match_the_original() -> None:
    s = resolve("run", {}, env={})
    assert s.interval == timedelta(minutes=2)
    assert s.max_concurrent_apps == 10
    assert s.max_concurrent_reconciles == 1
    assert s.health_probe_bind_address == ":8081"
    assert s.metrics_bind_address == "0"
    assert s.webhook_port == 8082
    assert s.webhook_require_secret is True
    assert s.git_commit_user == "argocd-image-updater"
    assert s.git_commit_email == "noreply@argoproj.io"
    assert s.tls_min_version == "1.3"
    assert s.applications_api == "kubernetes"
    assert not s.given("interval")


def test_precedence_flag_over_env_over_configmap() -> None:
    env = {"IMAGE_UPDATER_INTERVAL": "5m"}
    cm = {"interval": "7m", "log.level": "debug"}
    s = resolve("run", {"interval": timedelta(seconds=30)}, env=env, configmap=cm)
    assert s.interval == timedelta(seconds=30)
    assert s.sources["interval"] == "flag --interval"
    s = resolve("run", {}, env=env, configmap=cm)
    assert s.interval == timedelta(minutes=5)
    assert s.sources["interval"] == "environment variable IMAGE_UPDATER_INTERVAL"
    s = resolve("run", {}, env={}, configmap=cm)
    assert s.interval == timedelta(minutes=7)
    assert s.loglevel == "debug"


def test_kube_events_key_keeps_inverted_meaning() -> None:
    assert resolve("run", {}, env={}, configmap={"kube.events": "true"}).disable_kube_events is True


@pytest.mark.parametrize(
    ("env", "message"),
    [
        (
            {"MAX_CONCURRENT_APPS": "0"},
            "--max-concurrent-apps from environment variable MAX_CONCURRENT_APPS: 0 is out of range 1..100",
        ),
        ({"IMAGE_UPDATER_INTERVAL": "soon"}, "--interval"),
        ({"GIT_COMMIT_SIGN_OFF": "maybe"}, "'maybe' is not a boolean"),
        ({"APPLICATIONS_API": "grpc"}, "'grpc' is not one of kubernetes, argocd"),
        ({"TLS_MIN_VERSION": "1.0"}, "is not a TLS version"),
    ],
)
def test_invalid_values_are_startup_errors(env: dict[str, str], message: str) -> None:
    with pytest.raises(SettingsError, match="invalid value") as err:
        resolve("run", {}, env=env)
    assert message in str(err.value)


def test_configmap_dir_unknown_key(tmp_path: Path) -> None:
    (tmp_path / "interval").write_text("1m\n")
    (tmp_path / "registries.conf").write_text("registries: []\n")
    assert read_configmap_dir(tmp_path) == {"interval": "1m"}
    (tmp_path / "intervall").write_text("1m")
    with pytest.raises(SettingsError, match="unknown key 'intervall'"):
        read_configmap_dir(tmp_path)


def test_docs_list_every_setting() -> None:
    text = DOCS.read_text()
    assert settings_doc.render() in text, "docs/configuration.md is stale: regenerate the table"
    for option in OPTIONS:
        assert option.flag in text
