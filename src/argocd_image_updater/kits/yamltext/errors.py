"""The errors of the YAML text engine."""

from __future__ import annotations


class YamlEditError(ValueError):
    """The edit cannot be made; the message names the path and, where known, line and column."""


class OutOfRange(YamlEditError):
    """A sequence index outside the sequence."""


class YamlPatchError(ValueError):
    """The patch cannot be applied to the file; names the JSON pointer and, where known, the
    line and column."""
