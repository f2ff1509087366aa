"""Container image platforms (``os/arch[/variant]``), the platform this process runs on, and
the filter of wanted platforms.

The filter only matters for tags whose manifests were fetched (strategies ``newest-build`` and
``digest``); ``semver`` and ``alphabetical`` choose from tag names alone, as in the original.
"""

from __future__ import annotations

import functools
import platform as _host
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final


class PlatformError(ValueError):
    """A platform string that is not ``os/arch[/variant]``."""


@dataclass(frozen=True, slots=True, order=True)
class Platform:
    """One platform, ``os/arch[/variant]`` (``arch`` and ``variant`` may be empty)."""

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


_ARCH_ALIASES: Final = {
    "x86_64": Platform("", "amd64"),
    "amd64": Platform("", "amd64"),
    "aarch64": Platform("", "arm64"),
    "arm64": Platform("", "arm64"),
    "armv8l": Platform("", "arm64"),
    "armv7l": Platform("", "arm", "v7"),
    "armv7": Platform("", "arm", "v7"),
    "armv6l": Platform("", "arm", "v6"),
    "armv5tel": Platform("", "arm", "v5"),
    "i386": Platform("", "386"),
    "i686": Platform("", "386"),
    "ppc64le": Platform("", "ppc64le"),
    "s390x": Platform("", "s390x"),
    "riscv64": Platform("", "riscv64"),
    "mips64": Platform("", "mips64"),
    "loongarch64": Platform("", "loong64"),
}
_OS_ALIASES: Final = {"linux": "linux", "darwin": "darwin", "win32": "windows", "cygwin": "windows"}


def platform_key(os: str, arch: str, variant: str = "") -> str:
    """``os/arch`` or ``os/arch/variant``."""
    return f"{os}/{arch}/{variant}" if variant else f"{os}/{arch}"


@functools.cache
def runtime_platform() -> Platform:
    """The platform this process runs on, in Go's naming (``linux/amd64``, ``linux/arm/v7``)."""
    os_name = _OS_ALIASES.get(sys.platform, sys.platform)
    machine = _host.machine().lower()
    arch = _ARCH_ALIASES.get(machine, Platform("", machine))
    return Platform(os_name, arch.arch, arch.variant)


class PlatformFilter:
    """The wanted platforms; an empty filter wants every platform.

    A platform is wanted when its ``os/arch/variant`` is listed, or when it has a variant and its
    ``os/arch`` is listed (``linux/arm`` admits ``linux/arm/v7``). Strings that are not
    ``os/arch[/variant]`` stay in the filter but match nothing, so a typo never widens it.
    """

    __slots__ = ("_invalid", "_keys", "_wanted")

    def __init__(self, platforms: Iterable[Platform | str] = ()) -> None:
        wanted: set[Platform] = set()
        invalid: list[str] = []
        for entry in platforms:
            if isinstance(entry, Platform):
                parsed = entry
            else:
                try:
                    parsed = Platform.parse(entry)
                except PlatformError:
                    invalid.append(entry)
                    continue
            wanted.add(parsed)
        self._wanted = tuple(sorted(wanted))
        self._keys = frozenset(platform_key(p.os, p.arch, p.variant) for p in wanted)
        self._invalid = tuple(sorted(set(invalid)))

    @classmethod
    def runtime(cls) -> PlatformFilter:
        """The original's default: only this process's own platform."""
        return cls([runtime_platform()])

    @property
    def platforms(self) -> tuple[Platform, ...]:
        """The wanted platforms, sorted (without the unparsable entries, see :attr:`invalid`)."""
        return self._wanted

    @property
    def keys(self) -> list[str]:
        """Every entry as text, sorted: ``os/arch[/variant]`` and unparsable ones verbatim."""
        return sorted([*self._keys, *self._invalid])

    @property
    def invalid(self) -> tuple[str, ...]:
        """Entries that are not ``os/arch[/variant]`` (they match nothing)."""
        return self._invalid

    def wants(self, p: Platform) -> bool:
        if not self:
            return True
        if platform_key(p.os, p.arch, p.variant) in self._keys:
            return True
        return bool(p.variant) and platform_key(p.os, p.arch) in self._keys

    def wants_any(self, platforms: Sequence[Platform]) -> bool:
        return any(self.wants(p) for p in platforms)

    def __bool__(self) -> bool:
        return bool(self._keys or self._invalid)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PlatformFilter):
            return NotImplemented
        return (self._keys, self._invalid) == (other._keys, other._invalid)

    def __hash__(self) -> int:
        return hash((self._keys, self._invalid))

    def __repr__(self) -> str:
        return f"PlatformFilter({self.keys!r})"

    def __str__(self) -> str:
        return ", ".join(self.keys) if self else "any platform"
