"""CloudEvents 1.0 in structured mode (``application/cloudevents+json``). A CloudEvent has one
``type``, so a batch is sent as one event per kind it holds:
``io.argoproj.imageupdater.<event>``, with the batch's events of that kind as ``data``."""

from __future__ import annotations

import json
from typing import Final

from argocd_image_updater.notify.events import Batch
from argocd_image_updater.notify.targets import Payload

CONTENT_TYPE: Final = "application/cloudevents+json"
TYPE_PREFIX: Final = "io.argoproj.imageupdater."


class CloudEvents:
    name = "cloudevents"

    def render(self, batch: Batch) -> list[Payload]:
        payloads = []
        for kind in batch.counts():
            events = tuple(e for e in batch.events if e.kind is kind)
            envelope = {
                "specversion": "1.0",
                "id": f"{batch.id}-{kind.value}",
                "source": batch.source,
                "type": TYPE_PREFIX + kind.value,
                "time": batch.timestamp,
                "datacontenttype": "application/json",
                **({"subject": batch.scope} if batch.scope else {}),
                "data": {"events": [e.as_json() for e in events]},
            }
            payloads.append(Payload(json.dumps(envelope).encode(), CONTENT_TYPE, events))
        return payloads


TARGET: Final = CloudEvents()
