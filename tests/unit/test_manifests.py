"""The install manifest stays in step with the settings table (every ConfigMap key and webhook
secret is wired to its environment variable, as in the original's Deployment)."""

from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from argocd_image_updater.config.settings import OPTIONS
from argocd_image_updater.webhook.parsers import SECRET_ENV_VARS, SECRET_KEYS

MANIFEST = Path(__file__).resolve().parents[2] / "manifests" / "install.yaml"


def _objects() -> dict[str, Any]:
    return {doc["kind"]: doc for doc in YAML(typ="safe").load_all(MANIFEST.read_text())}


def _env() -> dict[str, dict[str, Any]]:
    container = _objects()["Deployment"]["spec"]["template"]["spec"]["containers"][0]
    return {item["name"]: item.get("valueFrom", {}) for item in container["env"]}


def test_every_configmap_key_is_mapped_to_its_environment_variable() -> None:
    env = _env()
    for option in OPTIONS:
        if option.configmap and option.env:
            ref = env[option.env[0]]["configMapKeyRef"]
            assert ref == {
                "name": "argocd-image-updater-config",
                "key": option.configmap,
                "optional": True,
            }, option.flag


def test_every_webhook_secret_and_the_argocd_token_come_from_the_secret() -> None:
    env = _env()
    for type_name, variable in SECRET_ENV_VARS.items():
        ref = env[variable]["secretKeyRef"]
        assert ref["name"] == "argocd-image-updater-secret"
        assert ref["key"] == SECRET_KEYS[type_name]
    assert env["ARGOCD_TOKEN"]["secretKeyRef"]["key"] == "argocd.token"


def test_role_allows_what_the_controller_does() -> None:
    rules = _objects()["Role"]["rules"]
    granted = {(r, v) for rule in rules for r in rule["resources"] for v in rule["verbs"]}
    for needed in [
        ("applications", "list"),
        ("applications", "patch"),
        ("imageupdaters", "watch"),
        ("imageupdaters/status", "patch"),
        ("events", "create"),
        ("secrets", "get"),
        ("secrets", "list"),
        ("configmaps", "get"),
        ("leases", "update"),
    ]:
        assert needed in granted, needed
