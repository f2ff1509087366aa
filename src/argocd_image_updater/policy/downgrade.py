"""Never downgrade: is the chosen tag ordered *below* the running one by the image's strategy?

A tag list can be incomplete while looking complete (a registry page that lost its ``Link``
header, a replica that has not seen the newest push yet). The strategy then picks the best tag
it was shown, which may be older than what runs. :func:`downgrade` asks the strategy (each
strategy module says what "below" means for it; ``digest`` has no order). When the running tag
cannot be ordered (no tag, not a version, unknown date) nothing is said.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from argocd_image_updater.model.platform import PlatformFilter
from argocd_image_updater.model.tags import TagInfo
from argocd_image_updater.policy.strategies import UpdateStrategy


def downgrade(
    strategy: UpdateStrategy,
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
    return strategy.downgrade(running, chosen, tags, order_hint, platforms or PlatformFilter())
