"""Errors raised when talking to a registry.

Every error names the registry (``host[:port]``) and, when known, the repository, and its message
ends with what to do about it.
"""

from __future__ import annotations


class RegistryError(Exception):
    """Base class: something went wrong talking to ``registry`` about ``repository``."""

    def __init__(self, message: str, *, registry: str, repository: str = "") -> None:
        super().__init__(message)
        self.registry = registry
        self.repository = repository


def _where(registry: str, repository: str) -> str:
    if repository:
        return f"registry {registry}, repository '{repository}'"
    return f"registry {registry}"


class RegistryAuthError(RegistryError):
    """401/403 or an ``UNAUTHORIZED``/``DENIED`` error code: the credentials were refused."""

    def __init__(
        self, *, registry: str, repository: str = "", status: int = 0, detail: str = ""
    ) -> None:
        what = f"HTTP {status}" if status else "authentication failed"
        if detail:
            what = f"{what}: {detail}"
        super().__init__(
            f"access denied by {_where(registry, repository)} ({what}); check the credentials "
            "configured for this registry (registries.conf 'credentials') or image ('pullSecret') "
            "and that they may pull this repository",
            registry=registry,
            repository=repository,
        )
        self.status = status


class RepositoryNotFound(RegistryError):
    """``NAME_UNKNOWN``: the repository does not exist (or is hidden from these credentials)."""

    def __init__(self, *, registry: str, repository: str) -> None:
        super().__init__(
            f"repository '{repository}' not found in registry {registry} (NAME_UNKNOWN); check the "
            "image name and the registry's 'defaultns'",
            registry=registry,
            repository=repository,
        )


class ManifestNotFound(RegistryError):
    """``MANIFEST_UNKNOWN`` / 404 for a tag or digest."""

    def __init__(
        self, *, registry: str, repository: str, reference: str, what: str = "manifest"
    ) -> None:
        super().__init__(
            f"{what} '{reference}' not found in {_where(registry, repository)}; the tag may have "
            "been deleted or moved, check the image reference",
            registry=registry,
            repository=repository,
        )
        self.reference = reference


class RegistryUnavailable(RegistryError):
    """Connection errors, timeouts, 5xx or 429 that persisted through every retry."""


class RegistryTLSError(RegistryError):
    """The registry's TLS certificate could not be verified (never retried)."""

    def __init__(self, *, registry: str, repository: str = "", detail: str) -> None:
        super().__init__(
            f"TLS certificate of {_where(registry, repository)} could not be verified ({detail}); "
            "give the registry's CA with 'ca_file' or 'ca_data' in registries.conf "
            "('insecure: true' disables verification and is meant for testing only)",
            registry=registry,
            repository=repository,
        )


class RegistryPlainHTTPError(RegistryError):
    """The registry answered the TLS handshake in plain HTTP (never retried)."""

    def __init__(self, *, registry: str, prefix: str, repository: str = "", detail: str) -> None:
        super().__init__(
            f"registry {registry} speaks plain HTTP, not HTTPS ({detail}); if that is intended, "
            f"set 'api_url: http://{registry}' in its registries.conf entry (prefix: {prefix}), "
            "or pass --plain-http to the test command",
            registry=registry,
            repository=repository,
        )


class RegistryProtocolError(RegistryError):
    """The registry answered with something that is not valid registry API output."""


class RegistryConfigError(RegistryError):
    """The endpoint settings cannot be used (e.g. an unreadable ``ca_file``)."""


class InvalidReference(RegistryError):
    """A repository name, tag or digest that the registry API cannot take."""
