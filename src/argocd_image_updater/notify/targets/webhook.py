"""A generic JSON POST: ``{"id", "time", "source", "imageUpdater", "events": [...]}``, signed
by the dispatcher (``X-Timestamp``, ``X-Signature-256``; see
:mod:`argocd_image_updater.notify.signing`)."""

from __future__ import annotations

import json
from typing import Final

from argocd_image_updater.notify.events import Batch
from argocd_image_updater.notify.targets import Payload


class Webhook:
    name = "webhook"

    def render(self, batch: Batch) -> list[Payload]:
        body = json.dumps(batch.envelope()).encode()
        return [Payload(body, "application/json", batch.events)]


TARGET: Final = Webhook()
