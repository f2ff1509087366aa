"""The install manifests (config/ and its rendering manifests/install.yaml) stay in step with the
settings table, the CRD of the original project and the controller's endpoints."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import click
import pytest
from ruamel.yaml import YAML

from argocd_image_updater.cli.main import cli
from argocd_image_updater.config.settings import OPTIONS
from argocd_image_updater.webhook.registry import SECRET_ENV_VARS, SECRET_KEYS
from argocd_image_updater_testing.manifest_checks import (
    flag_problems,
    objects_of,
    reference_problems,
)

pytestmark = pytest.mark.system  # the manifests rendered by kubectl kustomize

ROOT = Path(__file__).resolve().parents[2]
MANIFEST = ROOT / "manifests" / "install.yaml"
CONFIG = ROOT / "config"
REFERENCE_CRD = (
    ROOT / "config" / "crd" / "bases" / "argocd-image-updater.argoproj.io_imageupdaters.yaml"
)
# Objects the cluster or the user provides; the manifests only refer to them as optional.
EXTERNAL = {
    ("ConfigMap", "argocd-ssh-known-hosts-cm"),
    ("Secret", "argocd-image-updater-tls"),
    ("Secret", "ssh-git-creds"),
}
# Environment variables `run` reads besides the settings table (docs/install.md; POD_NAME:
# the member Lease of --sharding, docs/controller.md).
STANDARD_ENV = {"POD_NAMESPACE", "POD_NAME", "GNUPGHOME", "HTTPS_PROXY", "HTTP_PROXY", "NO_PROXY"}
KUBECTL = shutil.which("kubectl")


def objects() -> list[dict[str, Any]]:
    return objects_of([MANIFEST.read_text()])


def one(objs: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    found = [o for o in objs if o["kind"] == kind and o["metadata"]["name"] == name]
    assert len(found) == 1, (kind, name, len(found))
    return found[0]


def container(objs: list[dict[str, Any]]) -> dict[str, Any]:
    deployment = one(objs, "Deployment", "argocd-image-updater")
    result: dict[str, Any] = deployment["spec"]["template"]["spec"]["containers"][0]
    return result


def env_of(objs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {item["name"]: item for item in container(objs)["env"]}


def run_flags() -> set[str]:
    command = cli.get_command(click.Context(cli), "run")
    assert command is not None
    return {opt for param in command.params for opt in param.opts if opt.startswith("--")}


def run_env() -> set[str]:
    names = {var for option in OPTIONS if "run" in option.commands for var in option.env}
    return names | set(SECRET_ENV_VARS.values()) | {"ARGOCD_TOKEN"} | STANDARD_ENV


def test_every_configmap_key_is_mapped_to_its_environment_variable() -> None:
    env = env_of(objects())
    for option in OPTIONS:
        if option.configmap and option.env:
            ref = env[option.env[0]]["valueFrom"]["configMapKeyRef"]
            assert ref == {
                "name": "argocd-image-updater-config",
                "key": option.configmap,
                "optional": True,
            }, option.flag


def test_every_webhook_secret_and_the_argocd_token_come_from_the_secret() -> None:
    env = env_of(objects())
    for type_name, variable in SECRET_ENV_VARS.items():
        ref = env[variable]["valueFrom"]["secretKeyRef"]
        assert ref == {
            "name": "argocd-image-updater-secret",
            "key": SECRET_KEYS[type_name],
            "optional": True,
        }
    assert env["ARGOCD_TOKEN"]["valueFrom"]["secretKeyRef"]["key"] == "argocd.token"


def test_deployment_flags_and_environment_are_what_run_accepts() -> None:
    objs = objects()
    assert flag_problems(objs, run_flags()) == []
    assert set(env_of(objs)) <= run_env()
    assert "--metrics-bind-address=:8443" in container(objs)["args"]


def test_every_referenced_object_exists() -> None:
    assert reference_problems(objects(), EXTERNAL) == []


def test_reference_check_reports_a_missing_object() -> None:
    objs = [o for o in objects() if o["kind"] != "ServiceAccount"]
    assert reference_problems(objs, EXTERNAL) == [
        "Deployment/argocd-image-updater: ServiceAccount 'argocd-image-updater' does not exist",
        "RoleBinding/argocd-image-updater: ServiceAccount 'argocd-image-updater' does not exist",
        "RoleBinding/argocd-image-updater-leader-election: ServiceAccount 'argocd-image-updater' does not exist",
        "ClusterRoleBinding/argocd-image-updater-crd-reader: ServiceAccount "
        "'argocd-image-updater' does not exist",
    ]


def test_probes_serve_the_controller_health_endpoints() -> None:
    c = container(objects())
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    assert c["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert c["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert ports["health"] == 8081 and "--health-probe-bind-address=:8081" in c["args"]
    assert ports["metrics"] == 8443 and ports["webhook"] == 8082


def test_pod_runs_unprivileged_on_a_read_only_root_filesystem() -> None:
    objs = objects()
    pod = one(objs, "Deployment", "argocd-image-updater")["spec"]["template"]["spec"]
    c = container(objs)
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] == 1000
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert c["securityContext"]["readOnlyRootFilesystem"] is True
    assert c["securityContext"]["allowPrivilegeEscalation"] is False
    assert c["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert set(c["resources"]) == {"requests", "limits"}
    mounts = {m["mountPath"]: m["name"] for m in c["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert "emptyDir" in volumes[mounts["/tmp"]]
    assert env_of(objs)["GIT_CACHE_DIR"]["value"].startswith("/tmp/")
    assert mounts["/app/.ssh"] == "ssh-config"
    assert volumes["ssh-config"]["configMap"]["name"] == "argocd-image-updater-ssh-config"


def test_role_allows_what_the_controller_does() -> None:
    objs = objects()
    rules = [rule for o in objs if o["kind"] == "Role" for rule in o["rules"]]
    granted = {(r, v) for rule in rules for r in rule["resources"] for v in rule["verbs"]}
    for needed in [
        ("applications", "list"),
        ("applications", "watch"),  # the watched copy the cycles read
        ("applications", "patch"),
        ("imageupdaters", "list"),
        ("imageupdaters", "watch"),
        ("imageupdaters/status", "patch"),
        ("events", "create"),
        ("secrets", "get"),
        ("secrets", "list"),
        ("configmaps", "get"),
        ("leases", "update"),
    ]:
        assert needed in granted, needed
    cluster = [o for o in objs if o["kind"] in ("ClusterRole", "ClusterRoleBinding")]
    assert {o["metadata"]["name"] for o in cluster} == {"argocd-image-updater-crd-reader"}
    [reader] = [o for o in cluster if o["kind"] == "ClusterRole"]
    assert reader["rules"] == [  # the one cluster-wide permission: reading the ImageUpdater CRD
        {
            "apiGroups": ["apiextensions.k8s.io"],
            "resources": ["customresourcedefinitions"],
            "resourceNames": ["imageupdaters.argocd-image-updater.argoproj.io"],
            "verbs": ["get"],
        }
    ]


def test_install_yaml_holds_the_crd_of_its_one_source() -> None:
    reference = YAML(typ="safe").load(REFERENCE_CRD.read_text())
    crd = one(
        objects(), "CustomResourceDefinition", "imageupdaters.argocd-image-updater.argoproj.io"
    )
    assert crd["spec"] == reference["spec"]


def test_default_install_is_namespaced_in_argocd() -> None:
    cluster_scoped = {"CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding"}
    for obj in objects():
        if obj["kind"] not in cluster_scoped:
            assert obj["metadata"]["namespace"] == "argocd", obj["metadata"]["name"]


def test_manifest_header_says_how_it_is_generated() -> None:
    header = MANIFEST.read_text().split("\napiVersion:", 1)[0]
    assert "kubectl kustomize config/default" in header
    assert all(line.startswith("#") for line in header.splitlines())


# --- the kustomize tree -----------------------------------------------------------------------


def kustomizations() -> list[Path]:
    return sorted(CONFIG.rglob("kustomization.yaml"))


def test_kustomizations_reference_files_that_exist() -> None:
    dirs = {file.parent.relative_to(CONFIG).as_posix() for file in kustomizations()}
    assert dirs == {
        "crd",
        "rbac",
        "manager",
        "network-policy",
        "prometheus",
        "default",
        "overlays/cluster-wide",
        "overlays/sharded",
    }
    for file in kustomizations():
        doc = YAML(typ="safe").load(file.read_text())
        entries = [*doc.get("resources", []), *doc.get("components", [])]
        entries += [p["path"] for p in doc.get("patches", []) if "path" in p]
        assert entries, file
        for entry in entries:
            target = (file.parent / entry).resolve()
            assert target.exists(), f"{file}: {entry} does not exist"
            if target.is_dir():
                assert (target / "kustomization.yaml").is_file(), f"{file}: {entry}"


def test_every_manifest_in_config_is_used_by_a_kustomization() -> None:
    used = set()
    for file in kustomizations():
        doc = YAML(typ="safe").load(file.read_text())
        used |= {(file.parent / e).resolve() for e in doc.get("resources", [])}
    for manifest in CONFIG.rglob("*.yaml"):
        if manifest.name != "kustomization.yaml":
            assert manifest.resolve() in used, manifest


def kustomize(path: Path) -> list[dict[str, Any]]:
    assert KUBECTL is not None
    result = subprocess.run(
        [KUBECTL, "kustomize", str(path)], capture_output=True, text=True, timeout=60, check=True
    )
    return objects_of([result.stdout])


needs_kubectl = pytest.mark.skipif(
    KUBECTL is None, reason="kubectl (with built-in kustomize) is not on PATH"
)


@needs_kubectl
def test_install_yaml_is_the_rendering_of_config_default() -> None:
    assert kustomize(CONFIG / "default") == objects(), (
        "manifests/install.yaml is stale: regenerate it from `kubectl kustomize config/default`"
    )


@needs_kubectl
def test_cluster_wide_overlay_watches_every_namespace_with_a_cluster_role() -> None:
    objs = kustomize(CONFIG / "overlays" / "cluster-wide")
    assert "--watch-namespaces=*" in container(objs)["args"]
    assert flag_problems(objs, run_flags()) == []
    assert reference_problems(objs, EXTERNAL) == []
    role = one(objs, "ClusterRole", "argocd-image-updater")
    granted = {(r, v) for rule in role["rules"] for r in rule["resources"] for v in rule["verbs"]}
    assert {
        ("applications", "list"),
        ("applications", "watch"),
        ("applications", "patch"),
        ("imageupdaters", "watch"),
    } <= granted
    binding = one(objs, "ClusterRoleBinding", "argocd-image-updater")
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "argocd-image-updater", "namespace": "argocd"}
    ]


@needs_kubectl
def test_sharded_overlay_runs_three_replicas_sharing_the_work() -> None:
    objs = kustomize(CONFIG / "overlays" / "sharded")
    assert one(objs, "Deployment", "argocd-image-updater")["spec"]["replicas"] == 3
    c = container(objs)
    assert "--sharding" in c["args"]
    assert env_of(objs)["POD_NAME"]["valueFrom"] == {"fieldRef": {"fieldPath": "metadata.name"}}
    budget = one(objs, "PodDisruptionBudget", "argocd-image-updater")
    assert budget["metadata"]["namespace"] == "argocd"
    assert budget["spec"]["maxUnavailable"] == 1
    assert flag_problems(objs, run_flags()) == []
    assert set(env_of(objs)) <= run_env()
    assert reference_problems(objs, EXTERNAL) == []  # the budget selects the pods
    rules = [rule for o in objs if o["kind"] == "Role" for rule in o["rules"]]
    granted = {v for rule in rules if "leases" in rule["resources"] for v in rule["verbs"]}
    assert {"get", "list", "create", "update", "delete"} <= granted  # member Leases
    # The state ConfigMaps of each ImageUpdater and repository are named after a hash.
    any_name = {
        v
        for rule in rules
        if "configmaps" in rule["resources"] and not rule.get("resourceNames")
        for v in rule["verbs"]
    }
    assert {"get", "list", "watch", "create", "update", "delete"} <= any_name
    default_rules = [rule for o in objects() if o["kind"] == "Role" for rule in o["rules"]]
    assert not [
        rule
        for rule in default_rules
        if "configmaps" in rule["resources"]
        and "update" in rule["verbs"]
        and not rule.get("resourceNames")
    ]  # one replica updates its one record by name
    # The default install stays one replica that elects itself leader.
    assert "--sharding" not in container(objects())["args"]
    assert "POD_NAME" not in env_of(objects())


@needs_kubectl
def test_prometheus_component_adds_a_service_monitor_for_the_metrics_service(
    tmp_path: Path,
) -> None:
    config = os.path.relpath(CONFIG, tmp_path)  # kustomize refuses absolute paths
    (tmp_path / "kustomization.yaml").write_text(
        f"namespace: argocd\nresources:\n  - {config}/default\n"
        f"components:\n  - {config}/prometheus\n"
    )
    objs = kustomize(tmp_path)
    monitor = one(objs, "ServiceMonitor", "argocd-image-updater-metrics")
    assert monitor["metadata"]["namespace"] == "argocd"
    assert reference_problems(objs, EXTERNAL) == []
