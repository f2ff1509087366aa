"""The TLS side of a connection to the Kubernetes API: the cluster's CA (or verification off),
a ``tls-server-name``, and a client certificate that may change while the process runs.

A client certificate comes from the kubeconfig (``client-certificate(-data)`` /
``client-key(-data)``) or from an exec credential plugin. Files are checked before each request
(their size, modification time and inode: one ``stat`` each) and read again when they changed,
as cert-manager or a kubelet rotates them; a plugin's certificate is renewed with its credential
(on its ``expirationTimestamp`` or after a 401). :class:`ClientTls` builds a new SSL context only
when the certificate's bytes change, and the client then opens new connections with it.
"""

from __future__ import annotations

import os
import socket
import ssl
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Protocol

from argocd_image_updater.kits.tlstrust import client_context
from argocd_image_updater.kube.errors import KubeConfigError
from argocd_image_updater.observe.log import get_logger

log = get_logger("kube")

INSECURE_WITH_CA: Final = (
    "specifying a root certificates file with the insecure flag is not allowed"
)
"""client-go's message for ``insecure-skip-tls-verify`` together with a CA."""

Pem = tuple[bytes, bytes]
"""A client certificate (chain) and its key, PEM."""


class CertSource(Protocol):
    """Where the client certificate comes from; :meth:`pem` is called before each request."""

    async def pem(self, refresh: bool) -> Pem: ...


@dataclass(frozen=True)
class TlsSettings:
    """What the cluster entry says about TLS (everything but the client certificate)."""

    ca_file: str = ""
    ca_data: bytes = b""
    insecure: bool = False
    server_name: str = ""

    def __post_init__(self) -> None:
        if self.insecure and (self.ca_file or self.ca_data):
            raise KubeConfigError(INSECURE_WITH_CA)

    def context(self, cert: Pem | None = None) -> ssl.SSLContext:
        """A client context: the CA trusted (else the system's), the client certificate
        loaded."""
        if self.insecure:
            if cert is None and not self.server_name:
                return client_context(insecure=True)
            context = _new_context(self.server_name)
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        elif self.ca_data or self.ca_file:
            context = verifying_context(
                ca_file=self.ca_file, ca_data=self.ca_data, server_name=self.server_name
            )
        elif cert is None and not self.server_name:
            return client_context()  # the system trust store, shared and loaded when first needed
        elif not self.server_name:
            context = ssl.create_default_context()
        else:
            context = _new_context(self.server_name)
            context.options |= ssl.OP_NO_COMPRESSION
            context.minimum_version = ssl.TLSVersion.TLSv1_2
            context.load_default_certs(ssl.Purpose.SERVER_AUTH)
        if cert is not None:
            _load_client_cert(context, cert)
        return context


class ClientTls:
    """The current SSL context: the same object while the client certificate holds, a new one
    when it changed."""

    def __init__(self, settings: TlsSettings, source: CertSource | None = None) -> None:
        self.settings, self.source = settings, source
        self._pem: Pem | None = None
        self._context: ssl.SSLContext | None = None

    @classmethod
    def fixed(cls, context: ssl.SSLContext) -> ClientTls:
        tls = cls(TlsSettings())
        tls._context = context
        return tls

    @property
    def rotates(self) -> bool:
        return self.source is not None

    async def start(self) -> ssl.SSLContext:
        """The first context (a certificate that does not load is a configuration error)."""
        if self._context is None:
            pem = await self.source.pem(False) if self.source is not None else None
            self._context = self.settings.context(pem if pem and pem[0] else None)
            self._pem = pem
        return self._context

    async def context(self, refresh: bool = False) -> ssl.SSLContext:
        """The context for the next request; rebuilt when the certificate changed. A new
        certificate that does not load (a rotation half done: the certificate written, not yet
        its key) keeps the last context, and is tried again at the next request."""
        current = await self.start()
        if self.source is None:
            return current
        pem = await self.source.pem(refresh)
        if pem == self._pem:
            return current
        try:
            context = self.settings.context(pem if pem[0] else None)
        except KubeConfigError as err:
            log.warning("the new client certificate is not used yet: %s", str(err))
            return current
        log.info("the client certificate changed: new connections use the new one")
        self._context, self._pem = context, pem
        return context


class CertFiles:
    """A client certificate from the kubeconfig: data, or files read again when they change."""

    def __init__(
        self, cert_file: str = "", key_file: str = "", cert_data: bytes = b"", key_data: bytes = b""
    ) -> None:
        if not (cert_file or cert_data):
            raise KubeConfigError("client-key is set without client-certificate")
        if not (key_file or key_data):
            which = "client-certificate" if cert_file else "client-certificate-data"
            raise KubeConfigError(f"{which} is set without client-key(-data)")
        self.cert_file, self.key_file = cert_file, key_file
        self.cert_data, self.key_data = cert_data, key_data
        self._stamp: tuple[tuple[int, int, int], ...] | None = None
        self._pem: Pem | None = None

    def _stat(self) -> tuple[tuple[int, int, int], ...]:
        stamps = []
        for name in (self.cert_file, self.key_file):
            if name:
                info = os.stat(name)
                stamps.append((info.st_mtime_ns, info.st_size, info.st_ino))
        return tuple(stamps)

    async def pem(self, refresh: bool) -> Pem:
        return self.current()

    def current(self) -> Pem:
        """The certificate and key, read again when a file changed (a ``stat`` of each)."""
        if self._pem is not None and not (self.cert_file or self.key_file):
            return self._pem
        try:
            stamp = self._stat()
            if self._pem is not None and stamp == self._stamp:
                return self._pem
            cert = self.cert_data or Path(self.cert_file).read_bytes()
            key = self.key_data or Path(self.key_file).read_bytes()
        except OSError as err:
            if self._pem is None:
                raise KubeConfigError(f"cannot read the client certificate: {err}") from None
            return self._pem  # being replaced: the last one until the new one is complete
        self._stamp, self._pem = stamp, (cert, key)
        return self._pem


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


def verifying_context(
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


def _load_client_cert(context: ssl.SSLContext, cert: Pem) -> None:
    """Load a client certificate and key. The ssl module reads only files: the PEM goes through
    a private temporary directory that is removed at once."""
    cert_pem, key_pem = cert
    try:
        with tempfile.TemporaryDirectory(prefix="kube-client-") as private:
            cert_path, key_path = Path(private) / "tls.crt", Path(private) / "tls.key"
            for target, content in ((cert_path, cert_pem), (key_path, key_pem)):
                fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                with os.fdopen(fd, "wb") as out:
                    out.write(content)
            context.load_cert_chain(str(cert_path), str(key_path))
    except (ssl.SSLError, OSError) as err:
        raise KubeConfigError(f"cannot load the client certificate: {err}") from None
