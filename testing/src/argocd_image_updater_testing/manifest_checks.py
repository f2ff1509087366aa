"""Consistency checks for rendered manifests (from ``helm template`` or ``kubectl kustomize``).

They report dangling references and arguments the controller would refuse, so the tests of both
install methods assert the same things.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ruamel.yaml import YAML

__all__ = ["flag_problems", "objects_of", "reference_problems"]


def objects_of(texts: Iterable[str]) -> list[dict[str, Any]]:
    """Every non-empty YAML document of ``texts``."""
    objects: list[dict[str, Any]] = []
    for text in texts:
        for doc in YAML(typ="safe", pure=True).load_all(text):
            if doc is not None:
                if not isinstance(doc, dict):
                    raise ValueError(f"a manifest document is not a mapping: {doc!r}")
                objects.append(doc)
    return objects


# --------------------------------------------------------------------------------- checks


def _pod_templates(objects: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    found = []
    for obj in objects:
        if obj.get("kind") in ("Deployment", "StatefulSet", "DaemonSet", "Job"):
            found.append((f"{obj['kind']}/{obj['metadata']['name']}", obj["spec"]["template"]))
    return found


def _matches(selector: Mapping[str, Any] | None, labels: Mapping[str, Any] | None) -> bool:
    selector = selector or {}
    labels = labels or {}
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def reference_problems(
    objects: list[dict[str, Any]], external: Iterable[tuple[str, str]] = ()
) -> list[str]:
    """Dangling references between ``objects``, as readable problems (empty when consistent).

    A reference marked ``optional: true`` may also name an object in ``external`` (one the
    cluster or the user provides, e.g. Argo CD's ``argocd-ssh-known-hosts-cm``).
    """
    have = {(o.get("kind", ""), o.get("metadata", {}).get("name", "")) for o in objects}
    allowed = set(external)
    problems: list[str] = []

    def need(where: str, kind: str, name: str, optional: bool) -> None:
        if (kind, name) in have or (optional and (kind, name) in allowed):
            return
        problems.append(f"{where}: {kind} {name!r} does not exist")

    pods = _pod_templates(objects)
    for where, template in pods:
        spec = template.get("spec", {})
        labels = template.get("metadata", {}).get("labels", {})
        account = spec.get("serviceAccountName")
        if account and account != "default":
            need(where, "ServiceAccount", account, False)
        ports: set[Any] = set()
        for container in spec.get("containers", []) + spec.get("initContainers", []):
            for port in container.get("ports", []):
                ports.update({port.get("name"), port.get("containerPort")})
            for env in container.get("env", []):
                source = env.get("valueFrom", {})
                for key, kind in (("configMapKeyRef", "ConfigMap"), ("secretKeyRef", "Secret")):
                    if key in source:
                        ref = source[key]
                        need(
                            f"{where} env {env['name']}",
                            kind,
                            ref["name"],
                            ref.get("optional", False),
                        )
            for env_from in container.get("envFrom", []):
                for key, kind in (("configMapRef", "ConfigMap"), ("secretRef", "Secret")):
                    if key in env_from:
                        ref = env_from[key]
                        need(f"{where} envFrom", kind, ref["name"], ref.get("optional", False))
            for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
                port = container.get(probe, {}).get("httpGet", {}).get("port")
                if port is not None and port not in ports:
                    problems.append(f"{where}: {probe} port {port!r} is not a container port")
        volumes = {v["name"] for v in spec.get("volumes", [])}
        for volume in spec.get("volumes", []):
            if "configMap" in volume:
                ref = volume["configMap"]
                need(
                    f"{where} volume {volume['name']}",
                    "ConfigMap",
                    ref["name"],
                    ref.get("optional", False),
                )
            if "secret" in volume:
                ref = volume["secret"]
                need(
                    f"{where} volume {volume['name']}",
                    "Secret",
                    ref["secretName"],
                    ref.get("optional", False),
                )
        for container in spec.get("containers", []):
            for mount in container.get("volumeMounts", []):
                if mount["name"] not in volumes:
                    problems.append(f"{where}: volumeMount {mount['name']!r} has no volume")
        if not labels:
            problems.append(f"{where}: the pod template has no labels")

    for obj in objects:
        kind = str(obj.get("kind"))
        where = f"{kind}/{obj.get('metadata', {}).get('name', '')}"
        if kind in ("Deployment", "StatefulSet", "DaemonSet"):
            selector = obj["spec"].get("selector", {}).get("matchLabels")
            if not _matches(selector, obj["spec"]["template"]["metadata"].get("labels")):
                problems.append(f"{where}: selector does not match its pod template")
        elif kind in ("RoleBinding", "ClusterRoleBinding"):
            ref = obj["roleRef"]
            need(where, ref["kind"], ref["name"], False)
            for subject in obj.get("subjects", []):
                if subject["kind"] == "ServiceAccount":
                    need(where, "ServiceAccount", subject["name"], False)
        elif kind == "Service":
            selector = obj["spec"].get("selector")
            targets = [t for _, t in pods if _matches(selector, t["metadata"].get("labels"))]
            if not targets:
                problems.append(f"{where}: selector {selector} matches no pod template")
            container_ports: set[Any] = set()
            for t in targets:
                for container in t["spec"]["containers"]:
                    for port in container.get("ports", []):
                        container_ports.update({port.get("name"), port.get("containerPort")})
            for port in obj["spec"].get("ports", []):
                target = port.get("targetPort", port.get("port"))
                if targets and target not in container_ports:
                    problems.append(f"{where}: targetPort {target!r} is not a container port")
        elif kind == "ServiceMonitor":
            selector = obj["spec"]["selector"].get("matchLabels")
            services = [
                o
                for o in objects
                if o.get("kind") == "Service" and _matches(selector, o["metadata"].get("labels"))
            ]
            if not services:
                problems.append(f"{where}: selector {selector} matches no Service")
            names = {p.get("name") for s in services for p in s["spec"].get("ports", [])}
            for endpoint in obj["spec"].get("endpoints", []):
                if services and endpoint.get("port") not in names:
                    problems.append(f"{where}: port {endpoint.get('port')!r} is no Service port")
        elif kind == "NetworkPolicy":
            selector = obj["spec"].get("podSelector", {}).get("matchLabels")
            if not any(_matches(selector, t["metadata"].get("labels")) for _, t in pods):
                problems.append(f"{where}: podSelector {selector} matches no pod template")
        elif kind == "PodDisruptionBudget":
            selector = obj["spec"].get("selector", {}).get("matchLabels")
            if not any(_matches(selector, t["metadata"].get("labels")) for _, t in pods):
                problems.append(f"{where}: selector {selector} matches no pod template")
    return problems


def flag_problems(
    objects: list[dict[str, Any]],
    flags: Iterable[str],
    command: str = "run",
    *,
    valued: Iterable[str] = (),
) -> list[str]:
    """Arguments of the controller containers that ``command`` does not accept.

    A flag of ``valued`` (one that takes a value) may have its value in the next argument
    (``--interval``, ``5m``), as the original chart's ``extraArgs`` are written.
    """
    accepted = set(flags)
    with_value = set(valued)
    problems: list[str] = []
    for where, template in _pod_templates(objects):
        for container in template["spec"]["containers"]:
            args = [str(a) for a in (*container.get("command", [])[1:], *container.get("args", []))]
            if not args or args[0] != command:
                problems.append(f"{where}: the first argument is not {command!r}: {args}")
                continue
            expect_value, previous = False, command
            for arg in args[1:]:
                if expect_value and not arg.startswith("--"):
                    expect_value = False
                    continue
                if expect_value:
                    problems.append(f"{where}: {command} needs a value after {previous!r}")
                flag = arg.split("=", 1)[0]
                if not arg.startswith("--") or flag not in accepted:
                    problems.append(f"{where}: {command} does not accept {arg!r}")
                expect_value = "=" not in arg and flag in with_value
                previous = arg
            if expect_value:
                problems.append(f"{where}: {command} needs a value after {args[-1]!r}")
    return problems
