"""What a registry scan is asked (:class:`ScanRequest`) and answers (:class:`ScanResult`), and a
scan answered at once from a tag list already at hand (:class:`AtOnce`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import NamedTuple

from argocd_image_updater.model.platform import Platform
from argocd_image_updater.model.registry import CredentialProvider, RegistryEndpoint
from argocd_image_updater.model.tags import TagInfo
from argocd_image_updater.registry.cache import TagListKey


@dataclass(frozen=True, slots=True)
class ScanRequest:
    """What to find out about one repository.

    ``repository`` is the image name as configured; the scanner applies the endpoint's
    ``defaultns``. ``platforms`` selects the index children whose config is fetched (empty = all);
    ``only_tags`` restricts the scan to these tags (``digest`` strategy).
    """

    endpoint: RegistryEndpoint
    repository: str
    metadata: bool = False
    platforms: tuple[Platform, ...] = ()
    only_tags: frozenset[str] | None = None
    credentials: CredentialProvider | None = None


@dataclass(frozen=True, slots=True)
class ScanResult:
    """Tags in registry order. ``order_hint`` is set for time-sorted registries: a larger number
    means a newer tag (latest-first: ``len - i``; latest-last: ``i``)."""

    request: ScanRequest
    tags: tuple[TagInfo, ...]
    order_hint: Mapping[str, int] | None = None
    listed: int = 0
    """How many tags the repository has (``tags`` holds only ``only_tags`` when given)."""


def order_hint(names: tuple[str, ...], endpoint: RegistryEndpoint) -> Mapping[str, int] | None:
    mode = endpoint.tag_sort_mode
    if not mode.is_time_sorted:
        return None
    count = len(names)
    latest_first = mode.value == "latest-first"
    return MappingProxyType(
        {name: (count - i if latest_first else i) for i, name in enumerate(names)}
    )


class AtOnce(NamedTuple):
    """A scan of tag names answered without a request or a wait
    (:meth:`~argocd_image_updater.registry.scanner.Scanner.scan_at_once`): its request, the tag
    list it was answered from (its key and the very names held) and the result. Handed back to
    the next round's scan of the same request, it is answered again as it is while the round
    holds the very same names."""

    request: ScanRequest
    key: TagListKey
    names: tuple[str, ...]
    result: ScanResult
