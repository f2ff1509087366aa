"""Where the Kubernetes API is and how to authenticate to it: a kubeconfig (as kubectl reads it)
or the pod's service account.

A kubeconfig may be several files (``KUBECONFIG=a:b``, merged as kubectl does: the first file
that defines a name wins, the first ``current-context`` is used). Supported in a cluster entry:
``server``, ``certificate-authority`` / ``certificate-authority-data``, ``tls-server-name``,
``proxy-url`` and ``insecure-skip-tls-verify`` (verification is off only when it is set true);
in a user entry: ``token``, ``tokenFile``, ``client-certificate(-data)`` / ``client-key(-data)``,
``username`` / ``password``, ``exec`` credential plugins, and the ``id-token`` of an ``oidc``
auth provider (not refreshed: use an exec plugin such as kubelogin for that). Relative file
paths are resolved against the kubeconfig file that names them, as kubectl does.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import os
import socket
import ssl
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from argocd_image_updater.kits.tlstrust import client_context
from argocd_image_updater.kube.auth import (
    BasicAuth,
    ExecCredential,
    ExecPlugin,
    FileToken,
    KubeAuth,
    StaticToken,
)

SERVICE_ACCOUNT_DIR: Final = Path("/var/run/secrets/kubernetes.io/serviceaccount")


class KubeConfigError(Exception):
    """The kubeconfig or the in-cluster configuration cannot be used (the message says why)."""


@dataclass
class ClusterAccess:
    """Everything a client needs to reach one API server."""

    server: str
    verify: ssl.SSLContext
    auth: KubeAuth | None
    namespace: str = "default"
    tls_server_name: str = ""
    proxy: str = ""


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
        verify=_verifying_context(ca_file=str(ca_file)),
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
    auth, cert = await _user_auth(user, server, cluster) if user else (None, None)
    insecure = cluster.body.get("insecure-skip-tls-verify") is True
    server_name = str(cluster.body.get("tls-server-name") or "")
    verify = _tls_context(cluster, insecure, cert, server_name)
    return ClusterAccess(
        server=server,
        verify=verify,
        auth=auth,
        namespace=str(ctx.body.get("namespace") or "default"),
        tls_server_name=server_name,
        proxy=str(cluster.body.get("proxy-url") or ""),
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


@dataclass(frozen=True)
class _ClientCert:
    cert_pem: bytes
    key_pem: bytes
    cert_file: str = ""
    key_file: str = ""


async def _user_auth(
    user: _Entry, server: str, cluster: _Entry
) -> tuple[KubeAuth | None, _ClientCert | None]:
    body = user.body
    cert = None
    if body.get("client-certificate-data") or body.get("client-certificate"):
        cert = _ClientCert(
            _data(user, "client-certificate-data"),
            _data(user, "client-key-data"),
            _path(user, "client-certificate"),
            _path(user, "client-key"),
        )
    if body.get("token"):
        return StaticToken(str(body["token"])), cert
    if body.get("tokenFile"):
        return FileToken(Path(_path(user, "tokenFile"))), cert
    if body.get("exec"):
        plugin = ExecPlugin.from_config(
            body["exec"], user.base, cluster=_cluster_info(server, cluster)
        )
        first: ExecCredential = await plugin.credential()
        if first.cert_pem and first.key_pem and cert is None:
            cert = _ClientCert(first.cert_pem, first.key_pem)
        return plugin, cert
    provider = body.get("auth-provider")
    if isinstance(provider, dict):
        config = provider.get("config") or {}
        if provider.get("name") == "oidc" and config.get("id-token"):
            return StaticToken(str(config["id-token"])), cert
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


class _NamedServerContext(ssl.SSLContext):
    """A client context that checks ``server_name`` (and sends it as SNI) whatever host the
    connection was opened to: a kubeconfig's ``tls-server-name``, also inside a proxy's CONNECT
    tunnel, where httpx passes the URL's host whatever the request's ``sni_hostname``."""

    server_name: str

    def wrap_socket(
        self,
        sock: socket.socket,
        server_side: bool = False,
        do_handshake_on_connect: bool = True,
        suppress_ragged_eofs: bool = True,
        server_hostname: str | bytes | None = None,
        session: ssl.SSLSession | None = None,
    ) -> ssl.SSLSocket:
        return super().wrap_socket(
            sock,
            server_side,
            do_handshake_on_connect,
            suppress_ragged_eofs,
            self.server_name,
            session,
        )

    def wrap_bio(
        self,
        incoming: ssl.MemoryBIO,
        outgoing: ssl.MemoryBIO,
        server_side: bool = False,
        server_hostname: str | bytes | None = None,
        session: ssl.SSLSession | None = None,
    ) -> ssl.SSLObject:
        return super().wrap_bio(incoming, outgoing, server_side, self.server_name, session)


def _new_context(server_name: str) -> ssl.SSLContext:
    if not server_name:
        return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context = _NamedServerContext(ssl.PROTOCOL_TLS_CLIENT)
    context.server_name = server_name
    return context


def _verifying_context(
    *, ca_file: str = "", ca_data: bytes = b"", server_name: str = ""
) -> ssl.SSLContext:
    """A context that trusts exactly the cluster's CA, as client-go does when one is given."""
    context = _new_context(server_name)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        if ca_file:
            context.load_verify_locations(cafile=ca_file)
        if ca_data:
            context.load_verify_locations(cadata=ca_data.decode("ascii", "replace"))
    except FileNotFoundError:
        raise KubeConfigError(f"the CA file {ca_file} does not exist") from None
    except (ssl.SSLError, OSError, ValueError) as err:
        where = ca_file or "certificate-authority-data"
        raise KubeConfigError(f"cannot load the cluster CA from {where}: {err}") from None
    return context


def _tls_context(
    cluster: _Entry, insecure: bool, cert: _ClientCert | None, server_name: str = ""
) -> ssl.SSLContext:
    ca_data = _data(cluster, "certificate-authority-data")
    ca_file = _path(cluster, "certificate-authority")
    if insecure:
        if cert is None and not server_name:
            return client_context(insecure=True)
        context = _new_context(server_name)
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    elif ca_data or ca_file:
        context = _verifying_context(ca_file=ca_file, ca_data=ca_data, server_name=server_name)
    elif cert is None and not server_name:
        return client_context()  # the system trust store, shared and loaded when first needed
    elif not server_name:
        context = ssl.create_default_context()
    else:
        context = _new_context(server_name)
        context.options |= ssl.OP_NO_COMPRESSION
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.load_default_certs(ssl.Purpose.SERVER_AUTH)
    if cert is not None:
        _load_client_cert(context, cert)
    return context


def _load_client_cert(context: ssl.SSLContext, cert: _ClientCert) -> None:
    """Load a client certificate and key given as files or as data. The ssl module reads only
    files: data goes through a private temporary directory that is removed at once."""
    try:
        if cert.cert_file and not cert.cert_pem:
            if not (cert.key_file or cert.key_pem):
                raise KubeConfigError("client-certificate is set without client-key")
            if cert.key_file:
                context.load_cert_chain(cert.cert_file, cert.key_file)
                return
        cert_pem = cert.cert_pem or Path(cert.cert_file).read_bytes()
        key_pem = cert.key_pem or (Path(cert.key_file).read_bytes() if cert.key_file else b"")
        if not key_pem:
            raise KubeConfigError("client-certificate-data is set without client-key(-data)")
        with tempfile.TemporaryDirectory(prefix="kube-client-") as private:
            cert_path, key_path = Path(private) / "tls.crt", Path(private) / "tls.key"
            for target, content in ((cert_path, cert_pem), (key_path, key_pem)):
                fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                with os.fdopen(fd, "wb") as out:
                    out.write(content)
            context.load_cert_chain(str(cert_path), str(key_path))
    except (ssl.SSLError, OSError) as err:
        raise KubeConfigError(f"cannot load the client certificate: {err}") from None
