"""Container image platforms (``os/arch[/variant]``)."""

from __future__ import annotations

from dataclasses import dataclass


class PlatformError(ValueError):
    """A platform string that is not ``os/arch[/variant]``."""


@dataclass(frozen=True, slots=True, order=True)
class Platform:
    os: str
    arch: str = ""
    variant: str = ""

    @classmethod
    def parse(cls, text: str) -> Platform:
        """Parse ``os/arch[/variant]``; raise :class:`PlatformError` naming the input otherwise."""
        parts = text.strip().split("/")
        if len(parts) not in (2, 3) or not all(parts):
            raise PlatformError(
                f"could not parse platform constraint '{text}': expected os/arch[/variant]"
            )
        return cls(parts[0], parts[1], parts[2] if len(parts) == 3 else "")

    def __str__(self) -> str:
        return "/".join(p for p in (self.os, self.arch, self.variant) if p)
