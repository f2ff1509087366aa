"""What is said when a change followed becomes final (:mod:`.ship_tracker`): the
``ImageShipped``/``ImageNotShipped`` events, the time-to-live histogram, the not-shipped counter,
the log line and the ``shipped`` notifications."""

from __future__ import annotations

from datetime import datetime
from typing import Final

from argocd_image_updater.model.notifications import EventKind
from argocd_image_updater.notify.dispatcher import Notifier
from argocd_image_updater.notify.events import Event
from argocd_image_updater.observe.log import get_logger
from argocd_image_updater.pipeline.records import CRState
from argocd_image_updater.report.cycle_metrics import NOT_SHIPPED, TIME_TO_LIVE
from argocd_image_updater.report.events import EventRecorder
from argocd_image_updater.report.shipping import Shipment, Stage

log = get_logger("shipping")

REASON_SHIPPED: Final = "ImageShipped"
REASON_NOT_SHIPPED: Final = "ImageNotShipped"


def _stamp(moment: datetime | None) -> str:
    return moment.strftime("%H:%M:%SZ") if moment is not None else "never"


def describe(shipment: Shipment) -> str:
    """The event message of a final shipment."""
    what = f"image '{shipment.alias}' {shipment.reference}"
    times = (
        f"written {shipment.written_at.strftime('%Y-%m-%dT%H:%M:%SZ')}, "
        f"synced {_stamp(shipment.synced_at)}, healthy {_stamp(shipment.healthy_at)}"
    )
    if shipment.stage is Stage.SHIPPED:
        return f"{what} is live after {shipment.time_to_live or 0:.0f}s ({times})"
    return (
        f"{what} is not live {shipment.timeout.total_seconds():.0f}s after it was written "
        f"({times}): {shipment.message}"
    )


async def announce(
    finished: list[Shipment],
    crs: list[CRState],
    events: EventRecorder | None,
    notifier: Notifier | None,
) -> None:
    """``ImageShipped``/``ImageNotShipped`` events on the Applications, the time-to-live
    histogram and the not-shipped counter, and the ``shipped`` notifications of the changes that just became final."""
    for shipment in finished:
        if shipment.time_to_live is not None:
            TIME_TO_LIVE.labels(shipment.method).observe(shipment.time_to_live)
        elif shipment.stage is Stage.NOT_SHIPPED:
            NOT_SHIPPED.labels(shipment.method).inc()
        log.info(
            "%s",
            describe(shipment),
            application=shipment.app,
            image_alias=shipment.alias,
            state=shipment.stage.value,
        )
    if events is not None:
        for shipment in finished:
            await events.on_application(
                shipment.app,
                shipment.uid,
                warning=shipment.stage is Stage.NOT_SHIPPED,
                reason=REASON_SHIPPED if shipment.stage is Stage.SHIPPED else REASON_NOT_SHIPPED,
                message=describe(shipment),
            )
    shipped = [s for s in finished if s.stage is Stage.SHIPPED]
    if notifier is not None and shipped:
        by_scope = {f"{cr.namespace}/{cr.name}": cr for cr in crs}
        notifier.submit_events(
            [
                (
                    by_scope.get(s.scope),
                    Event(
                        EventKind.SHIPPED,
                        application=s.app,
                        image_updater=s.scope,
                        alias=s.alias,
                        image=s.image,
                        new=s.new_tag,
                        message=describe(s),
                    ),
                )
                for s in shipped
            ]
        )
