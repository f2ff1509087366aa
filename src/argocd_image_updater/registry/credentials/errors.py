"""The error of credential fetching."""

from __future__ import annotations


class CredentialsError(Exception):
    """Credentials could not be fetched; the message never holds a secret value."""
