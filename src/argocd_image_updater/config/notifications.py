"""The ``notifications`` section: of an ImageUpdater (``spec.notifications``) and, with the same
shape, the process-wide default (the ConfigMap key ``notifications.yaml``).

.. code-block:: yaml

    targets:
      - name: team-chat
        type: slack
        urlSecret: {secretName: notifications, key: slack-url}
        on: [updated, failed]
      - name: audit
        type: webhook
        urlSecret: {secretName: notifications, key: audit-url}
        signingSecret: {secretName: notifications, key: audit-signing-key}

Receiver URLs are always read from Secrets (an ImageUpdater's from its own namespace, the
default's from the controller's), never written in clear. The models validate what the CRD
validates, with the same messages, so a file fails the way the API server would refuse it.
"""

from __future__ import annotations

import re
from typing import Final

from pydantic import Field, field_validator, model_validator

from argocd_image_updater.config.cr_validation import CRModel, invalid
from argocd_image_updater.model.notifications import (
    TARGET_TYPE_NAMES,
    EventKind,
    target_type,
)

NAME_PATTERN: Final = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
NAME_MAX: Final = 63
_NAME_RE: Final = re.compile(NAME_PATTERN)
MAX_TARGETS: Final = 20
MSG_SIGNING_REQUIRED: Final = "signingSecret is required for type webhook"
MSG_SIGNING_UNUSED: Final = "signingSecret applies to types webhook and cloudevents only"


class SecretKeyRef(CRModel):
    """A key of a Secret (in the ImageUpdater's namespace; the default's: the controller's)."""

    secret_name: str = Field(min_length=1, max_length=253)
    key: str = Field(min_length=1, max_length=253)


class NotificationTarget(CRModel):
    name: str
    type: str
    url_secret: SecretKeyRef
    signing_secret: SecretKeyRef | None = None
    on: list[str] | None = None
    """The event kinds sent to this target; None: every kind."""

    @field_validator("name")
    @classmethod
    def _name_pattern(cls, name: str) -> str:
        if len(name) > NAME_MAX or not _NAME_RE.match(name):
            raise invalid(
                f"{name!r} does not match {NAME_PATTERN}: use lower-case letters, digits and "
                "'-' (at most 63 characters)"
            )
        return name

    @field_validator("type")
    @classmethod
    def _known_type(cls, value: str) -> str:
        if target_type(value) is None:
            raise invalid(
                f"unsupported value {value!r}: supported values: {', '.join(TARGET_TYPE_NAMES)}"
            )
        return value

    @field_validator("on")
    @classmethod
    def _known_events(cls, kinds: list[str] | None) -> list[str] | None:
        known = [k.value for k in EventKind]
        seen: set[str] = set()
        for i, kind in enumerate(kinds or ()):
            if kind not in known:
                raise invalid(
                    f"unsupported value {kind!r}: supported values: {', '.join(known)}", f"[{i}]"
                )
            if kind in seen:
                raise invalid(f"duplicate value {kind!r}", f"[{i}]")
            seen.add(kind)
        return kinds

    @model_validator(mode="after")
    def _signing(self) -> NotificationTarget:
        described = target_type(self.type)
        assert described is not None  # checked by _known_type
        if described.signing_required and self.signing_secret is None:
            raise invalid(MSG_SIGNING_REQUIRED, "signingSecret")
        if not described.signing and self.signing_secret is not None:
            raise invalid(MSG_SIGNING_UNUSED, "signingSecret")
        return self

    @property
    def events(self) -> frozenset[EventKind]:
        """The kinds this target receives."""
        if self.on is None:
            return frozenset(EventKind)
        return frozenset(EventKind(kind) for kind in self.on)


class Notifications(CRModel):
    targets: list[NotificationTarget] = Field(max_length=MAX_TARGETS)
    """An empty list sends nothing (an ImageUpdater opts out of the ConfigMap default)."""

    @model_validator(mode="after")
    def _unique_names(self) -> Notifications:
        seen: set[str] = set()
        for i, target in enumerate(self.targets):
            if target.name in seen:
                raise invalid(
                    f"duplicate name '{target.name}': each target needs its own name",
                    f"targets[{i}].name",
                )
            seen.add(target.name)
        return self
