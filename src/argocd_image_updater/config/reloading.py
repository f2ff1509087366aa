"""Configuration files re-read when they change: ``registries.conf`` (and, through
:class:`WatchedFile`, the commit message template).

The chart mounts the settings ConfigMap as a directory, as the original does, so an edit of the
ConfigMap reaches the files without a restart (Kubernetes swaps the directory's ``..data``
symlink atomically). A file is checked (one ``stat``) whenever it is used; when its identity,
size or modification time changed, it is read again. An edited file that is not valid is
reported and the last good configuration stays in use.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from argocd_image_updater.config.registries import (
    DEFAULT_TLS_DIR,
    RegistriesConfError,
    RegistryConfig,
)
from argocd_image_updater.config.registries_file import load_registries_conf
from argocd_image_updater.model.registry import RegistryEndpoint
from argocd_image_updater.observe.log import get_logger

__all__ = ["ReloadingRegistryConfig", "WatchedFile"]

log = get_logger("config")

Signature = tuple[int, int, int, int]


class WatchedFile:
    """Tells whether a file changed since the last look (a missing file is a state too)."""

    __slots__ = ("_lock", "_signature", "path")

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._signature = self._stat()

    def _stat(self) -> Signature | None:
        try:
            st = os.stat(self.path)  # follows the ConfigMap's symlinks to the current file
        except OSError:
            return None
        return (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size)

    def changed(self) -> bool:
        """True once for every change (the caller re-reads the file then)."""
        signature = self._stat()
        with self._lock:
            if signature == self._signature:
                return False
            self._signature = signature
            return True


class ReloadingRegistryConfig(RegistryConfig):
    """A :class:`RegistryConfig` that follows edits of its ``registries.conf``."""

    __slots__ = ("_current", "_tls_dir", "_watch")

    def __init__(self, path: str | Path, *, tls_dir: str | Path = DEFAULT_TLS_DIR) -> None:
        """Load ``path`` (a missing file means the default registries); raise
        :class:`RegistriesConfError` when it is not valid."""
        super().__init__()
        self._tls_dir = tls_dir
        self._watch = WatchedFile(path)  # before reading: an edit in between is seen later
        self._current = load_registries_conf(path, missing_ok=True, tls_dir=tls_dir).config

    @property
    def path(self) -> Path:
        return self._watch.path

    def current(self) -> RegistryConfig:
        """The configuration of the file as it is now (or the last good one)."""
        if self._watch.changed():
            self._reload()
        return self._current

    def _reload(self) -> None:
        path = self._watch.path
        try:
            loaded = load_registries_conf(path, missing_ok=True, tls_dir=self._tls_dir)
        except (RegistriesConfError, OSError) as err:
            log.error(
                "registries configuration %s changed but cannot be used; "
                "keeping the previous one: %s",
                str(path),
                str(err),
            )
            return
        self._current = loaded.config
        log.info(
            "registries configuration reloaded",
            path=str(path),
            registries=len(loaded.config.endpoints),
        )

    def __repr__(self) -> str:
        return f"ReloadingRegistryConfig({str(self._watch.path)!r}, {self._current!r})"

    @property
    def endpoints(self) -> tuple[RegistryEndpoint, ...]:
        return self.current().endpoints

    @property
    def default_endpoint(self) -> RegistryEndpoint:
        return self.current().default_endpoint

    def endpoint_for(self, registry: str, image_name: str) -> RegistryEndpoint:
        return self.current().endpoint_for(registry, image_name)

    def with_overrides(
        self,
        registry: str,
        image_name: str,
        *,
        credentials: str | None = None,
        limit: float | None = None,
    ) -> RegistryConfig:
        return self.current().with_overrides(
            registry, image_name, credentials=credentials, limit=limit
        )
