"""The Helm chart, rendered and linted by Helm itself (with the chart's defaults and with every
value set), gives manifests whose references resolve and whose flags, environment and
registries.conf the controller accepts; values.schema.json rejects unknown keys."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import click
import pytest
from chart_helm import CHART, HelmError, lint_problems, load_values, render, render_texts, schema
from ruamel.yaml import YAML
from test_manifests import EXTERNAL, one, run_env, run_flags

from argocd_image_updater.cli.main import cli
from argocd_image_updater.config.notifications_file import parse_notifications
from argocd_image_updater.config.registries_conf import parse_registries_conf
from argocd_image_updater.config.settings import KNOWN_CONFIGMAP_KEYS, OPTIONS
from argocd_image_updater.webhook.registry import SECRET_ENV_VARS, SECRET_KEYS
from argocd_image_updater_testing.manifest_checks import flag_problems, reference_problems

pytestmark = pytest.mark.system  # the Helm chart rendered and linted by Helm

ROOT = Path(__file__).resolve().parents[2]
REFERENCE_CRD = (
    ROOT / "config" / "crd" / "bases" / "argocd-image-updater.argoproj.io_imageupdaters.yaml"
)
FULL_VALUES: dict[str, Any] = load_values(CHART / "ci" / "full-values.yaml")
# Objects named only in the full values file, which the user provides.
USER_PROVIDED = {
    ("Secret", "ghcr-creds"),
    ("Secret", "gpg-keys"),
    ("Secret", "argocd-image-updater-secret"),  # not created when empty, as the original
}


def deployment(objs: list[dict[str, Any]]) -> dict[str, Any]:
    [found] = [o for o in objs if o["kind"] == "Deployment"]
    return found


def container(objs: list[dict[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = deployment(objs)["spec"]["template"]["spec"]["containers"][0]
    return result


def configmap(objs: list[dict[str, Any]]) -> dict[str, str]:
    data: dict[str, str] = one(objs, "ConfigMap", "argocd-image-updater-config")["data"]
    return data


def valued_run_flags() -> set[str]:
    """Flags of run that need a value (the original chart's extraArgs give it separately); not
    the switches whose value may be left out (``--sharding`` = ``--sharding=true``)."""
    command = cli.get_command(click.Context(cli), "run")
    assert command is not None
    return {
        opt
        for param in command.params
        if isinstance(param, click.Option)
        and not param.is_flag
        and not getattr(param, "_flag_needs_value", False)
        for opt in param.opts
    }


VALUES = pytest.mark.parametrize("values", [None, FULL_VALUES], ids=["defaults", "full"])


@VALUES
def test_every_referenced_object_exists(values: dict[str, Any] | None) -> None:
    assert reference_problems(render(values), EXTERNAL | USER_PROVIDED) == []


@VALUES
def test_deployment_flags_are_flags_run_accepts(values: dict[str, Any] | None) -> None:
    assert flag_problems(render(values), run_flags(), valued=valued_run_flags()) == []


@VALUES
def test_helm_lint_strict_is_clean(values: dict[str, Any] | None) -> None:
    assert lint_problems(values) == []


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


def test_notifications_yaml_renders_from_config_notifications_and_parses() -> None:
    text = configmap(render(FULL_VALUES))["notifications.yaml"]
    parsed = parse_notifications(text, "notifications.yaml")
    assert parsed is not None
    assert (
        parsed.model_dump(by_alias=True, exclude_none=True)
        == FULL_VALUES["config"]["notifications"]
    )
    assert "notifications.yaml" not in configmap(render(None))


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


def test_secret_is_created_only_with_content_unless_asked() -> None:
    # As the original: no empty argocd-image-updater-secret that would clash with one you manage.
    assert not [o for o in render(None) if o["kind"] == "Secret"]
    empty = one(render({"secret": {"create": True}}), "Secret", "argocd-image-updater-secret")
    assert not empty.get("data")
    hook = render({"webhook": {"secrets": {"ghcr": "s3cret"}}})
    assert set(one(hook, "Secret", "argocd-image-updater-secret")["data"]) == {
        "webhook.ghcr-secret"
    }
    with pytest.raises(HelmError, match=r"secret.create is false.*webhook.ghcr-secret"):
        render({"secret": {"create": False}, "webhook": {"secrets": {"ghcr": "s3cret"}}})


def test_crd_is_rendered_from_its_one_source_and_can_be_left_out() -> None:
    reference = YAML(typ="safe").load(REFERENCE_CRD.read_text())
    crd = one(render(None), "CustomResourceDefinition", reference["metadata"]["name"])
    assert crd["spec"] == reference["spec"]
    assert crd["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep"
    off = render({"crds": {"install": False}})
    assert not [o for o in off if o["kind"] == "CustomResourceDefinition"]


CRD_READER_RULE = {
    "apiGroups": ["apiextensions.k8s.io"],
    "resources": ["customresourcedefinitions"],
    "resourceNames": ["imageupdaters.argocd-image-updater.argoproj.io"],
    "verbs": ["get"],
}


WATCHED = ("get", "list", "watch")


def rules_of(obj: dict[str, Any]) -> set[str]:
    return {r for rule in obj["rules"] for r in rule["resources"]}


def test_defaults_are_cluster_wide_like_the_original_and_namespaced_on_request() -> None:
    objs = render(None)
    kinds = {o["kind"] for o in objs}
    assert {"ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"} <= kinds
    assert "ServiceMonitor" not in kinds
    assert {"applications", "imageupdaters"} <= rules_of(
        one(objs, "ClusterRole", "argocd-image-updater")
    )
    assert CRD_READER_RULE in one(objs, "ClusterRole", "argocd-image-updater")["rules"]
    for role in (
        one(objs, "ClusterRole", "argocd-image-updater"),
        one(render({"rbac": {"clusterWide": False}}), "Role", "argocd-image-updater"),
    ):  # what the controller's watched copy of both kinds needs
        verbs = {(r, v) for rule in role["rules"] for r in rule["resources"] for v in rule["verbs"]}
        assert {(kind, v) for kind in ("applications", "imageupdaters") for v in WATCHED} <= verbs
    # Secrets stay readable in the release namespace only.
    assert rules_of(one(objs, "Role", "argocd-image-updater")) == {"secrets", "configmaps"}
    assert "--watch-namespaces=*" in container(objs)["args"]
    assert reference_problems(objs, EXTERNAL | USER_PROVIDED) == []
    objs = render(FULL_VALUES)
    binding = one(objs, "ClusterRoleBinding", "image-updater")
    assert binding["subjects"][0]["name"] == "image-updater-sa"
    # config.watchNamespaces is set, so the chart does not add --watch-namespaces=*.
    assert "--watch-namespaces=*" not in container(objs)["args"]
    for values in ({"rbac": {"clusterWide": False}}, {"createClusterRoles": False}):
        narrow = render(values)
        cluster = [o for o in narrow if o["kind"] in ("ClusterRole", "ClusterRoleBinding")]
        if "rbac" in values:  # cluster-scoped: only reading the ImageUpdater CRD
            assert {o["metadata"]["name"] for o in cluster} == {"argocd-image-updater-crd-reader"}
            reader = one(narrow, "ClusterRole", "argocd-image-updater-crd-reader")
            assert reader["rules"] == [CRD_READER_RULE]
        else:  # the original's key: no ClusterRole at all
            assert cluster == []
        assert "applications" in rules_of(one(narrow, "Role", "argocd-image-updater"))
        assert "--watch-namespaces=*" not in container(narrow)["args"]
    narrow = render({"rbac": {"clusterWide": False, "crdReader": False}})
    assert not {o["kind"] for o in narrow} & {"ClusterRole", "ClusterRoleBinding"}
    wide = render({"rbac": {"crdReader": False}})
    assert CRD_READER_RULE not in one(wide, "ClusterRole", "argocd-image-updater")["rules"]
    for values in ({"rbac": {"create": False}}, {"rbac": {"enabled": False}}):
        assert not {o["kind"] for o in render(values)} & {"Role", "ClusterRole", "RoleBinding"}


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
    assert d["spec"]["strategy"] == FULL_VALUES["updateStrategy"]
    assert pod["initContainers"] == FULL_VALUES["initContainers"]
    assert one(objs, "ConfigMap", "image-updater-notes")["data"] == {"owner": "platform"}
    crd = one(objs, "CustomResourceDefinition", "imageupdaters.argocd-image-updater.argoproj.io")
    assert crd["metadata"]["labels"] == {"team": "platform"}
    assert "argocd.argoproj.io/sync-options" in crd["metadata"]["annotations"]
    ingress = one(objs, "Ingress", "image-updater-ingress")
    assert [r.get("host") for r in ingress["spec"]["rules"]] == [
        "updater.example.com",
        "updater.internal.example.com",
    ]
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


POD_NAME_ENV = {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}


def budgets(objs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [o for o in objs if o["kind"] == "PodDisruptionBudget"]


def test_several_replicas_share_the_work_with_member_leases_and_a_disruption_budget() -> None:
    objs = render({"replicaCount": 3})
    c = container(objs)
    assert "--sharding" in c["args"]
    assert POD_NAME_ENV in c["env"]  # the member Lease argocd-image-updater-member-<pod>
    [budget] = budgets(objs)
    assert budget["apiVersion"] == "policy/v1"
    assert budget["spec"]["maxUnavailable"] == 1 and "minAvailable" not in budget["spec"]
    assert (
        budget["spec"]["selector"]["matchLabels"]
        == deployment(objs)["spec"]["selector"]["matchLabels"]
    )
    assert reference_problems(objs, EXTERNAL | USER_PROVIDED) == []  # the budget selects the pods
    assert flag_problems(objs, run_flags(), valued=valued_run_flags()) == []
    assert lint_problems({"replicaCount": 3}) == []
    for one_replica in (None, {"replicaCount": 1}):
        objs = render(one_replica)
        c = container(objs)
        assert not [a for a in c["args"] if a.startswith("--shard")]
        assert "POD_NAME" not in {item["name"] for item in c["env"]}
        assert budgets(objs) == []


def configmap_verbs_of_any_name(objs: list[dict[str, Any]]) -> set[str]:
    """The verbs the release namespace's Roles grant on ConfigMaps of any name (no
    resourceNames): those of a sharded fleet's state ConfigMaps, named after a hash."""
    return {
        verb
        for o in objs
        if o["kind"] == "Role"
        for rule in o["rules"]
        if "configmaps" in rule["resources"] and not rule.get("resourceNames")
        for verb in rule["verbs"]
    }


def test_a_sharded_release_may_create_update_and_delete_the_state_configmaps() -> None:
    state_verbs = {"get", "list", "watch", "create", "update", "delete"}
    for sharded in ({"replicaCount": 3}, {"sharding": {"enabled": True}}):
        assert state_verbs <= configmap_verbs_of_any_name(render(sharded)), sharded
    for unsharded in (None, {"replicaCount": 3, "sharding": {"enabled": False}}):
        # one record, argocd-image-updater-state: updated by name only
        assert "update" not in configmap_verbs_of_any_name(render(unsharded)), unsharded


def test_sharding_and_the_budget_can_be_forced_on_or_off() -> None:
    # An autoscaler or `kubectl scale` sets the replicas: sharding on whatever replicaCount says.
    forced = container(render({"sharding": {"enabled": True}}))
    assert "--sharding" in forced["args"] and POD_NAME_ENV in forced["env"]
    # The original's behaviour: one leader works, the others stand by.
    objs = render({"replicaCount": 3, "sharding": {"enabled": False}})
    assert "--sharding" not in container(objs)["args"]
    assert POD_NAME_ENV not in container(objs)["env"]
    assert len(budgets(objs)) == 1
    assert budgets(render({"replicaCount": 3, "pdb": {"enabled": False}})) == []
    assert len(budgets(render({"pdb": {"enabled": True}}))) == 1
    [budget] = budgets(render({"replicaCount": 4, "pdb": {"minAvailable": "50%"}}))
    assert budget["spec"] == {
        "minAvailable": "50%",
        "selector": budget["spec"]["selector"],
    }
    [budget] = budgets(render({"replicaCount": 4, "pdb": {"maxUnavailable": 0}}))
    assert budget["spec"]["maxUnavailable"] == 0
    both = {"replicaCount": 3, "pdb": {"minAvailable": 1, "maxUnavailable": 1}}
    with pytest.raises(HelmError, match=r"pdb.minAvailable and pdb.maxUnavailable"):
        render(both)
    for values, message in (
        ({"sharding": {"enabled": "yes"}}, r"/sharding/enabled"),
        ({"pdb": {"maxUnavailable": "half"}}, r"/pdb/maxUnavailable"),
    ):
        with pytest.raises(HelmError, match=message):
            render(values)


def test_a_static_shard_selector_reaches_the_flag() -> None:
    for selector in ("blue", "!"):
        args = container(render({"sharding": {"selector": selector}}))["args"]
        assert f"--shard-selector={selector}" in args
        assert "--sharding" not in args  # a static shard of one replica: its own leader
    args = container(render({"replicaCount": 2, "sharding": {"selector": "blue"}}))["args"]
    assert {"--sharding", "--shard-selector=blue"} <= set(args)


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
    assert c["resources"] == {
        "requests": {"cpu": "100m", "memory": "256Mi"},
        "limits": {"cpu": "1", "memory": "512Mi"},
    }


def test_resources_and_security_contexts_are_replaced_not_merged() -> None:
    requests_only = {"requests": {"cpu": "50m", "memory": "64Mi"}}
    objs = render({"resources": requests_only, "podSecurityContext": {}, "securityContext": {}})
    c = container(objs)
    assert c["resources"] == requests_only
    assert "securityContext" not in c
    assert "securityContext" not in deployment(objs)["spec"]["template"]["spec"]
    assert "resources" not in container(render({"resources": {}}))
    own = {"runAsNonRoot": True, "runAsUser": 2000}
    assert (
        deployment(render({"podSecurityContext": own}))["spec"]["template"]["spec"][
            "securityContext"
        ]
        == own
    )


def schema_node(path: list[str]) -> dict[str, Any] | None:
    """The schema of a value; a free-form map's (e.g. updateStrategy) for the keys inside it."""
    node: dict[str, Any] = schema()
    for part in path:
        if "properties" not in node and node.get("additionalProperties") is not False:
            return node
        props = node.get("properties", {})
        if part not in props:
            return None
        node = props[part]
    return node


def test_values_referenced_by_templates_are_in_the_schema() -> None:
    for template in (CHART / "templates").rglob("*"):
        if not template.is_file():
            continue
        for path in re.findall(r"\.Values((?:\.\w+)+)", template.read_text()):
            assert schema_node(path.strip(".").split(".")) is not None, f"{template.name}: {path}"


def test_the_schema_knows_every_value_and_rejects_unknown_keys() -> None:
    defaults = YAML(typ="safe").load((CHART / "values.yaml").read_text())

    def paths(node: Any, prefix: list[str]) -> list[list[str]]:
        if isinstance(node, dict) and node:
            return [p for key, value in node.items() for p in paths(value, [*prefix, key])]
        return [prefix]

    unknown = [p for p in paths(defaults, []) if schema_node(p) is None]
    assert not unknown
    for values, message in (
        ({"bogus": 1}, r"at '': additional properties 'bogus' not allowed"),
        ({"config": {"logLevl": "debug"}}, r"at '/config': additional properties 'logLevl'"),
        ({"metrics": {"service": {"prot": 1}}}, r"'/metrics/service'.*'prot' not allowed"),
        ({"config": {"log.level": "loud"}}, r"/config/log.level"),
        ({"webhook": {"secrets": "not-a-map"}}, r"/webhook/secrets"),
    ):
        with pytest.raises(HelmError, match=message):
            render(values)
        assert any(re.search(message, p) for p in lint_problems(values)), values


def test_the_schema_accepts_each_configmap_key_the_controller_reads() -> None:
    config = schema()["properties"]["config"]["properties"]
    assert {k for k in config if k in KNOWN_CONFIGMAP_KEYS} == set(KNOWN_CONFIGMAP_KEYS)
    extra = schema()["properties"]["config"]["properties"]["extra"]["propertyNames"]["enum"]
    assert set(extra) == set(KNOWN_CONFIGMAP_KEYS)


def test_full_values_set_every_value() -> None:
    defaults = YAML(typ="safe").load((CHART / "values.yaml").read_text())

    def missing(node: Any, given: Any, prefix: str) -> list[str]:
        if isinstance(node, dict) and node:
            if not isinstance(given, dict):
                return [prefix]
            return [m for k, v in node.items() for m in missing(v, given.get(k), f"{prefix}.{k}")]
        return (
            []
            if given is not None
            or prefix.endswith(("service.type", "service.port", "service.annotations"))
            or prefix == ".pdb.maxUnavailable"  # a budget takes it or minAvailable: not both
            else [prefix]
        )

    assert missing(defaults, FULL_VALUES, "") == []


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
    with pytest.raises(HelmError, match=r"templates/deployment.yaml.*image.repository"):
        render_texts({"image": {"repository": "quay.io/argoprojlabs/argocd-image-updater"}})
