"""The ``commonUpdateSettings`` of one scope, or merged over scopes (pure).

Its own module: both an Application's update configuration (``model.update_config``) and a
chart's (``model.chart``) carry one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Final

DEFAULT_STRATEGY: Final = "semver"

SETTING_FIELDS: Final[Mapping[str, str]] = MappingProxyType(
    {
        "strategy": "updateStrategy",
        "force_update": "forceUpdate",
        "allow_tags": "allowTags",
        "ignore_tags": "ignoreTags",
        "pull_secret": "pullSecret",
        "platforms": "platforms",
        "allow_downgrade": "allowDowngrade",
        "pin_digest": "pinDigest",
        "min_age": "minAge",
        "min_age_from": "minAgeFrom",
    }
)
"""``UpdateSettings`` attribute → ``commonUpdateSettings`` field name."""

_EMPTY: Mapping[str, str] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class UpdateSettings:
    """``CommonUpdateSettings`` of one scope, or merged; ``None`` means "inherit".

    ``origins`` maps a set attribute to where its value was set, e.g. ``ImageUpdater ns/name
    field spec.commonUpdateSettings.pullSecret`` (see :meth:`where`); it takes no part in
    comparisons.
    """

    strategy: str | None = None
    force_update: bool | None = None
    allow_tags: str | None = None
    ignore_tags: tuple[str, ...] | None = None
    pull_secret: str | None = None
    platforms: tuple[str, ...] | None = None
    allow_downgrade: bool | None = None
    pin_digest: bool | None = None
    min_age: str | None = None
    """A Go duration: tags younger than this are not chosen (``policy.min_age``)."""
    min_age_from: str | None = None
    """``seen`` (default) or ``created``: where a tag's age counts from."""
    origins: Mapping[str, str] = field(default_factory=lambda: _EMPTY, compare=False, hash=False)

    def merged(self, over: UpdateSettings | None) -> UpdateSettings:
        """``self`` with every field that ``over`` sets replaced by ``over``'s value."""
        if over is None:
            return self
        values: dict[str, Any] = {}
        origins = dict(self.origins)
        for name in SETTING_FIELDS:
            value = getattr(over, name)
            if value is None:
                continue
            values[name] = value
            origins.pop(name, None)
            if name in over.origins:
                origins[name] = over.origins[name]
        return replace(self, **values, origins=MappingProxyType(origins))

    def with_origins(self, prefix: str) -> UpdateSettings:
        """The same settings, each set field located at ``<prefix>.<fieldName>``."""
        origins = {
            name: f"{prefix}.{camel}"
            for name, camel in SETTING_FIELDS.items()
            if getattr(self, name) is not None
        }
        return replace(self, origins=MappingProxyType(origins))

    def where(self, name: str) -> str:
        """Where the value of attribute ``name`` was set; ``commonUpdateSettings.<field>`` when
        unknown."""
        return self.origins.get(name) or f"commonUpdateSettings.{SETTING_FIELDS[name]}"

    @classmethod
    def merge(cls, *scopes: UpdateSettings | None) -> UpdateSettings:
        """Merge scopes in order (the last one that sets a field wins)."""
        result = cls()
        for scope in scopes:
            result = result.merged(scope)
        return result

    @property
    def is_empty(self) -> bool:
        return self == UpdateSettings()

    @property
    def effective_strategy(self) -> str:
        """The strategy name as configured, ``semver`` when unset or blank."""
        return self.strategy if self.strategy else DEFAULT_STRATEGY

    @property
    def effective_force_update(self) -> bool:
        return bool(self.force_update)

    @property
    def effective_allow_tags(self) -> str:
        """The match function text; ``""`` allows every tag."""
        return self.allow_tags or ""

    @property
    def effective_ignore_tags(self) -> tuple[str, ...]:
        return self.ignore_tags or ()

    @property
    def effective_pull_secret(self) -> str:
        """The credential reference; ``""`` means anonymous / registry defaults."""
        return self.pull_secret or ""

    @property
    def effective_platforms(self) -> tuple[str, ...]:
        """Platform constraints; ``()`` means the updater's own runtime platform."""
        return self.platforms or ()

    @property
    def effective_allow_downgrade(self) -> bool:
        """Whether a tag ordered below the running one may be written (default: never)."""
        return bool(self.allow_downgrade)

    @property
    def effective_pin_digest(self) -> bool:
        """Whether the chosen tag is written with its digest, ``tag@sha256:…`` (default: no)."""
        return bool(self.pin_digest)
