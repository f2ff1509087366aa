"""Keeping a resource watched the way client-go's reflector does: :func:`follow`. The events
of one watch are read by :mod:`argocd_image_updater.kube.watch_stream`."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from argocd_image_updater.kube.client import Kind, KubeClient
from argocd_image_updater.kube.errors import KubeError
from argocd_image_updater.observe.log import get_logger

log = get_logger("kube")


def _version(obj: dict[str, Any], default: str) -> str:
    meta = obj.get("metadata")
    return str(meta.get("resourceVersion") or default) if isinstance(meta, dict) else default


async def follow(
    client: KubeClient,
    kind: Kind,
    namespace: str | None,
    timeout_seconds: int = 300,
    field_selector: str = "",
    label_selector: str = "",
) -> AsyncIterator[tuple[str, dict[str, Any]]]:
    """Every change of ``kind`` in ``namespace`` (None: all; ``field_selector`` narrows it, e.g.
    to one object: ``metadata.name=x``, and so does ``label_selector``), for ever: a list first (its
    objects as ``ADDED``), then watches, each resumed from the version of the last event or
    bookmark the one before delivered; a version too old (410 Gone) is listed again. After
    each list a ``BOOKMARK`` (an object with only ``metadata.resourceVersion``) is yielded too,
    and so are the server's bookmarks: each says that the watch is alive. Any other failure
    ends the iteration (as a :class:`KubeError`)."""
    version = ""
    while True:
        if not version:
            items, version = await client.list_objects(
                kind, namespace, label_selector=label_selector, field_selector=field_selector
            )
            for item in items:
                yield "ADDED", item
            del items
            yield "BOOKMARK", {"metadata": {"resourceVersion": version}}
        try:
            async for event, obj in client.watch_objects(
                kind, namespace, version, timeout_seconds, field_selector, label_selector
            ):
                version = _version(obj, version)
                yield event, obj
        except KubeError as err:
            if err.status != 410:
                raise
            log.info("the watch of %s fell behind (%s); listing again", kind[2], str(err))
            version = ""
