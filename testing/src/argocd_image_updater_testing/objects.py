"""Builders for realistic Kubernetes objects: Argo CD Applications (as the Argo CD controller
leaves them, status included), ImageUpdaters, Secrets and ConfigMaps.

The output is plain JSON-shaped data that passes the shipped CRD schemas, ready for
``KubeStore.put`` or for an API client.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Final

JSON = dict[str, Any]
SOURCE_TYPES: Final = ("Kustomize", "Helm", "Plugin", "Directory")
IN_CLUSTER: Final = "https://kubernetes.default.svc"
DEFAULT_REPO: Final = "https://github.com/example/gitops.git"


def _meta(
    name: str,
    namespace: str | None,
    labels: Mapping[str, str] | None,
    annotations: Mapping[str, str] | None,
) -> JSON:
    meta: JSON = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    if labels:
        meta["labels"] = dict(labels)
    if annotations:
        meta["annotations"] = dict(annotations)
    return meta


def helm_parameter_list(params: Mapping[str, str] | Sequence[Mapping[str, Any]]) -> list[JSON]:
    """``{"image.tag": "1.0"}`` or a list of ``{name, value[, forceString]}`` → Argo CD's list."""
    if isinstance(params, Mapping):
        return [{"name": k, "value": str(v)} for k, v in params.items()]
    return [dict(p) for p in params]


def source(
    repo_url: str = DEFAULT_REPO,
    *,
    source_type: str = "Kustomize",
    path: str | None = None,
    chart: str | None = None,
    target_revision: str = "HEAD",
    helm_parameters: Mapping[str, str] | Sequence[Mapping[str, Any]] | None = None,
    helm_value_files: Sequence[str] | None = None,
    kustomize_images: Sequence[str] | None = None,
    plugin_env: Mapping[str, str] | None = None,
    plugin_name: str | None = None,
    ref: str | None = None,
    name: str | None = None,
) -> JSON:
    """One ``spec.source`` / ``spec.sources[]`` entry. A Helm source without ``path`` is a chart
    from a Helm repository (``chart`` defaults to ``app``)."""
    if source_type not in SOURCE_TYPES:
        raise ValueError(f"source_type {source_type!r}: use one of {', '.join(SOURCE_TYPES)}")
    src: JSON = {"repoURL": repo_url}
    if source_type == "Helm" and path is None:
        src["chart"] = chart or "app"
    elif path is not None or not ref:
        src["path"] = path if path is not None else "deploy"
    src["targetRevision"] = target_revision
    if source_type == "Helm" and (helm_parameters or helm_value_files):
        helm: JSON = {}
        if helm_parameters:
            helm["parameters"] = helm_parameter_list(helm_parameters)
        if helm_value_files:
            helm["valueFiles"] = list(helm_value_files)
        src["helm"] = helm
    if source_type == "Kustomize" and kustomize_images:
        src["kustomize"] = {"images": list(kustomize_images)}
    if source_type == "Plugin":
        plugin: JSON = {"name": plugin_name} if plugin_name else {}
        if plugin_env:
            plugin["env"] = [{"name": k, "value": v} for k, v in plugin_env.items()]
        src["plugin"] = plugin
    if ref:
        src["ref"] = ref
    if name:
        src["name"] = name
    return src


def detect_source_type(src: Mapping[str, Any]) -> str:
    """What Argo CD reports for a source whose repository content is the usual one."""
    if "plugin" in src:
        return "Plugin"
    if "chart" in src or "helm" in src:
        return "Helm"
    if "kustomize" in src:
        return "Kustomize"
    return "Directory"


def _revision(seed: str) -> str:
    return hashlib.sha1(seed.encode(), usedforsecurity=False).hexdigest()


def application(
    name: str,
    namespace: str = "argocd",
    *,
    source_type: str = "Kustomize",
    images: Sequence[str] = (),
    helm_parameters: Mapping[str, str] | Sequence[Mapping[str, Any]] | None = None,
    kustomize_images: Sequence[str] | None = None,
    plugin_env: Mapping[str, str] | None = None,
    repo_url: str = DEFAULT_REPO,
    path: str | None = None,
    chart: str | None = None,
    target_revision: str = "HEAD",
    sources: Sequence[Mapping[str, Any]] | None = None,
    source_types: Sequence[str] | None = None,
    project: str = "default",
    destination_namespace: str | None = None,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    sync_status: str = "Synced",
    health_status: str = "Healthy",
) -> JSON:
    """An Application as stored in the cluster once Argo CD has reconciled it.

    ``images`` are the running images (``status.summary.images``). With ``sources`` (see
    :func:`source`) the Application is multi-source and ``status.sourceTypes`` lists one type per
    source (``source_types``, or detected from each source); otherwise one source is built from
    the other arguments and ``status.sourceType`` is ``source_type``."""
    destination = {"server": IN_CLUSTER, "namespace": destination_namespace or name}
    spec: JSON = {"project": project, "destination": destination}
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    status: JSON = {
        "sync": {"status": sync_status, "comparedTo": {"destination": destination}},
        "health": {"status": health_status, "lastTransitionTime": now},
        "summary": {"images": list(images)} if images else {},
        "reconciledAt": now,
        "controllerNamespace": namespace,
        "resources": [
            {
                "group": "apps",
                "version": "v1",
                "kind": "Deployment",
                "namespace": destination["namespace"],
                "name": name,
                "status": sync_status,
                "health": {"status": health_status},
            }
        ],
    }
    if sources is not None:
        spec["sources"] = [dict(s) for s in sources]
        status["sync"]["comparedTo"]["sources"] = spec["sources"]
        status["sync"]["revisions"] = [_revision(f"{name}/{i}") for i in range(len(sources))]
        status["sourceTypes"] = list(source_types or [detect_source_type(s) for s in sources])
    else:
        spec["source"] = source(
            repo_url,
            source_type=source_type,
            path=path,
            chart=chart,
            target_revision=target_revision,
            helm_parameters=helm_parameters,
            kustomize_images=kustomize_images,
            plugin_env=plugin_env,
        )
        status["sync"]["comparedTo"]["source"] = spec["source"]
        status["sync"]["revision"] = _revision(name)
        status["sourceType"] = source_type
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Application",
        "metadata": _meta(name, namespace, labels, annotations),
        "spec": spec,
        "status": status,
    }


def image_updater(
    name: str,
    namespace: str = "argocd",
    spec: Mapping[str, Any] | None = None,
    *,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
) -> JSON:
    """An ImageUpdater; the default ``spec`` manages ``nginx`` in every Application."""
    default_spec = {
        "applicationRefs": [
            {"namePattern": "*", "images": [{"alias": "nginx", "imageName": "nginx:1.x"}]}
        ]
    }
    return {
        "apiVersion": "argocd-image-updater.argoproj.io/v1alpha1",
        "kind": "ImageUpdater",
        "metadata": _meta(name, namespace, labels, annotations),
        "spec": json.loads(json.dumps(spec if spec is not None else default_spec)),
    }


def _b64(value: str | bytes) -> str:
    return base64.b64encode(value.encode() if isinstance(value, str) else value).decode()


def secret(
    name: str,
    namespace: str = "argocd",
    data: Mapping[str, str | bytes] | None = None,
    *,
    type: str = "Opaque",
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
) -> JSON:
    """A Secret; ``data`` values are given in clear and stored base64-encoded."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": _meta(name, namespace, labels, annotations),
        "type": type,
        "data": {k: _b64(v) for k, v in (data or {}).items()},
    }


def dockerconfig_json(registries: Mapping[str, tuple[str, str]]) -> str:
    """A ``.dockerconfigjson`` document for ``{registry: (username, password)}``."""
    auths = {
        registry: {"username": user, "password": password, "auth": _b64(f"{user}:{password}")}
        for registry, (user, password) in registries.items()
    }
    return json.dumps({"auths": auths})


def dockerconfig_secret(
    name: str,
    namespace: str,
    registry: str,
    username: str,
    password: str,
    *,
    labels: Mapping[str, str] | None = None,
) -> JSON:
    """A ``kubernetes.io/dockerconfigjson`` pull secret for one registry."""
    document = dockerconfig_json({registry: (username, password)})
    return secret(
        name,
        namespace,
        {".dockerconfigjson": document},
        type="kubernetes.io/dockerconfigjson",
        labels=labels,
    )


def config_map(
    name: str,
    namespace: str = "argocd",
    data: Mapping[str, str] | None = None,
    *,
    labels: Mapping[str, str] | None = None,
) -> JSON:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": _meta(name, namespace, labels, None),
        "data": dict(data or {}),
    }
