"""The errors of pull/merge request API calls.

Their messages name the host, the method and the API path, never a token (tokens are registered
with the log redactor, and every message from a server passes through it as well).
"""

from __future__ import annotations

from argocd_image_updater.observe.log import redact


class ScmError(Exception):
    """A pull/merge request API call failed; ``status`` is the HTTP status, if there was one."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(redact(message))
        self.status = status


class ScmAuthError(ScmError):
    """The token was refused (401) or lacks a permission (403)."""


class ScmNotFoundError(ScmError):
    """The repository, project or request does not exist, or the token cannot see it (404)."""


class ScmRateLimitError(ScmError):
    """The API rate limit is exhausted; ``retry_after`` seconds until it resets, if known."""

    def __init__(self, message: str, *, status: int | None, retry_after: float | None) -> None:
        super().__init__(message, status=status)
        self.retry_after = retry_after
