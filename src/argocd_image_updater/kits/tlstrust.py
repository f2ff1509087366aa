"""Client TLS contexts that load the system trust store only when a TLS handshake needs it.

Loading the system certificate store costs tens of milliseconds (more on a busy machine), and an
HTTP client needs its context when it is built, long before it knows whether it will ever speak
TLS: a plain-http registry never does. :class:`LazyTrustContext` verifies certificates exactly like
:func:`ssl.create_default_context` but loads the default CAs at its first handshake, and
:func:`client_context` hands out one shared context per CA bundle, so a process loads the store at
most once per bundle however many clients it builds.
"""

from __future__ import annotations

import hashlib
import os
import ssl
import threading
from typing import Any

__all__ = ["CABundleError", "LazyTrustContext", "client_context", "default_loads"]


class CABundleError(ValueError):
    """Extra CAs that do not load: ``field`` is ``ca_file`` or ``ca_data``."""

    def __init__(self, field: str, detail: str) -> None:
        super().__init__(f"{field}: {detail}")
        self.field = field
        self.detail = detail


_loads = 0
_loads_lock = threading.Lock()


def default_loads() -> int:
    """How many times this process has loaded the system trust store through this module."""
    return _loads


class LazyTrustContext(ssl.SSLContext):
    """A verifying client context whose system CAs are loaded by the first handshake.

    Extra CAs (``load_verify_locations``) load at once, so a bad CA file fails where it is
    configured. With ``verify_mode`` set to ``CERT_NONE`` nothing is ever loaded.
    """

    _trust_loaded: bool
    _trust_lock: threading.Lock

    def __new__(cls, *args: Any, **kwargs: Any) -> LazyTrustContext:
        context = super().__new__(cls, ssl.PROTOCOL_TLS_CLIENT)
        context._trust_loaded = False
        context._trust_lock = threading.Lock()
        # The options create_default_context sets for a client (the protocol already implies
        # check_hostname and CERT_REQUIRED).
        context.options |= ssl.OP_NO_COMPRESSION
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        return context

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    @property
    def trust_loaded(self) -> bool:
        """Whether the system trust store has been loaded into this context."""
        return self._trust_loaded

    def _load_trust(self) -> None:
        global _loads
        if self._trust_loaded or self.verify_mode == ssl.CERT_NONE:
            return
        with self._trust_lock:
            if self._trust_loaded:
                return
            self.load_default_certs(ssl.Purpose.SERVER_AUTH)
            self._trust_loaded = True
        with _loads_lock:
            _loads += 1

    def wrap_socket(self, *args: Any, **kwargs: Any) -> ssl.SSLSocket:
        self._load_trust()
        return super().wrap_socket(*args, **kwargs)

    def wrap_bio(self, *args: Any, **kwargs: Any) -> ssl.SSLObject:
        self._load_trust()
        return super().wrap_bio(*args, **kwargs)


_shared: dict[tuple[bool, str, str], LazyTrustContext] = {}
_shared_lock = threading.Lock()


def client_context(
    *, insecure: bool = False, ca_file: str = "", ca_data: str = ""
) -> LazyTrustContext:
    """The process-wide client context for these settings, built on first use and then shared.

    ``ca_file``/``ca_data`` are trusted in addition to the system store. A missing ``ca_file``
    raises ``FileNotFoundError``; one that holds no certificate raises :class:`CABundleError`
    naming the argument. ``insecure`` turns verification off and loads nothing.
    """
    key = (insecure, "" if insecure else _file_key(ca_file), "" if insecure else _digest(ca_data))
    with _shared_lock:
        found = _shared.get(key)
        if found is not None:
            return found
        context = LazyTrustContext()
        if insecure:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        else:
            if ca_file:
                try:
                    context.load_verify_locations(cafile=ca_file)
                except FileNotFoundError:
                    raise
                except (ssl.SSLError, OSError) as exc:
                    raise CABundleError("ca_file", str(exc)) from None
            if ca_data:
                try:
                    context.load_verify_locations(cadata=ca_data)
                except (ssl.SSLError, ValueError) as exc:
                    raise CABundleError("ca_data", str(exc)) from None
        _shared[key] = context
        return context


def _file_key(path: str) -> str:
    """The path with its size and modification time, so a CA file changed on disk loads anew."""
    if not path:
        return ""
    stat = os.stat(path)
    return f"{path}\0{stat.st_size}\0{stat.st_mtime_ns}"


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest() if text else ""
