"""Secrets read once a round: the scans of one cycle (or of one webhook event's update) that use
the same pull secret share one read of it.

A per-image pull secret (``pullsecret:`` / ``secret:`` on an image) gives a credential provider
per scan and cycle, which reads the Secret on first use so that a rotated Secret is used from
the next cycle on (:class:`~argocd_image_updater.registry.credentials.providers.
ImageCredentials`). With one provider per scan, a private registry's 500 repositories behind
one pull secret cost 500 reads of that Secret from the Kubernetes API every cycle, and as many
concurrent requests at the cycle's start. :class:`RoundSecrets` shares them: each Secret is read
at most once a round (concurrent first reads join one request), its fields or the failure kept
until the next round begins (:meth:`RoundSecrets.new_round`, at the start of every cycle and
webhook update). A rotated Secret is still read by the next round.

Tenancy holds: what a view restricted to some namespaces (:meth:`RoundSecrets.restricted_to`)
reads is kept under that restriction, so another view never gets a Secret its own restriction
refuses; the refusal itself comes from the reader underneath, before any request.

Credentials the registry refused are read fresh: a provider reads its Secret once, and again
only after the registry refused what it read (:meth:`~argocd_image_updater.registry.credentials.
providers.ImageCredentials.invalidate`). Each provider has a view of its own
(:meth:`RoundSecrets.restricted_to`), and a view asked again for a Secret it served reads it
from the API (shared by the views asking at the same moment) and keeps that for the round.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from argocd_image_updater.config.secrets import SecretReader
from argocd_image_updater.registry.singleflight import SingleFlight

_Key = tuple[frozenset[str] | None, str, str]
"""The restriction a Secret was read under (None: none), its namespace and name."""

MAX_KEPT: Final = 10_000
"""Secrets kept in one round at most: a round naming more reads the others every time."""


class _Round:
    """What the views of one reader share: the Secrets of this round, the reads in flight."""

    def __init__(self) -> None:
        self.number = 0
        self.kept: dict[_Key, Mapping[str, bytes] | Exception] = {}
        self.flight: SingleFlight[tuple[int, bool, _Key], Mapping[str, bytes]] = SingleFlight()


class RoundSecrets:
    """A :class:`~argocd_image_updater.config.secrets.SecretReader` over ``reader`` whose reads
    are shared within a round (see the module)."""

    def __init__(
        self,
        reader: SecretReader,
        *,
        scope: frozenset[str] | None = None,
        shared: _Round | None = None,
    ) -> None:
        self._reader = reader
        self._scope = scope
        self._round = shared if shared is not None else _Round()
        self._served: set[_Key] = set()
        """What this view handed out: asked again, it reads it fresh (see the module)."""

    def new_round(self) -> None:
        """What was read so far is read again when next asked for."""
        self._round.number += 1
        self._round.kept = {}

    def restricted_to(self, *namespaces: str) -> RoundSecrets:
        """A view of its own (a provider's) reading only Secrets in ``namespaces`` (when the
        reader underneath can be restricted; else as it reads), sharing this one's rounds."""
        restrict = getattr(self._reader, "restricted_to", None)
        if restrict is None:
            return RoundSecrets(self._reader, scope=self._scope, shared=self._round)
        return RoundSecrets(restrict(*namespaces), scope=frozenset(namespaces), shared=self._round)

    async def read(self, namespace: str, name: str) -> Mapping[str, bytes]:
        shared = self._round
        key: _Key = (self._scope, namespace, name)
        fresh = key in self._served
        found = None if fresh else shared.kept.get(key)
        if found is None:
            number = shared.number
            try:
                found, _ = await shared.flight.do(
                    (number, fresh, key), lambda: self._reader.read(namespace, name)
                )
            except Exception as err:
                found = err
            if shared.number == number and (key in shared.kept or len(shared.kept) < MAX_KEPT):
                shared.kept[key] = found
        self._served.add(key)
        if isinstance(found, Exception):
            raise found.with_traceback(None)
        return found
