"""The errors of the template engine."""

from __future__ import annotations


class TemplateError(ValueError):
    """A template could not be parsed or executed; the message carries ``name:line:col``."""


class LimitError(TemplateError):
    """An expansion went past one of its :class:`~.limits.Limits`."""


class OutputLimitError(LimitError):
    """An expansion wrote, or a function built, more text than ``Limits.max_output`` allows."""


class StepLimitError(LimitError):
    """An expansion took more execution steps than ``Limits.max_steps`` allows."""


class ExecError(Exception):
    """A failure while executing one command; reported as a :class:`TemplateError` with its
    position by the executor."""


class TextTooLong(Exception):
    """Raised by the formatting functions when the text they build passes their ``limit``;
    the executor reports it as an :class:`OutputLimitError`."""
