"""Reading Kubernetes-style secrets (``namespace/name`` → fields) behind a small interface.

Credential references ``secret:`` and ``pullsecret:`` read through a :class:`SecretReader`. The
controller passes one backed by the Kubernetes API; the ``test`` command and the tests use
:class:`FileSecretReader`, which reads a directory laid out like mounted secrets.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Final, Protocol

# Kubernetes object names: namespaces are DNS labels, secret names DNS subdomains.
_NAMESPACE_RE: Final = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
_NAME_RE: Final = re.compile(r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?")
# Secret data keys.
_FIELD_RE: Final = re.compile(r"[-._a-zA-Z0-9]{1,253}")


class SecretError(Exception):
    """A secret or one of its fields could not be read."""


class SecretNotFound(SecretError):
    def __init__(self, namespace: str, name: str) -> None:
        super().__init__(f"secret '{namespace}/{name}' not found")
        self.namespace = namespace
        self.name = name


class SecretFieldNotFound(SecretError):
    def __init__(self, namespace: str, name: str, field: str) -> None:
        super().__init__(f"secret '{namespace}/{name}' does not have a field '{field}'")
        self.namespace = namespace
        self.name = name
        self.field = field


class SecretReader(Protocol):
    async def read(self, namespace: str, name: str) -> Mapping[str, bytes]:
        """All fields of secret ``namespace/name`` (decoded bytes); :class:`SecretNotFound`."""
        ...


def is_valid_namespace(namespace: str) -> bool:
    return _NAMESPACE_RE.fullmatch(namespace) is not None


def is_valid_secret_name(name: str) -> bool:
    return _NAME_RE.fullmatch(name) is not None


def is_valid_field(field: str) -> bool:
    return _FIELD_RE.fullmatch(field) is not None and field not in (".", "..")


async def read_field(reader: SecretReader, namespace: str, name: str, field: str) -> bytes:
    """One field of a secret; :class:`SecretNotFound` or :class:`SecretFieldNotFound`."""
    data = await reader.read(namespace, name)
    try:
        return data[field]
    except KeyError:
        raise SecretFieldNotFound(namespace, name, field) from None


class FileSecretReader:
    """Secrets as files: field ``f`` of secret ``ns/name`` is the file ``<root>/ns/name/f``.

    This is the layout of a secret mounted into a pod, one directory per secret; Kubernetes'
    internal ``..data`` entries are skipped. Names that are not valid Kubernetes names are
    refused, so a reference can never reach outside ``root``.
    """

    def __init__(self, root: str | Path) -> None:
        self._root = Path(root)

    def __repr__(self) -> str:
        return f"FileSecretReader(root={str(self._root)!r})"

    async def read(self, namespace: str, name: str) -> Mapping[str, bytes]:
        if not is_valid_namespace(namespace):
            raise SecretError(
                f"invalid secret namespace '{namespace}': use a Kubernetes namespace name "
                "(lower-case letters, digits and '-')"
            )
        if not is_valid_secret_name(name):
            raise SecretError(
                f"invalid secret name '{name}': use a Kubernetes object name "
                "(lower-case letters, digits, '-' and '.')"
            )
        return await asyncio.to_thread(self._read_dir, namespace, name)

    def _read_dir(self, namespace: str, name: str) -> Mapping[str, bytes]:
        directory = self._root / namespace / name
        if not directory.is_dir():
            raise SecretNotFound(namespace, name)
        data: dict[str, bytes] = {}
        for entry in sorted(directory.iterdir()):
            if entry.name.startswith("..") or not is_valid_field(entry.name):
                continue
            if entry.is_file():
                data[entry.name] = entry.read_bytes()
        return MappingProxyType(data)
