"""Notifications as plain values (pure): the kinds of event a notification reports and the kinds
of receiver ("target types") a notification is sent to.

:class:`EventKind` is what a target's ``on`` list filters on; :data:`TARGET_TYPES` names the
receivers, each with one line for the docs. The ImageUpdater's ``notifications`` fields and the
ConfigMap default (``config.notifications``) are validated against them; each target type is one
module of ``notify/targets/`` (its payload and headers), found by ``notify/targets/__init__.py``.
Adding a type: describe it here, write its module, add it to the CRD's ``type`` enum
(``config/crd/bases``) and to the table of docs/notifications.md; a test checks all four agree.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Final


class EventKind(enum.StrEnum):
    """What a notification reports about one image of one Application."""

    UPDATED = "updated"
    """A new tag was written (the Application, or a commit/pull request in git)."""
    FAILED = "failed"
    """An image or the write-back failed (the reason code and message say why)."""
    HELD = "held"
    """An update was held back by a rule (emitted once update holds exist)."""
    VERIFICATION_FAILED = "verification-failed"
    """The chosen tag's signature did not verify: nothing was written."""
    SHIPPED = "shipped"
    """The new image is live: synced and healthy, running the new reference."""


EMITTED: Final = frozenset(
    {EventKind.UPDATED, EventKind.FAILED, EventKind.VERIFICATION_FAILED, EventKind.SHIPPED}
)
"""The kinds the controller emits today; ``held`` is accepted in ``on`` and sent once update
holds exist."""


@dataclass(frozen=True, slots=True)
class TargetType:
    """One kind of receiver: its ``type`` value, whether it can (``signing``) or must
    (``signing_required``) carry an HMAC signature, and one line for the docs."""

    name: str
    summary: str
    signing: bool = False
    signing_required: bool = False


TARGET_TYPES: Final[tuple[TargetType, ...]] = (
    TargetType("slack", "Slack incoming webhook: a Block Kit message with a `text` fallback"),
    TargetType("teams", "Microsoft Teams workflow webhook: an Adaptive Card in `attachments`"),
    TargetType(
        "webhook",
        "generic JSON POST, signed: `X-Signature-256: sha256=<hex>` over `<timestamp>.<body>`",
        signing=True,
        signing_required=True,
    ),
    TargetType(
        "cloudevents",
        "CloudEvents 1.0, structured mode (`application/cloudevents+json`), optionally signed",
        signing=True,
    ),
)
TARGET_TYPE_NAMES: Final = tuple(t.name for t in TARGET_TYPES)


def target_type(name: str) -> TargetType | None:
    for candidate in TARGET_TYPES:
        if candidate.name == name:
            return candidate
    return None
