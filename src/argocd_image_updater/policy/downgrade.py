"""Never downgrade: is the chosen tag ordered *below* the running one by the image's strategy?

A tag list can be incomplete while looking complete (a registry page that lost its ``Link``
header, a replica that has not seen the newest push yet). The strategy then picks the best tag
it was shown, which may be older than what runs. :func:`downgrade` tells, by the strategy's own
ordering:

* ``semver``: the chosen version has a lower precedence than the running one (both must be
  versions; ``1.0`` and ``v1.0.0`` are equal, not lower);
* ``alphabetical``: the chosen name sorts before the running one;
* ``newest-build``: the chosen build is older than the running one (both dates must be known:
  the running tag must be in the tag list, with its creation date or its list position);
* ``digest``: not applicable (the followed tag moves, its digest has no order).

When the running tag cannot be ordered (no tag, not a version, unknown date) nothing is said.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from argocd_image_updater.model.tags import TagInfo
from argocd_image_updater.policy.platforms import PlatformFilter
from argocd_image_updater.policy.select import build_date
from argocd_image_updater.policy.semver import Version
from argocd_image_updater.policy.strategy import Strategy


def _find(tags: Sequence[TagInfo], name: str) -> TagInfo | None:
    return next((tag for tag in reversed(tags) if tag.name == name), None)


def _older_build(
    running: str,
    chosen: TagInfo,
    tags: Sequence[TagInfo],
    order_hint: Mapping[str, int] | None,
    platforms: PlatformFilter,
) -> str | None:
    if order_hint is not None:
        old, new = order_hint.get(running), order_hint.get(chosen.name)
        if old is not None and new is not None and new < old:
            return (
                f"'{chosen.name}' is listed by the registry as older than the running '{running}'"
            )
        return None
    live = _find(tags, running)
    if live is None:
        return None
    old_date, new_date = build_date(live, platforms), build_date(chosen, platforms)
    if old_date is None or new_date is None or new_date >= old_date:
        return None
    return (
        f"'{chosen.name}' (built {new_date:%Y-%m-%dT%H:%M:%SZ}) is older than the running "
        f"'{running}' (built {old_date:%Y-%m-%dT%H:%M:%SZ})"
    )


def downgrade(
    strategy: Strategy,
    running: str | None,
    chosen: TagInfo,
    *,
    tags: Sequence[TagInfo] = (),
    order_hint: Mapping[str, int] | None = None,
    platforms: PlatformFilter | None = None,
) -> str | None:
    """Why ``chosen`` is below the ``running`` tag for ``strategy`` (a phrase naming both tags);
    ``None`` when it is not, or when the two cannot be ordered. ``tags`` and ``order_hint`` are
    the scan's, for ``newest-build``."""
    if not running or running == chosen.name:
        return None
    if strategy is Strategy.SEMVER:
        old, new = Version.parse(running), Version.parse(chosen.name)
        if old is None or new is None or new.precedence >= old.precedence:
            return None
        return f"'{chosen.name}' is a lower version than the running '{running}'"
    if strategy is Strategy.ALPHABETICAL:
        if chosen.name >= running:
            return None
        return f"'{chosen.name}' sorts before the running '{running}'"
    if strategy is Strategy.NEWEST_BUILD:
        return _older_build(running, chosen, tags, order_hint, platforms or PlatformFilter())
    return None
