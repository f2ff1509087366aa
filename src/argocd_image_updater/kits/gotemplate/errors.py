"""The errors of the template engine."""

from __future__ import annotations


class TemplateError(ValueError):
    """A template could not be parsed or executed; the message carries ``name:line:col``."""


class ExecError(Exception):
    """A failure while executing one command; reported as a :class:`TemplateError` with its
    position by the executor."""
