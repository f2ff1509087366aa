"""The Helm chart renders (with the chart's defaults and with every value set) into manifests
whose references resolve and whose flags, environment and registries.conf the controller accepts."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML
from test_manifests import EXTERNAL, one, run_env, run_flags

from argocd_image_updater.config.registries import parse_registries_conf
from argocd_image_updater.config.settings import KNOWN_CONFIGMAP_KEYS, OPTIONS
from argocd_image_updater.sandbox.helm import (
    flag_problems,
    objects_of,
    reference_problems,
    render_chart,
)
from argocd_image_updater.webhook.parsers import SECRET_ENV_VARS, SECRET_KEYS
from argocd_image_updater.writeback.gotemplate import TemplateError

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "argocd-image-updater"
REFERENCE_CRD = ROOT / "src" / "argocd_image_updater" / "sandbox" / "crds" / "imageupdater-crd.yaml"
FULL_VALUES: dict[str, Any] = YAML(typ="safe").load((CHART / "ci" / "full-values.yaml").read_text())
# Objects named only in the full values file, which the user provides.
USER_PROVIDED = {("Secret", "ghcr-creds"), ("Secret", "gpg-keys")}


def render(values: dict[str, Any] | None) -> list[dict[str, Any]]:
    return objects_of(render_chart(CHART, values).values())


def deployment(objs: list[dict[str, Any]]) -> dict[str, Any]:
    [found] = [o for o in objs if o["kind"] == "Deployment"]
    return found


def container(objs: list[dict[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = deployment(objs)["spec"]["template"]["spec"]["containers"][0]
    return result


def configmap(objs: list[dict[str, Any]]) -> dict[str, str]:
    data: dict[str, str] = one(objs, "ConfigMap", "argocd-image-updater-config")["data"]
    return data


VALUES = pytest.mark.parametrize("values", [None, FULL_VALUES], ids=["defaults", "full"])


@VALUES
def test_every_referenced_object_exists(values: dict[str, Any] | None) -> None:
    assert reference_problems(render(values), EXTERNAL | USER_PROVIDED) == []


@VALUES
def test_deployment_flags_are_flags_run_accepts(values: dict[str, Any] | None) -> None:
    assert flag_problems(render(values), run_flags()) == []


@VALUES
def test_deployment_environment_is_what_run_reads(values: dict[str, Any] | None) -> None:
    objs = render(values)
    env = {item["name"] for item in container(objs)["env"]}
    registries = configmap(objs).get("registries.conf", "registries: []")
    credential_env = set(re.findall(r"credentials: env:(\w+)", registries))
    assert env - run_env() - credential_env == set()


@VALUES
def test_every_configmap_key_and_secret_is_wired_like_the_original(
    values: dict[str, Any] | None,
) -> None:
    env = {item["name"]: item.get("valueFrom", {}) for item in container(render(values))["env"]}
    for option in OPTIONS:
        if option.configmap and option.env:
            assert env[option.env[0]]["configMapKeyRef"] == {
                "name": "argocd-image-updater-config",
                "key": option.configmap,
                "optional": True,
            }, option.flag
    for type_name, variable in SECRET_ENV_VARS.items():
        assert env[variable]["secretKeyRef"]["name"] == "argocd-image-updater-secret"
        assert env[variable]["secretKeyRef"]["key"] == SECRET_KEYS[type_name]
    assert env["ARGOCD_TOKEN"]["secretKeyRef"]["key"] == "argocd.token"


def test_full_values_set_every_configmap_key_with_a_value_run_accepts() -> None:
    data = configmap(render(FULL_VALUES))
    assert set(data) == set(KNOWN_CONFIGMAP_KEYS)
    for option in OPTIONS:
        if option.configmap:
            option.parse(data[option.configmap])  # raises for a value run would reject
    assert data["kube.events"] == "true" and data["log.level"] == "debug"
    assert data["git.commit-message-template"].startswith(
        "build: automatic update of {{ .AppName }}"
    )


def test_registries_conf_renders_from_config_registries_and_parses() -> None:
    text = configmap(render(FULL_VALUES))["registries.conf"]
    config = parse_registries_conf(text, "registries.conf", tls_dir="/nonexistent")
    parsed = YAML(typ="safe").load(text)["registries"]
    assert [r["name"] for r in parsed] == [r["name"] for r in FULL_VALUES["config"]["registries"]]
    assert parsed == FULL_VALUES["config"]["registries"]
    assert config is not None
    assert "registries.conf" not in configmap(render(None))


def test_ext_credential_scripts_are_mounted_from_the_auth_scripts_configmap() -> None:
    objs = render(FULL_VALUES)
    scripts = one(objs, "ConfigMap", "argocd-image-updater-authscripts")["data"]
    pod = deployment(objs)["spec"]["template"]["spec"]
    mounts = {m["mountPath"]: m["name"] for m in container(objs)["volumeMounts"]}
    volume = {v["name"]: v for v in pod["volumes"]}[mounts["/scripts"]]
    assert volume["configMap"]["name"] == "argocd-image-updater-authscripts"
    for path in re.findall(r"credentials: ext:(\S+)", configmap(objs)["registries.conf"]):
        assert path.startswith("/scripts/") and path.removeprefix("/scripts/") in scripts
    assert not [o for o in render(None) if o["metadata"]["name"].endswith("authscripts")]


def test_secret_holds_the_token_and_every_webhook_secret() -> None:
    import base64

    data = one(render(FULL_VALUES), "Secret", "argocd-image-updater-secret")["data"]
    assert base64.b64decode(data["argocd.token"]).decode() == "an-argocd-token"
    assert set(data) == {"argocd.token", *SECRET_KEYS.values()}
    assert not one(render(None), "Secret", "argocd-image-updater-secret").get("data")


def test_crd_is_the_reference_copy_and_can_be_left_out() -> None:
    reference = YAML(typ="safe").load(REFERENCE_CRD.read_text())
    crd = one(render(None), "CustomResourceDefinition", reference["metadata"]["name"])
    assert crd["spec"] == reference["spec"]
    assert crd["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep"
    off = render({"crds": {"install": False}})
    assert not [o for o in off if o["kind"] == "CustomResourceDefinition"]


def test_defaults_are_namespaced_and_cluster_wide_adds_cluster_roles() -> None:
    kinds = {o["kind"] for o in render(None)}
    assert {"Role", "RoleBinding", "ServiceAccount", "Deployment", "Service"} <= kinds
    assert not kinds & {"ClusterRole", "ClusterRoleBinding", "ServiceMonitor"}
    objs = render(FULL_VALUES)
    binding = one(objs, "ClusterRoleBinding", "image-updater")
    assert binding["subjects"][0]["name"] == "image-updater-sa"
    # config.watchNamespaces is set, so the chart does not add --watch-namespaces=*.
    assert "--watch-namespaces=*" not in container(objs)["args"]
    wide = render({"rbac": {"clusterWide": True}})
    assert "--watch-namespaces=*" in container(wide)["args"]
    assert reference_problems(wide, EXTERNAL) == []


def test_metrics_service_monitor_and_network_policies() -> None:
    objs = render(FULL_VALUES)
    monitor = one(objs, "ServiceMonitor", "image-updater-metrics")
    assert monitor["metadata"]["namespace"] == "monitoring"
    assert monitor["metadata"]["labels"]["release"] == "prometheus"
    assert "--metrics-bind-address=:8443" in container(objs)["args"]
    policies = {o["metadata"]["name"] for o in objs if o["kind"] == "NetworkPolicy"}
    assert policies == {
        "image-updater-allow-webhook-traffic",
        "image-updater-allow-metrics-traffic",
    }
    assert not [a for a in container(render(None))["args"] if a.startswith("--metrics")]


def test_full_values_reach_the_pod() -> None:
    objs = render(FULL_VALUES)
    d = deployment(objs)
    pod = d["spec"]["template"]["spec"]
    c = container(objs)
    assert d["spec"]["replicas"] == 2
    assert c["image"] == "registry.example.com/platform/argocd-image-updater:0.1.0-rc1"
    assert c["imagePullPolicy"] == "Always"
    assert c["args"][-4:] == FULL_VALUES["extraArgs"]
    assert pod["nodeSelector"] == FULL_VALUES["nodeSelector"]
    assert pod["tolerations"] == FULL_VALUES["tolerations"]
    assert pod["affinity"] == FULL_VALUES["affinity"]
    assert pod["priorityClassName"] == "system-cluster-critical"
    assert pod["imagePullSecrets"] == [{"name": "registry-pull"}]
    assert c["resources"] == FULL_VALUES["resources"]
    assert d["spec"]["template"]["metadata"]["annotations"]["example.com/owner"] == "platform"
    assert d["spec"]["template"]["metadata"]["labels"]["team"] == "platform"
    assert c["envFrom"] == FULL_VALUES["extraEnvFrom"]
    assert {"name": "gpg", "mountPath": "/app/config/gpg"} in c["volumeMounts"]
    sa = one(objs, "ServiceAccount", "image-updater-sa")
    assert sa["metadata"]["annotations"] == FULL_VALUES["serviceAccount"]["annotations"]
    ssh = one(objs, "ConfigMap", "argocd-image-updater-ssh-config")["data"]["config"]
    assert ssh == FULL_VALUES["config"]["sshConfig"]["config"]
    webhook = one(objs, "Service", "argocd-image-updater-service")
    assert webhook["spec"]["type"] == "NodePort"


def test_default_pod_is_unprivileged_with_probes_on_the_health_port() -> None:
    objs = render(None)
    pod = deployment(objs)["spec"]["template"]["spec"]
    c = container(objs)
    assert pod["securityContext"]["runAsUser"] == 1000 and pod["securityContext"]["runAsNonRoot"]
    assert c["securityContext"]["readOnlyRootFilesystem"] is True
    assert c["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert c["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "health"}
    assert c["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "health"}
    assert c["image"] == "argocd-image-updater:0.1.0"


def test_values_referenced_by_templates_exist_in_values_yaml() -> None:
    # Helm stops with "nil pointer evaluating interface {}" on .Values.a.b when a is missing.
    defaults = YAML(typ="safe").load((CHART / "values.yaml").read_text())
    for template in (CHART / "templates").rglob("*"):
        if not template.is_file():
            continue
        for path in re.findall(r"\.Values((?:\.\w+)+)", template.read_text()):
            node: Any = defaults
            parts = path.strip(".").split(".")
            for part in parts[:-1]:
                assert isinstance(node, dict) and part in node, f"{template.name}: .Values{path}"
                node = node[part]
            assert parts[-1] in node, f"{template.name}: .Values{path}"


def test_readme_lists_every_value() -> None:
    defaults = YAML(typ="safe").load((CHART / "values.yaml").read_text())
    readme = (CHART / "README.md").read_text()

    def leaves(node: Any, prefix: str) -> list[str]:
        if isinstance(node, dict) and node:
            return [
                leaf for key, value in node.items() for leaf in leaves(value, f"{prefix}{key}.")
            ]
        return [prefix.rstrip(".")]

    missing = [leaf for leaf in leaves(defaults, "") if f"`{leaf}`" not in readme]
    assert missing == []


def test_a_template_error_names_the_file() -> None:
    with pytest.raises(TemplateError, match=r"templates/secret.yaml.*can't evaluate field docker"):
        render_chart(CHART, {"webhook": {"secrets": "not-a-map"}})
