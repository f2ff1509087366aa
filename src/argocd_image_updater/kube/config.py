"""Where the Kubernetes API is and how to authenticate to it: a kubeconfig (as kubectl reads it)
or the pod's service account.

A kubeconfig may be several files (``KUBECONFIG=a:b``, merged as kubectl does: the first file
that defines a name wins, the first ``current-context`` is used). Supported in a cluster entry:
``server``, ``certificate-authority`` / ``certificate-authority-data``, ``tls-server-name``,
``proxy-url`` and ``insecure-skip-tls-verify`` (verification is off only when it is set true);
in a user entry: ``token``, ``tokenFile``, ``client-certificate(-data)`` / ``client-key(-data)``
(files read again when they change), ``username`` / ``password``, ``exec`` credential plugins,
the ``oidc`` auth provider (its id-token renewed with its refresh-token), and impersonation
(``as``, ``as-uid``, ``as-groups``, ``as-user-extra``). ``insecure-skip-tls-verify`` together
with a CA is refused, as client-go refuses it. Relative file paths are resolved against the
kubeconfig file that names them, as kubectl does.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import os
import re
import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from argocd_image_updater.kube.auth import (
    BasicAuth,
    ExecPlugin,
    FileToken,
    KubeAuth,
    StaticToken,
)
from argocd_image_updater.kube.errors import KubeConfigError as KubeConfigError
from argocd_image_updater.kube.oidc import OidcProvider
from argocd_image_updater.kube.tls import CertFiles, CertSource, ClientTls, TlsSettings

SERVICE_ACCOUNT_DIR: Final = Path("/var/run/secrets/kubernetes.io/serviceaccount")


@dataclass
class ClusterAccess:
    """Everything a client needs to reach one API server."""

    server: str
    verify: ssl.SSLContext
    auth: KubeAuth | None
    namespace: str = "default"
    tls_server_name: str = ""
    proxy: str = ""
    tls: ClientTls | None = None
    """Renews ``verify`` when the client certificate changes (None: ``verify`` is fixed)."""
    impersonation: list[tuple[str, str]] = field(default_factory=list)
    """``Impersonate-*`` header fields sent with every request."""


# --- in-cluster --------------------------------------------------------------------------------


def in_cluster(
    environ: Mapping[str, str] | None = None, account_dir: Path = SERVICE_ACCOUNT_DIR
) -> ClusterAccess:
    """The pod's service account: the API server from ``KUBERNETES_SERVICE_HOST``/``_PORT``, its
    CA and token from ``account_dir``; the token is read again as the kubelet rotates it."""
    env = os.environ if environ is None else environ
    host, port = env.get("KUBERNETES_SERVICE_HOST", ""), env.get("KUBERNETES_SERVICE_PORT", "")
    if not host or not port:
        raise KubeConfigError("KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set")
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"  # IPv6
    token_file, ca_file = account_dir / "token", account_dir / "ca.crt"
    if not token_file.is_file():
        raise KubeConfigError(f"the service account token {token_file} does not exist")
    if not ca_file.is_file():
        raise KubeConfigError(f"the service account CA {ca_file} does not exist")
    namespace = "default"
    with contextlib.suppress(OSError):
        namespace = (account_dir / "namespace").read_text().strip() or namespace
    return ClusterAccess(
        server=f"https://{host}:{port}",
        verify=TlsSettings(ca_file=str(ca_file)).context(),
        auth=FileToken(token_file),
        namespace=namespace,
    )


# --- kubeconfig --------------------------------------------------------------------------------


def kubeconfig_paths(value: str, environ: Mapping[str, str] | None = None) -> list[Path]:
    """The files of ``value`` (one path or a list joined like ``$KUBECONFIG``); when empty,
    those of ``$KUBECONFIG``, else ``~/.kube/config``."""
    env = os.environ if environ is None else environ
    listed = [p for p in (value or env.get("KUBECONFIG", "")).split(os.pathsep) if p]
    return [Path(p).expanduser() for p in listed] or [Path("~/.kube/config").expanduser()]


@dataclass
class _Entry:
    """A named entry of a kubeconfig and the directory its relative paths are resolved in."""

    body: dict[str, Any]
    base: Path


@dataclass
class _Merged:
    clusters: dict[str, _Entry] = field(default_factory=dict)
    users: dict[str, _Entry] = field(default_factory=dict)
    contexts: dict[str, _Entry] = field(default_factory=dict)
    current_context: str = ""


def _load_files(paths: list[Path]) -> _Merged:
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    merged = _Merged()
    found = False
    for path in paths:
        try:
            text = path.read_text()
        except FileNotFoundError:
            if len(paths) > 1:
                continue  # kubectl skips missing files of a list
            raise KubeConfigError(f"kubeconfig {path} does not exist") from None
        except OSError as err:
            raise KubeConfigError(f"cannot read kubeconfig {path}: {err}") from None
        found = True
        try:
            doc = YAML(typ="safe", pure=True).load(text) or {}
        except YAMLError as err:
            raise KubeConfigError(f"kubeconfig {path} is not valid YAML: {err}") from None
        if not isinstance(doc, dict):
            raise KubeConfigError(f"kubeconfig {path} is not a mapping")
        base = path.resolve().parent
        for key, target, inner in (
            ("clusters", merged.clusters, "cluster"),
            ("users", merged.users, "user"),
            ("contexts", merged.contexts, "context"),
        ):
            for item in doc.get(key) or []:
                if not isinstance(item, dict) or not item.get("name"):
                    raise KubeConfigError(f"kubeconfig {path}: an entry of {key} has no name")
                body = item.get(inner) or {}
                if not isinstance(body, dict):
                    raise KubeConfigError(
                        f"kubeconfig {path}: {key} entry '{item['name']}' has no '{inner}' mapping"
                    )
                target.setdefault(str(item["name"]), _Entry(body, base))
        if not merged.current_context and doc.get("current-context"):
            merged.current_context = str(doc["current-context"])
    if not found:
        raise KubeConfigError(f"none of the kubeconfig files {', '.join(map(str, paths))} exists")
    return merged


async def from_kubeconfig(paths: list[Path], context: str | None = None) -> ClusterAccess:
    """The cluster, user and namespace of ``context`` (else the current context)."""
    merged = _load_files(paths)
    name = context or merged.current_context
    if not name:
        raise KubeConfigError("the kubeconfig sets no current-context and none was given")
    ctx = merged.contexts.get(name)
    if ctx is None:
        raise KubeConfigError(f"the kubeconfig has no context '{name}'")
    cluster = merged.clusters.get(str(ctx.body.get("cluster") or ""))
    if cluster is None:
        raise KubeConfigError(
            f"context '{name}' names the cluster '{ctx.body.get('cluster')}', which is not defined"
        )
    user_name = str(ctx.body.get("user") or "")
    user = merged.users.get(user_name) if user_name else None
    if user_name and user is None:
        raise KubeConfigError(
            f"context '{name}' names the user '{user_name}', which is not defined"
        )
    server = str(cluster.body.get("server") or "").rstrip("/")
    if not server:
        raise KubeConfigError(f"the cluster '{ctx.body.get('cluster')}' has no server")
    server_name = str(cluster.body.get("tls-server-name") or "")
    settings = TlsSettings(
        ca_file=_path(cluster, "certificate-authority"),
        ca_data=_data(cluster, "certificate-authority-data"),
        insecure=cluster.body.get("insecure-skip-tls-verify") is True,
        server_name=server_name,
    )
    auth, cert = await _user_auth(user, server, cluster) if user else (None, None)
    tls = ClientTls(settings, cert)
    return ClusterAccess(
        server=server,
        verify=await tls.start(),
        auth=auth,
        namespace=str(ctx.body.get("namespace") or "default"),
        tls_server_name=server_name,
        proxy=str(cluster.body.get("proxy-url") or ""),
        tls=tls if cert is not None else None,
        impersonation=impersonation(user.body if user else {}),
    )


def _path(entry: _Entry, key: str) -> str:
    value = str(entry.body.get(key) or "")
    if not value:
        return ""
    path = Path(value).expanduser()
    return str(path if path.is_absolute() else entry.base / path)


def _data(entry: _Entry, key: str) -> bytes:
    value = entry.body.get(key)
    if not value:
        return b""
    try:
        return base64.b64decode(str(value), validate=True)
    except (binascii.Error, ValueError):
        raise KubeConfigError(f"{key} is not valid base64") from None


async def _user_auth(
    user: _Entry, server: str, cluster: _Entry
) -> tuple[KubeAuth | None, CertSource | None]:
    body = user.body
    cert: CertSource | None = None
    if body.get("client-certificate-data") or body.get("client-certificate"):
        cert = CertFiles(
            _path(user, "client-certificate"),
            _path(user, "client-key"),
            _data(user, "client-certificate-data"),
            _data(user, "client-key-data"),
        )
    if body.get("token"):
        return StaticToken(str(body["token"])), cert
    if body.get("tokenFile"):
        return FileToken(Path(_path(user, "tokenFile"))), cert
    if body.get("exec"):
        plugin = ExecPlugin.from_config(
            body["exec"], user.base, cluster=_cluster_info(server, cluster)
        )
        first = await plugin.credential()
        if first.cert_pem and first.key_pem and cert is None:
            cert = plugin  # its certificate is renewed with its credential
        return plugin, cert
    provider = body.get("auth-provider")
    if isinstance(provider, dict):
        config = provider.get("config") or {}
        if provider.get("name") == "oidc" and isinstance(config, dict):
            return OidcProvider(config, user.base), cert
        raise KubeConfigError(
            f"the auth provider '{provider.get('name')}' is not supported: use an exec "
            "credential plugin (for OIDC, kubelogin)"
        )
    if body.get("username") and body.get("password") is not None:
        return BasicAuth(str(body["username"]), str(body["password"])), cert
    return None, cert


def _cluster_info(server: str, cluster: _Entry) -> dict[str, Any]:
    """The ``spec.cluster`` of an ExecCredential (for plugins with ``provideClusterInfo``)."""
    info: dict[str, Any] = {"server": server}
    ca = _data(cluster, "certificate-authority-data")
    if not ca and cluster.body.get("certificate-authority"):
        with contextlib.suppress(OSError):
            ca = Path(_path(cluster, "certificate-authority")).read_bytes()
    if ca:
        info["certificate-authority-data"] = base64.b64encode(ca).decode()
    for key, out in (("tls-server-name", "tls-server-name"), ("proxy-url", "proxy-url")):
        if cluster.body.get(key):
            info[out] = cluster.body[key]
    if cluster.body.get("insecure-skip-tls-verify") is True:
        info["insecure-skip-tls-verify"] = True
    extensions = cluster.body.get("extensions") or []
    for ext in extensions if isinstance(extensions, list) else []:
        if isinstance(ext, dict) and ext.get("name") == "client.authentication.k8s.io/exec":
            info["config"] = ext.get("extension")
    return info


_HEADER_NAME_CHAR: Final = re.compile(r"[A-Za-z0-9!#$&'*+\-.^_`|~]")


def _extra_key(key: str) -> str:
    """An ``as-user-extra`` key as the header name's tail: characters a header name cannot
    hold percent-encoded (client-go's escaping; the API server decodes them)."""
    return "".join(
        c if _HEADER_NAME_CHAR.fullmatch(c) else "".join(f"%{b:02X}" for b in c.encode())
        for c in key
    )


def impersonation(user: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The ``Impersonate-*`` header fields of a kubeconfig user's ``as``, ``as-uid``,
    ``as-groups`` and ``as-user-extra`` (one field per group and per extra value)."""
    fields: list[tuple[str, str]] = []
    name = str(user.get("as") or "")
    if name:
        fields.append(("Impersonate-User", name))
    if user.get("as-uid"):
        fields.append(("Impersonate-Uid", str(user["as-uid"])))
    groups = user.get("as-groups") or []
    if not isinstance(groups, list):
        raise KubeConfigError("as-groups is not a list")
    fields += [("Impersonate-Group", str(group)) for group in groups]
    extra = user.get("as-user-extra") or {}
    if not isinstance(extra, dict):
        raise KubeConfigError("as-user-extra is not a mapping of lists")
    for key, values in extra.items():
        for value in values if isinstance(values, list) else [values]:
            fields.append((f"Impersonate-Extra-{_extra_key(str(key))}", str(value)))
    if fields and not name:
        raise KubeConfigError(
            "as-uid, as-groups and as-user-extra impersonate a user: set 'as' too"
        )
    for header, value in fields:
        if any(ord(c) < 0x20 or ord(c) == 0x7F for c in value):
            raise KubeConfigError(f"the value of {header} holds a control character")
    return fields
