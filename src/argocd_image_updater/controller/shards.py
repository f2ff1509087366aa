"""Which replica processes what: rendezvous hashing of shard keys over the live members, and the
static shard label (``--shard-selector``).

A shard key is an ImageUpdater (``namespace/name``): all of its Applications, its status and its
git batches stay on one replica. An Application updated through its v0.x annotations is its own
key. Rendezvous (highest-random-weight) hashing gives each key to the member with the highest
``blake2b(member, key)``: every member computes the same owner from the same member set, and when
a member joins or leaves only the keys it gains or had move (about ``1/n`` of them).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Collection, Mapping
from typing import Any, Final

from argocd_image_updater.model.update_config import AppUpdateConfig
from argocd_image_updater.pipeline.records import Collected, CRState

SHARD_LABEL: Final = "argocd-image-updater.argoproj.io/shard"
SHARD_ANNOTATION: Final = "argocd-image-updater.argoproj.io/shard-selector"
"""On a member Lease: the ``--shard-selector`` of its replica (members of one static shard share
their keys among themselves only)."""
UNLABELLED: Final = "!"
"""``--shard-selector !``: only objects without the shard label (not a valid label value)."""


def weight(member: str, key: str) -> int:
    """The rendezvous weight of ``key`` on ``member`` (stable across processes and versions)."""
    digest = hashlib.blake2b(
        member.encode() + b"\0" + key.encode(), digest_size=8, person=b"aiu-shard"
    ).digest()
    return int.from_bytes(digest, "big")


def owner(key: str, members: Collection[str]) -> str | None:
    """The member that owns ``key`` (the highest weight; ties by name), None without members."""
    if not members:
        return None
    return max(members, key=lambda member: (weight(member, key), member))


def shard_matches(selector: str | None, labels: Mapping[str, Any] | None) -> bool:
    """Whether an object with ``labels`` belongs to the static shard ``selector``: None (no
    ``--shard-selector``) takes every object; ``!`` those without the shard label; any other
    value those labelled with it."""
    if selector is None:
        return True
    value = (labels or {}).get(SHARD_LABEL)
    if selector == UNLABELLED:
        return value is None
    return value == selector


def leader_lease_name(selector: str | None, default: str) -> str:
    """The leader election Lease of the static shard ``selector``: ``default`` without one, else
    ``shard-<value>-<hash>.<default>`` (one leader per static shard; the hash keeps values that
    read alike apart, ``!`` reads ``unlabelled``)."""
    if selector is None:
        return default
    readable = "unlabelled" if selector == UNLABELLED else selector.lower()
    readable = "".join(c if c.isalnum() else "-" for c in readable).strip("-")[:40]
    digest = hashlib.blake2b(selector.encode(), digest_size=3).hexdigest()
    return f"shard-{readable + '-' if readable else ''}{digest}.{default}"


def _labels(raw: Mapping[str, Any]) -> Mapping[str, Any] | None:
    meta = raw.get("metadata")
    labels = meta.get("labels") if isinstance(meta, Mapping) else None
    return labels if isinstance(labels, Mapping) else None


def keep_shard(
    collected: Collected, selector: str | None, owns: Callable[[str], bool] | None
) -> set[str]:
    """Narrow ``collected`` in place to this replica's share: ImageUpdaters (with their
    Applications) and v0.x-annotated Applications in the static shard ``selector`` whose key
    ``owns`` accepts (None: every key). Returns the keys kept. What was listed stays as it was
    (it tells which Applications still exist, whoever processes them); the Applications left to
    other replicas go to ``collected.elsewhere``, and those of the static shard among them also
    to ``collected.others``."""

    in_shard = [cr for cr in collected.crs if shard_matches(selector, _labels(cr.raw))]
    crs = [cr for cr in in_shard if owns is None or owns(f"{cr.namespace}/{cr.name}")]
    cr_keys = {f"{cr.namespace}/{cr.name}" for cr in crs}
    shard_keys = {f"{cr.namespace}/{cr.name}" for cr in in_shard}
    keys = set(cr_keys)
    configs: list[tuple[AppUpdateConfig, CRState | None]] = []
    others: list[AppUpdateConfig] = []
    elsewhere: set[str] = set()
    for config, state in collected.configs:
        app = f"{config.app.namespace}/{config.app.name}"
        if state is not None:
            key = f"{state.namespace}/{state.name}"
            mine, ours = key in cr_keys, key in shard_keys
        else:
            ours = shard_matches(selector, config.app.labels)
            mine = ours and (owns is None or owns(app))
            if mine:
                keys.add(app)
        if mine:
            configs.append((config, state))
            continue
        elsewhere.add(app)
        if ours:
            others.append(config)
    collected.crs, collected.configs, collected.others = crs, configs, others
    collected.elsewhere = elsewhere - {f"{c.app.namespace}/{c.app.name}" for c, _ in configs}
    return keys
