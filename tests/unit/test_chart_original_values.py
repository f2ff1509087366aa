"""Values files written for the original charts (argo-helm argocd-image-updater 0.14 and 1.0.4,
kept in chart_values/) render with this chart, rendered and linted by Helm itself, so that every
setting they make takes effect; the one that cannot apply (the original's image) fails naming it."""

from __future__ import annotations

import base64
import copy
from typing import Any

import pytest
from chart_helm import VALUES_DIR, HelmError, lint_problems, load_values, render
from test_helm_chart import USER_PROVIDED, configmap, container, deployment, valued_run_flags
from test_manifests import EXTERNAL, one, run_flags

from argocd_image_updater.config.registries_conf import parse_registries_conf
from argocd_image_updater.config.settings import OPTIONS
from argocd_image_updater_testing.manifest_checks import flag_problems, reference_problems

pytestmark = pytest.mark.system  # the Helm chart rendered and linted by Helm

# What the values files refer to and their users provide.
USER_OBJECTS = {
    ("Secret", "gpg-keys"),
    ("Secret", "image-updater-extra-env"),
    ("ConfigMap", "proxy-settings"),
}
OUR_IMAGE = {"repository": "registry.example.com/platform/argocd-image-updater", "tag": "0.1.0"}


def original(name: str) -> dict[str, Any]:
    return load_values(VALUES_DIR / name)


def with_our_image(values: dict[str, Any]) -> dict[str, Any]:
    """What a user adds on the command line (--set image.repository=... --set image.tag=...)."""
    values = copy.deepcopy(values)
    values["image"].update(OUR_IMAGE)
    return values


FILES = pytest.mark.parametrize("name", ["original-0.14.yaml", "original-1.0.4.yaml"])


@FILES
def test_the_original_image_fails_naming_image_repository(name: str) -> None:
    with pytest.raises(HelmError, match=r"image.repository: quay.io/argoprojlabs/argocd-image-"):
        render(original(name))


@FILES
def test_renders_consistently_and_lints_strict(name: str) -> None:
    values = with_our_image(original(name))
    objs = render(values)
    assert reference_problems(objs, EXTERNAL | USER_PROVIDED | USER_OBJECTS) == []
    assert flag_problems(objs, run_flags(), valued=valued_run_flags()) == []
    assert lint_problems(values) == []
    data = configmap_of(objs, values)
    for option in OPTIONS:
        if option.configmap and option.configmap in data:
            option.parse(data[option.configmap])  # raises for a value run would reject
    assert container(objs)["image"] == "registry.example.com/platform/argocd-image-updater:0.1.0"


def configmap_of(objs: list[dict[str, Any]], values: dict[str, Any]) -> dict[str, str]:
    found = [
        o
        for o in objs
        if o["kind"] == "ConfigMap" and o["metadata"]["name"] == "argocd-image-updater-config"
    ]
    assert len(found) == 1
    data: dict[str, str] = found[0]["data"]
    return data


def env_refs(objs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {e["name"]: e.get("valueFrom", {}) for e in container(objs)["env"]}


def volume(objs: list[dict[str, Any]], mount_path: str) -> dict[str, Any]:
    pod = deployment(objs)["spec"]["template"]["spec"]
    name = {m["mountPath"]: m["name"] for m in container(objs)["volumeMounts"]}[mount_path]
    found: dict[str, Any] = {v["name"]: v for v in pod["volumes"]}[name]
    return found


def test_every_setting_of_the_0_14_file_takes_effect() -> None:
    values = original("original-0.14.yaml")
    objs = render(with_our_image(values))
    d = deployment(objs)
    pod = d["spec"]["template"]["spec"]
    c = container(objs)
    ns = "argocd-system"  # namespaceOverride

    # names, namespace, replicas, strategy, pull settings
    assert d["metadata"]["name"] == "image-updater" and d["metadata"]["namespace"] == ns
    assert d["metadata"]["labels"]["app.kubernetes.io/name"] == "updater"
    assert d["spec"]["replicas"] == 1
    assert d["spec"]["strategy"] == values["updateStrategy"]
    assert c["imagePullPolicy"] == "Always"
    assert pod["imagePullSecrets"] == [{"name": "registry-pull"}]
    namespaced = [o for o in objs if o["kind"] not in ("ClusterRole", "ClusterRoleBinding")]
    namespaced = [o for o in namespaced if o["kind"] != "CustomResourceDefinition"]
    assert {o["metadata"].get("namespace") for o in namespaced} - {"monitoring"} == {ns}

    # createClusterRoles: true and rbac.enabled: true
    assert one(objs, "ClusterRoleBinding", "image-updater")["subjects"][0] == {
        "kind": "ServiceAccount",
        "name": "image-updater-sa",
        "namespace": ns,
    }
    assert "--watch-namespaces=*" in c["args"]

    # extraArgs (flag and value as separate entries), extraEnv, extraEnvFrom
    assert c["args"][-6:] == [
        "--interval",
        "5m",
        "--max-concurrency",
        "5",
        "--match-application-name",
        "staging-*",
    ]
    assert {"name": "AWS_REGION", "value": "eu-west-1"} in c["env"]
    assert c["envFrom"] == values["extraEnvFrom"]

    # extraObjects (templated), initContainers, priorityClassName, volumes, volumeMounts
    assert one(objs, "ConfigMap", "image-updater-notes")["data"] == {"owner": "platform"}
    assert pod["initContainers"] == values["initContainers"]
    assert pod["priorityClassName"] == "system-cluster-critical"
    assert values["volumes"][0] in pod["volumes"]
    assert values["volumeMounts"][0] in c["volumeMounts"]

    # config: applicationsAPIKind and the argocd block, events, git, log level, registries
    data = configmap_of(objs, values)
    assert data["applications_api"] == "argocd"
    assert data["argocd.grpc_web"] == "false"
    assert data["argocd.server_addr"] == "argocd-server.argocd-system"
    assert data["argocd.insecure"] == "true" and data["argocd.plaintext"] == "true"
    assert data["kube.events"] == "true"  # disableKubeEvents: true → events off
    assert data["git.user"] == "image-bot" and data["git.email"] == "image-bot@example.com"
    assert data["git.commit-message-template"] == values["config"]["gitCommitTemplate"]
    assert data["git.commit-signing-key"] == "/app/ssh-keys/id_rsa"
    assert data["git.commit-sign-off"] == "true"
    assert data["git.commit-signing-method"] == "ssh"
    assert data["log.level"] == "debug"
    conf = parse_registries_conf(data["registries.conf"], tls_dir="/nonexistent")
    assert {e.name for e in conf.endpoints} >= {"Docker Hub", "ECR"}
    assert conf.endpoint_for("123456789.dkr.ecr.eu-west-1.amazonaws.com", "app").credentials == (
        "ext:/scripts/auth1.sh"
    )

    # the token goes into tokenSecretName, which ARGOCD_TOKEN reads
    token = one(objs, "Secret", "image-updater-argocd-token")["data"]["argocd.token"]
    assert base64.b64decode(token).decode() == "an-argocd-token"
    assert env_refs(objs)["ARGOCD_TOKEN"]["secretKeyRef"]["name"] == "image-updater-argocd-token"
    assert not [o for o in objs if o["metadata"]["name"] == "argocd-image-updater-secret"]

    # registries.conf and commit.template from the ConfigMap directory (edits apply live)
    config_volume = volume(objs, "/app/config")["configMap"]
    assert config_volume["name"] == "argocd-image-updater-config"
    assert {i["path"] for i in config_volume["items"]} == {
        "registries.conf",
        "commit.template",
        "notifications.yaml",
    }
    assert not [m for m in c["volumeMounts"] if "subPath" in m]

    # sshConfig → the ssh client config git uses ($HOME/.ssh/config = /app/.ssh/config)
    ssh = one(objs, "ConfigMap", "argocd-image-updater-ssh-config")["data"]
    assert ssh == {"config": values["config"]["sshConfig"]["config"]}
    assert volume(objs, "/app/.ssh")["configMap"]["name"] == "argocd-image-updater-ssh-config"

    # authScripts
    scripts = one(objs, "ConfigMap", "argocd-image-updater-authscripts")["data"]
    assert scripts == values["authScripts"]["scripts"]
    assert volume(objs, "/scripts")["configMap"]["name"] == "argocd-image-updater-authscripts"

    # serviceAccount, pod metadata, security contexts, resources (replaced, not merged), placement
    sa = one(objs, "ServiceAccount", "image-updater-sa")["metadata"]
    assert sa["annotations"] == values["serviceAccount"]["annotations"]
    assert sa["labels"]["azure.workload.identity/use"] == "true"
    assert d["spec"]["template"]["metadata"]["annotations"]["example.com/owner"] == "platform"
    assert d["spec"]["template"]["metadata"]["labels"]["azure.workload.identity/use"] == "true"
    assert pod["securityContext"] == {"fsGroup": 2000}
    assert c["securityContext"] == values["securityContext"]
    assert c["resources"] == values["resources"]
    assert pod["nodeSelector"] == values["nodeSelector"]
    assert pod["tolerations"] == values["tolerations"]
    assert pod["affinity"] == values["affinity"]

    # metrics: servicePort, ServiceMonitor selector/labels/namespace/relabelings
    metrics = one(objs, "Service", "image-updater-metrics")
    assert metrics["spec"]["ports"][0]["port"] == 8081
    assert metrics["metadata"]["annotations"] == {"prometheus.io/scrape": "true"}
    assert metrics["metadata"]["labels"]["team"] == "platform"
    monitor = one(objs, "ServiceMonitor", "image-updater-metrics")
    assert monitor["metadata"]["namespace"] == "monitoring"
    assert monitor["metadata"]["labels"]["prometheus"] == "kube-prometheus"
    assert monitor["metadata"]["labels"]["release"] == "prometheus"
    endpoint = monitor["spec"]["endpoints"][0]
    assert endpoint["interval"] == "15s"
    assert endpoint["relabelings"] == values["metrics"]["serviceMonitor"]["relabelings"]
    assert endpoint["metricRelabelings"] == values["metrics"]["serviceMonitor"]["metricRelabelings"]

    # containerPort: the probes' port (as the v0.x controller's health port)
    assert "--health-probe-bind-address=:8080" in c["args"]
    assert {"name": "health", "containerPort": 8080, "protocol": "TCP"} in c["ports"]

    # service.*, dualStack.*, ingress.*
    svc = one(objs, "Service", "argocd-image-updater-service")
    assert svc["metadata"]["annotations"] == values["service"]["annotations"]
    assert svc["metadata"]["labels"]["exposure"] == "public"
    spec = svc["spec"]
    assert spec["type"] == "NodePort"
    assert spec["ports"] == [
        {
            "name": "server-port",
            "port": 8080,
            "targetPort": "webhook",
            "protocol": "TCP",
            "nodePort": 30080,
        }
    ]
    assert spec["externalIPs"] == ["203.0.113.10"]
    assert spec["externalTrafficPolicy"] == "Local"
    assert spec["sessionAffinity"] == "ClientIP"
    assert spec["ipFamilyPolicy"] == "PreferDualStack" and spec["ipFamilies"] == ["IPv4", "IPv6"]
    assert metrics["spec"]["ipFamilies"] == ["IPv4", "IPv6"]
    ingress = one(objs, "Ingress", "image-updater-ingress")
    assert ingress["metadata"]["labels"]["exposure"] == "public"
    assert ingress["metadata"]["annotations"] == {
        "nginx.ingress.kubernetes.io/ssl-redirect": "true",
        "example.com/release": "argocd-image-updater",
    }
    assert ingress["spec"]["ingressClassName"] == "nginx"
    assert ingress["spec"]["tls"] == values["ingress"]["tls"]
    main, extra = ingress["spec"]["rules"]
    assert main["host"] == "updater.example.com"
    paths = {p["path"]: p for p in main["http"]["paths"]}
    assert paths["/webhook"]["backend"]["service"] == {
        "name": "argocd-image-updater-service",
        "port": {"number": 8080},
    }
    assert paths["/webhook"]["pathType"] == "Prefix"
    assert paths["/*"] == values["ingress"]["extraPaths"][0]
    assert extra["host"] == "updater.internal.example.com"
    assert extra["http"]["paths"][0]["path"] == "/hooks"


def test_every_setting_of_the_1_0_4_file_takes_effect() -> None:
    values = original("original-1.0.4.yaml")
    objs = render(with_our_image(values))
    d = deployment(objs)
    pod = d["spec"]["template"]["spec"]
    c = container(objs)

    # crds.*
    crd = one(objs, "CustomResourceDefinition", "imageupdaters.argocd-image-updater.argoproj.io")
    assert crd["metadata"]["labels"] == {"team": "platform"}
    assert (
        crd["metadata"]["annotations"]["argocd.argoproj.io/sync-options"] == "ServerSideApply=true"
    )
    assert "helm.sh/resource-policy" not in crd["metadata"]["annotations"]  # keep: false

    assert d["spec"]["replicas"] == 2
    assert "--sharding" in c["args"]  # the two share the work (sharding.enabled: auto)
    assert one(objs, "PodDisruptionBudget", "argocd-image-updater")["spec"]["maxUnavailable"] == 1
    assert d["spec"]["strategy"] == {"type": "RollingUpdate"}
    assert c["imagePullPolicy"] == "IfNotPresent"

    # createClusterRoles: false → namespaced only, the own namespace watched
    kinds = {o["kind"] for o in objs}
    assert not kinds & {"ClusterRole", "ClusterRoleBinding"}
    role = one(objs, "Role", "argocd-image-updater")
    assert {r for rule in role["rules"] for r in rule["resources"]} >= {
        "applications",
        "imageupdaters",
    }
    assert not [a for a in c["args"] if a.startswith("--watch-namespaces")]

    assert "--leader-election-namespace=argocd" in c["args"]
    assert {"name": "HTTPS_PROXY", "value": "http://proxy.example.com:3128"} in c["env"]
    assert c["envFrom"] == values["extraEnvFrom"]
    creds = one(objs, "Secret", "argocd-image-updater-webhook-creds")  # string extraObject
    assert creds["stringData"] == {"secret": "from-extra-objects"}
    assert pod["initContainers"] == values["initContainers"]
    assert pod["priorityClassName"] == "high-priority"
    assert values["volumes"][0] in pod["volumes"]
    assert values["volumeMounts"][0] in c["volumeMounts"]

    # the dotted config keys, copied verbatim into the ConfigMap and read by the controller
    data = configmap_of(objs, values)
    expected = {
        "kube.events": "true",
        "git.user": "image-bot",
        "git.email": "image-bot@example.com",
        "git.commit-message-template": values["config"]["git.commit-message-template"],
        "git.commit-signing-key": "3AA5C34371567BD2",
        "git.commit-sign-off": "true",
        "git.commit-signing-method": "openpgp",
        "log.level": "debug",
        "log.format": "json",
        "webhook.enable": "true",
        "webhook.port": "9082",
        "webhook.ratelimit-allowed": "100",
        "argocd.namespace": "argocd",
        "interval": "5m",
        "max_concurrent_apps": "20",
    }
    assert {k: data.get(k) for k in expected} == expected
    refs = env_refs(objs)
    for option in OPTIONS:
        if option.configmap in expected and option.env:
            assert refs[option.env[0]]["configMapKeyRef"]["key"] == option.configmap
    conf = parse_registries_conf(data["registries.conf"], tls_dir="/nonexistent")
    assert conf.endpoint_for("ghcr.io", "org/app").credentials == "env:GHCR_CREDS"
    ssh = one(objs, "ConfigMap", "argocd-image-updater-ssh-config")["data"]["config"]
    assert "PubkeyAcceptedAlgorithms +ssh-rsa" in ssh
    assert not [o for o in objs if o["metadata"]["name"] == "argocd-image-updater-authscripts"]
    assert not [
        o for o in objs if o["kind"] == "Secret" and "webhook-creds" not in o["metadata"]["name"]
    ]

    sa = one(objs, "ServiceAccount", "argocd-image-updater")["metadata"]
    assert sa["annotations"] == values["serviceAccount"]["annotations"]
    assert d["spec"]["template"]["metadata"]["annotations"]["example.com/owner"] == "platform"
    assert d["spec"]["template"]["metadata"]["labels"]["team"] == "platform"
    assert pod["securityContext"] == {"runAsNonRoot": True}
    assert c["securityContext"] == values["securityContext"]
    assert c["resources"] == values["resources"]  # requests only: no limits added
    assert pod["nodeSelector"] == {"kubernetes.io/os": "linux"}

    # containerPorts and metrics.service.servicePort
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    assert ports == {"webhook": 9082, "health": 8086, "metrics": 8443}
    assert "--health-probe-bind-address=:8086" in c["args"]
    assert "--metrics-bind-address=:8443" in c["args"]
    metrics = one(objs, "Service", "argocd-image-updater-metrics")
    assert metrics["spec"]["ports"][0]["port"] == 9443
    assert metrics["metadata"]["labels"]["team"] == "platform"
    monitor = one(objs, "ServiceMonitor", "argocd-image-updater-metrics")
    assert monitor["metadata"]["namespace"] == "argocd"
    assert monitor["metadata"]["labels"]["prometheus"] == "kube-prometheus"
    assert monitor["spec"]["endpoints"][0]["interval"] == "30s"

    # service.* and dualStack.*; ingress disabled
    spec = one(objs, "Service", "argocd-image-updater-service")["spec"]
    assert spec["type"] == "LoadBalancer"
    assert spec["ports"] == [
        {"name": "webhook-https", "port": 443, "targetPort": "webhook", "protocol": "TCP"}
    ]
    assert spec["loadBalancerClass"] == "service.k8s.aws/nlb"
    assert spec["loadBalancerSourceRanges"] == ["192.0.2.0/24"]
    assert spec["externalTrafficPolicy"] == "Cluster"
    assert spec["ipFamilyPolicy"] == "SingleStack" and spec["ipFamilies"] == ["IPv6"]
    assert "Ingress" not in kinds


@pytest.mark.parametrize(
    ("values", "names"),
    [
        (
            {"config": {"logLevel": "info", "log.level": "debug"}},
            ("config.logLevel", 'config."log.level"'),
        ),
        (
            {"config": {"applicationsAPI": "argocd", "applicationsAPIKind": "argocd"}},
            ("config.applicationsAPI", "config.applicationsAPIKind"),
        ),
        (
            {"config": {"gitCommitUser": "a", "extra": {"git.user": "b"}}},
            ("config.gitCommitUser", 'config.extra."git.user"'),
        ),
        (
            {"webhook": {"enabled": True}, "config": {"webhook.enable": True}},
            ("webhook.enabled", 'config."webhook.enable"'),
        ),
        ({"rbac": {"create": True, "enabled": True}}, ("rbac.create", "rbac.enabled")),
        (
            {"rbac": {"clusterWide": False}, "createClusterRoles": False},
            ("rbac.clusterWide", "createClusterRoles"),
        ),
        (
            {"metrics": {"service": {"port": 1, "servicePort": 2}}},
            ("metrics.service.port", "metrics.service.servicePort"),
        ),
        (
            {"metrics": {"port": 9000}, "containerPorts": {"metrics": 9000}},
            ("metrics.port", "containerPorts.metrics"),
        ),
        ({"health": {"port": 9001}, "containerPort": 9002}, ("health.port", "containerPort")),
        (
            {"webhook": {"service": {"type": "NodePort"}}, "service": {"type": "NodePort"}},
            ("webhook.service.type", "service.type"),
        ),
        (
            {"containerPorts": {"webhook": 9082}, "config": {"webhook.port": 9083}},
            ("containerPorts.webhook", 'config."webhook.port"'),
        ),
    ],
)
def test_two_spellings_of_one_setting_fail_naming_both(
    values: dict[str, Any], names: tuple[str, str]
) -> None:
    with pytest.raises(HelmError) as err:
        render(values)
    message = str(err.value)
    assert all(name in message for name in names), message
    assert "give only one of them" in message


def test_the_1_0_4_webhook_port_may_be_given_twice_when_both_agree() -> None:
    # The original 1.0.x chart needs both (container port and controller port) to move it.
    objs = render({"containerPorts": {"webhook": 9082}, "config": {"webhook.port": 9082}})
    assert configmap(objs)["webhook.port"] == "9082"
    assert {"name": "webhook", "containerPort": 9082, "protocol": "TCP"} in container(objs)["ports"]
