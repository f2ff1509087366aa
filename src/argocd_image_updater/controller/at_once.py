"""What a sharded replica's full cycle made for its scans answered at once, kept for the next.

A replica of a sharded fleet (``run --sharding``) asks, in each full cycle, every scan of tag
names whether it can be answered without a request (its copy of the tag list, vouched for by the
repository's owner: :meth:`~argocd_image_updater.registry.scanner.Scanner.scan_at_once`); with
each repository used by keys of every replica that is nearly every scan of the fleet, and about
two thirds of them are answered so. :class:`AtOnceMemory` keeps, by scan key, the request made
for each scan and the answer of each scan answered at once, for the next full cycle: the same
request is asked again (not made again) while the scan's endpoint, repository and credentials
are the very same, and an answer is handed out again as it is while the round holds the very
same names. One cycle's worth is kept: what the next cycle does not ask for is let go.
"""

from __future__ import annotations

from argocd_image_updater.model.registry import CredentialProvider, RegistryEndpoint
from argocd_image_updater.plan.jobs import ScanKey
from argocd_image_updater.registry.scan_values import AtOnce, ScanRequest


class AtOnceMemory:
    """The requests and answers at once of the last full cycle's scans, by scan key."""

    __slots__ = ("_last", "_now")

    def __init__(self) -> None:
        self._last: dict[ScanKey, tuple[ScanRequest, AtOnce | None]] = {}
        self._now: dict[ScanKey, tuple[ScanRequest, AtOnce | None]] = {}

    def last(
        self,
        key: ScanKey,
        endpoint: RegistryEndpoint,
        repository: str,
        credentials: CredentialProvider | None,
    ) -> tuple[ScanRequest, AtOnce | None] | None:
        """The request made for ``key`` last cycle and its answer at once (None: scanned), if
        made for the very same endpoint, repository and credentials (the rest of a request
        follows from its scan key)."""
        found = self._last.get(key)
        if found is None:
            return None
        request = found[0]
        if (
            request.endpoint is not endpoint
            or request.credentials is not credentials
            or request.repository != repository
        ):
            return None
        return found

    def keep(self, key: ScanKey, request: ScanRequest, answer: AtOnce | None) -> None:
        """This cycle's request for ``key``, and its answer at once (None: scanned)."""
        self._now[key] = (request, answer)

    def cycle_done(self) -> None:
        """This cycle's requests and answers become the last cycle's; older ones are let go."""
        self._last, self._now = self._now, {}
