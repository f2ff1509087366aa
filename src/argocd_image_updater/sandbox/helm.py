"""A small Helm-compatible chart renderer and consistency checks for rendered manifests.

``helm template`` for the chart in ``charts/`` without the helm binary: the templates run on
the project's Go ``text/template`` interpreter (:mod:`argocd_image_updater.writeback.gotemplate`)
with the handful of Sprig/Helm functions the chart uses. Like Helm: values are the chart's
``values.yaml`` deep-merged with the given values (``null`` removes a key), files under
``templates/`` share their ``{{define}}``s, files whose name starts with ``_`` are not rendered,
``<no value>`` prints as nothing, and a file that renders to whitespace is dropped.

The checks take rendered objects (from this renderer or from ``kubectl kustomize``) and report
dangling references, so the tests of both install methods assert the same things.
"""

from __future__ import annotations

import base64
import hashlib
import io
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from argocd_image_updater.writeback.gotemplate import Template, go_quote, go_sprint

__all__ = [
    "Chart",
    "flag_problems",
    "load_chart",
    "merge_values",
    "objects_of",
    "reference_problems",
    "render_chart",
]


# ------------------------------------------------------------------------------ functions


def _strval(value: Any) -> str:
    return "" if value is None else value if isinstance(value, str) else go_sprint(value)


def _empty(value: Any) -> bool:
    """Sprig's ``empty``: nil, false, 0, "" and empty collections."""
    if value is None:
        return True
    if isinstance(value, bool | int | float):
        return not value
    if isinstance(value, str | list | tuple | Mapping):
        return len(value) == 0
    return False


def _plain(value: Any) -> Any:
    """Plain dicts/lists (sorted keys, as Go's YAML encoder writes maps)."""
    if isinstance(value, Mapping):
        return {str(k): _plain(value[k]) for k in sorted(value, key=str)}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def to_yaml(value: Any) -> str:
    """Helm's ``toYaml``: block style, sorted keys, no final newline."""
    if value is None:
        return "null"
    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = False
    yaml.width = 4096
    out = io.StringIO()
    yaml.dump(_plain(value), out)
    text = out.getvalue()
    if text.endswith("\n...\n"):
        text = text[: -len("\n...\n")]
    return text.removesuffix("\n")


def _indent(width: int, text: Any) -> str:
    pad = " " * width
    return pad + _strval(text).replace("\n", "\n" + pad)


def _default(default: Any, *given: Any) -> Any:
    return default if not given or _empty(given[0]) else given[0]


def _required(message: str, value: Any = None) -> Any:
    if value is None or value == "":
        raise ValueError(message)
    return value


def _fail(message: str) -> str:
    raise ValueError(message)


def _trunc(count: int, text: str) -> str:
    if count < 0:
        return text[len(text) + count :] if len(text) + count > 0 else text
    return text[:count]


def _dict(*pairs: Any) -> dict[str, Any]:
    if len(pairs) % 2:
        pairs = (*pairs, "")
    return {_strval(pairs[i]): pairs[i + 1] for i in range(0, len(pairs), 2)}


def helm_functions(templates: dict[str, Template]) -> dict[str, Callable[..., Any]]:
    """The Sprig/Helm functions the chart may use; ``include``/``tpl`` run on ``templates``."""

    def include(name: str, data: Any = None) -> str:
        if name not in templates:
            raise ValueError(f'no template "{name}" associated with template "gotpl"')
        return templates[name].render(data)

    def tpl(text: str, data: Any) -> str:
        return Template.parse(text, "tpl", funcs=funcs, templates=templates).render(data)

    funcs: dict[str, Callable[..., Any]] = {
        "include": include,
        "tpl": tpl,
        "toYaml": to_yaml,
        "toString": _strval,
        "indent": _indent,
        "nindent": lambda width, text: "\n" + _indent(width, text),
        "quote": lambda *args: " ".join(go_quote(_strval(a)) for a in args if a is not None),
        "squote": lambda *args: " ".join(f"'{_strval(a)}'" for a in args if a is not None),
        "default": _default,
        "empty": _empty,
        "required": _required,
        "fail": _fail,
        "sha256sum": lambda text: hashlib.sha256(_strval(text).encode()).hexdigest(),
        "ternary": lambda yes, no, condition: yes if condition else no,
        "b64enc": lambda text: base64.b64encode(_strval(text).encode()).decode(),
        "trunc": _trunc,
        "trimSuffix": lambda suffix, text: _strval(text).removesuffix(suffix),
        "trim": lambda text: _strval(text).strip(),
        "lower": lambda text: _strval(text).lower(),
        "contains": lambda part, text: part in _strval(text),
        "replace": lambda old, new, text: _strval(text).replace(old, new),
        "hasKey": lambda mapping, key: isinstance(mapping, Mapping) and key in mapping,
        "dict": _dict,
        "list": lambda *items: list(items),
    }
    return funcs


# ---------------------------------------------------------------------------------- charts


@dataclass(frozen=True, slots=True)
class Chart:
    path: Path
    metadata: Mapping[str, Any]
    values: Mapping[str, Any]


def _load_yaml(path: Path) -> Any:
    return YAML(typ="safe", pure=True).load(path.read_text(encoding="utf-8"))


def load_chart(path: Path) -> Chart:
    return Chart(path, _load_yaml(path / "Chart.yaml"), _load_yaml(path / "values.yaml") or {})


def merge_values(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """Helm's coalescing: maps merge key by key, anything else replaces; ``null`` deletes."""
    merged = dict(base)
    for key, value in override.items():
        if value is None:
            merged.pop(key, None)
        elif isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = merge_values(merged[key], value)
        else:
            merged[key] = value
    return merged


def render_chart(
    path: Path,
    values: Mapping[str, Any] | None = None,
    *,
    release: str = "argocd-image-updater",
    namespace: str = "argocd",
) -> dict[str, str]:
    """``helm template``: rendered text by template path (``<chart>/templates/...``)."""
    chart = load_chart(path)
    merged = merge_values(chart.values, values or {})
    name = str(chart.metadata["name"])
    templates: dict[str, Template] = {}
    funcs = helm_functions(templates)
    parsed: list[tuple[str, Template]] = []
    root = path / "templates"
    for file in sorted(p for p in root.rglob("*") if p.is_file()):
        if file.suffix not in (".yaml", ".yml", ".tpl", ".txt"):
            continue
        template_name = f"{name}/templates/{file.relative_to(root).as_posix()}"
        tmpl = Template.parse(
            file.read_text(encoding="utf-8"), template_name, funcs=funcs, templates=templates
        )
        templates.setdefault(template_name, tmpl)
        if not file.name.startswith("_") and file.name != "NOTES.txt":
            parsed.append((template_name, tmpl))
    data = {
        "Values": merged,
        "Release": {
            "Name": release,
            "Namespace": namespace,
            "Service": "Helm",
            "IsInstall": True,
            "IsUpgrade": False,
            "Revision": 1,
        },
        "Chart": {key[:1].upper() + key[1:]: value for key, value in chart.metadata.items()},
        "Capabilities": {"KubeVersion": {"Version": "v1.32.0", "Major": "1", "Minor": "32"}},
    }
    rendered: dict[str, str] = {}
    for template_name, tmpl in parsed:
        template = {"Name": template_name, "BasePath": f"{name}/templates"}
        text = tmpl.render({**data, "Template": template})
        text = text.replace("<no value>", "")
        if text.strip():
            rendered[template_name] = text
    return rendered


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
    return problems


def flag_problems(
    objects: list[dict[str, Any]], flags: Iterable[str], command: str = "run"
) -> list[str]:
    """Arguments of the controller containers that ``command`` does not accept."""
    accepted = set(flags)
    problems: list[str] = []
    for where, template in _pod_templates(objects):
        for container in template["spec"]["containers"]:
            args = [*container.get("command", [])[1:], *container.get("args", [])]
            if not args or args[0] != command:
                problems.append(f"{where}: the first argument is not {command!r}: {args}")
                continue
            for arg in args[1:]:
                flag = arg.split("=", 1)[0]
                if not arg.startswith("--") or flag not in accepted:
                    problems.append(f"{where}: {command} does not accept {arg!r}")
    return problems
