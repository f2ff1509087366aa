"""registries.conf and the commit message template follow edits of their files, made the way
Kubernetes updates a ConfigMap mounted as a directory (an atomic ``..data`` symlink swap); an
invalid edit is reported and the last good content stays in use."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from argocd_image_updater.cli.run_setup import StartupError, load_commit_template, load_registries
from argocd_image_updater.config.reloading import ReloadingRegistryConfig, WatchedFile
from argocd_image_updater.model.image import ImageRef
from argocd_image_updater.plan.model import ImageChange
from argocd_image_updater.writeback.commit_template import CommitTemplateFile
from argocd_image_updater.writeback.messages import commit_message

CONF = "registries.conf"
TEMPLATE = "commit.template"


class ConfigMapDir:
    """A ConfigMap volume: <dir>/<key> → ..data/<key>, ..data → a timestamped directory."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.generation = 0
        root.mkdir()

    def publish(self, files: dict[str, str]) -> None:
        self.generation += 1
        data = self.root / f"..2024_01_01_00_00_{self.generation:02d}"
        data.mkdir()
        for key, text in files.items():
            (data / key).write_text(text)
            link = self.root / key
            if not link.is_symlink():
                link.symlink_to(Path("..data") / key)
        tmp = self.root / "..data_tmp"
        tmp.symlink_to(data.name)
        os.replace(tmp, self.root / "..data")
        for key in os.listdir(self.root):
            if not key.startswith(".") and key not in files:
                (self.root / key).unlink()

    def path(self, key: str) -> Path:
        return self.root / key


def registries(name: str, prefix: str = "registry.example.com") -> str:
    return f"registries:\n- name: {name}\n  prefix: {prefix}\n  api_url: https://{prefix}\n"


def endpoint_name(config: ReloadingRegistryConfig) -> str:
    return config.endpoint_for("registry.example.com", "team/app").name


def test_watched_file_reports_each_change_once(tmp_path: Path) -> None:
    volume = ConfigMapDir(tmp_path / "config")
    volume.publish({CONF: "a"})
    watch = WatchedFile(volume.path(CONF))
    assert not watch.changed()
    volume.publish({CONF: "a"})  # same content, new file: a change all the same
    assert watch.changed() and not watch.changed()
    volume.publish({})
    assert watch.changed() and not watch.changed()


def test_registries_conf_edits_apply_and_a_bad_edit_keeps_the_last_good_one(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    volume = ConfigMapDir(tmp_path / "config")
    volume.publish({CONF: registries("first")})
    config = load_registries(str(volume.path(CONF)))
    assert isinstance(config, ReloadingRegistryConfig)
    assert endpoint_name(config) == "first"

    volume.publish({CONF: registries("second")})
    assert endpoint_name(config) == "second"

    caplog.set_level(logging.ERROR)
    volume.publish({CONF: "registries:\n- name: broken\n  api_url: https://x\n  bogus: 1\n"})
    assert endpoint_name(config) == "second"
    [record] = [r for r in caplog.records if "cannot be used" in r.getMessage()]
    assert str(volume.path(CONF)) in record.getMessage()
    assert "bogus" in record.getMessage()
    caplog.clear()
    assert endpoint_name(config) == "second"  # reported once, not at every use
    assert not caplog.records

    volume.publish({CONF: registries("third")})
    assert endpoint_name(config) == "third"
    assert config.default_endpoint.prefix == "docker.io"
    assert {e.name for e in config.endpoints} == {"third", "Docker Hub"}

    volume.publish({})  # the key removed from the ConfigMap: the default registries
    assert endpoint_name(config) == "registry.example.com"  # inferred from the host


def test_registries_conf_that_appears_later_is_read(tmp_path: Path) -> None:
    volume = ConfigMapDir(tmp_path / "config")
    volume.publish({})
    config = ReloadingRegistryConfig(volume.path(CONF))
    assert endpoint_name(config) == "registry.example.com"
    volume.publish({CONF: registries("late")})
    assert endpoint_name(config) == "late"


def test_invalid_registries_conf_at_start_stops_the_start(tmp_path: Path) -> None:
    path = tmp_path / CONF
    path.write_text("registries: 3\n")
    with pytest.raises(StartupError, match=str(path)):
        load_registries(str(path))


CHANGE = ImageChange(
    alias="web",
    image=ImageRef.parse("nginx:1.0"),
    old_tag="1.0",
    new_tag="1.1",
    new_digest="",
    labels={},
    old_digest="",
)


def message(template: CommitTemplateFile) -> str:
    return commit_message(template, "guestbook", [CHANGE])


def test_commit_template_edits_apply_and_a_bad_edit_keeps_the_last_good_one(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    volume = ConfigMapDir(tmp_path / "config")
    volume.publish({})
    template = load_commit_template(str(volume.path(TEMPLATE)))
    assert isinstance(template, CommitTemplateFile)
    default = message(template)
    assert default.startswith("build: automatic update of guestbook")

    volume.publish({TEMPLATE: "chore: {{ .AppName }} now at {{ (index .AppChanges 0).NewTag }}"})
    assert message(template) == "chore: guestbook now at 1.1"

    caplog.set_level(logging.ERROR)
    volume.publish({TEMPLATE: "chore: {{ .AppName "})
    assert message(template) == "chore: guestbook now at 1.1"
    assert any(str(volume.path(TEMPLATE)) in r.getMessage() for r in caplog.records)

    volume.publish({TEMPLATE: "fix: {{ .AppName }}"})
    assert message(template) == "fix: guestbook"
    volume.publish({})
    assert message(template) == default


def test_invalid_commit_template_at_start_stops_the_start(tmp_path: Path) -> None:
    path = tmp_path / TEMPLATE
    path.write_text("{{ if }}")
    with pytest.raises(StartupError, match=str(path)):
        load_commit_template(str(path))
