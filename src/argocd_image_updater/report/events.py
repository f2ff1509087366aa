"""Kubernetes Events: ``ImagesUpdated`` on an Application after a write, like the original, and
(our addition) rate-limited Warnings on the ImageUpdater when an image cannot be updated.

Creating an event is best effort: a failure is logged and never stops a cycle.
``--disable-kube-events`` (``kube.events: "true"`` in the ConfigMap, the original's inverted name)
turns every event off.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Final

from argocd_image_updater.kits.fence import check_fence
from argocd_image_updater.model.resources import IMAGE_UPDATERS
from argocd_image_updater.observe.log import get_logger
from argocd_image_updater.pipeline.ports import EventSink
from argocd_image_updater.pipeline.records import CRState, CycleResult
from argocd_image_updater.plan.holds import announced
from argocd_image_updater.plan.model import ImageChange, ImageResult, Outcome

log = get_logger("events")

COMPONENT: Final = "ArgocdImageUpdater"
APPLICATION_API_VERSION: Final = "argoproj.io/v1alpha1"
IMAGE_UPDATER_API_VERSION: Final = f"{IMAGE_UPDATERS[0]}/{IMAGE_UPDATERS[1]}"
REASON_UPDATED: Final = "ImagesUpdated"
REASON_TAG_MOVED: Final = "TagMoved"
"""A Warning on an Application: a tag it runs or chose moved to another digest."""
REASON_HELD: Final = "ImageHeld"
MESSAGE_LIMIT: Final = 1024
ANNOTATION_PREFIX: Final = "argocd-image-updater.image-"


def event_name(object_name: str, nanos: int) -> str:
    """``<object>.<unix nanoseconds in hex>``, the original's (and client-go's) naming."""
    return f"{object_name}.{nanos:x}"


def change_annotations(changes: Sequence[ImageChange]) -> dict[str, str]:
    """The original's per-change annotations, ``argocd-image-updater.image-<i>/…``."""
    annotations: dict[str, str] = {}
    for i, change in enumerate(changes):
        prefix = f"{ANNOTATION_PREFIX}{i}/"
        annotations[prefix + "full-image-name"] = change.image.full_name
        annotations[prefix + "image-name"] = change.image.name
        annotations[prefix + "old-tag"] = change.old_tag
        annotations[prefix + "new-tag"] = change.new_tag
    return annotations


def reason_name(code: str) -> str:
    """An event reason in CamelCase: ``registry-error`` → ``RegistryError``."""
    words = [w for w in re.split(r"[^A-Za-z0-9]+", code) if w]
    return "".join(w[:1].upper() + w[1:] for w in words) or "ImageUpdateFailed"


def _timestamp(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _truncate(text: str) -> str:
    return text if len(text) <= MESSAGE_LIMIT else text[: MESSAGE_LIMIT - 3] + "..."


class EventRecorder:
    """Creates core/v1 Events. ``clock`` gives Unix seconds (names, timestamps, rate limit)."""

    def __init__(
        self,
        sink: EventSink,
        *,
        enabled: bool,
        clock: Callable[[], float] = time.time,
        warning_interval: float = 600.0,
    ) -> None:
        self._sink = sink
        self.enabled = enabled
        self._clock = clock
        self._interval = warning_interval
        self._last_warning: dict[tuple[str, str, str, str, str], float] = {}
        self._last_nanos = 0

    def _body(
        self,
        namespace: str,
        name: str,
        involved: Mapping[str, Any],
        *,
        type_: str,
        reason: str,
        message: str,
        annotations: Mapping[str, str],
    ) -> dict[str, Any]:
        now = self._clock()
        # strictly increasing, so that two events in the same instant get different names
        self._last_nanos = max(int(now * 1e9), self._last_nanos + 1)
        meta: dict[str, Any] = {"name": event_name(name, self._last_nanos), "namespace": namespace}
        if annotations:
            meta["annotations"] = dict(annotations)
        return {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": meta,
            "involvedObject": {k: v for k, v in involved.items() if v},
            "source": {"component": COMPONENT},
            "reportingComponent": COMPONENT,
            "type": type_,
            "reason": reason,
            "message": _truncate(message),
            "firstTimestamp": _timestamp(now),
            "lastTimestamp": _timestamp(now),
            "count": 1,
        }

    async def _create(self, namespace: str, body: Mapping[str, Any]) -> bool:
        try:
            check_fence(f"creating event {body.get('reason', '')} in {namespace}")
            await self._sink.create_event(namespace, body)
        except Exception as err:  # events are best effort
            log.warning(
                "could not create event %s: %s",
                body.get("reason", ""),
                str(err),
                namespace=namespace,
            )
            return False
        return True

    async def images_updated(
        self,
        app_namespace: str,
        app_name: str,
        app_uid: str,
        changes: Sequence[ImageChange],
        *,
        resource_version: str = "",
    ) -> bool:
        """The original's ``ImagesUpdated`` event on the Application after a real write."""
        if not self.enabled or not changes:
            return False
        involved = {
            "kind": "Application",
            "apiVersion": APPLICATION_API_VERSION,
            "name": app_name,
            "namespace": app_namespace,
            "uid": app_uid,
            "resourceVersion": resource_version,
        }
        body = self._body(
            app_namespace,
            app_name,
            involved,
            type_="Normal",
            reason=REASON_UPDATED,
            message=f"Successfully updated application '{app_name}'",
            annotations=change_annotations(changes),
        )
        return await self._create(app_namespace, body)

    async def on_application(
        self, app: str, uid: str, *, warning: bool, reason: str, message: str
    ) -> bool:
        """A Normal or Warning event ``reason`` on the Application ``<namespace>/<name>``."""
        if not self.enabled:
            return False
        namespace, _, name = app.partition("/")
        involved = {
            "kind": "Application",
            "apiVersion": APPLICATION_API_VERSION,
            "name": name,
            "namespace": namespace,
            "uid": uid,
        }
        body = self._body(
            namespace,
            name,
            involved,
            type_="Warning" if warning else "Normal",
            reason=reason,
            message=message,
            annotations={},
        )
        return await self._create(namespace, body)

    async def holds_announced(self, app: str, uid: str, results: Sequence[ImageResult]) -> int:
        """A Normal ``ImageHeld`` on the Application per rollback hold not announced before
        (the controller remembers the announced holds, so each is announced once)."""
        created = 0
        for image in results:
            if announced(image.detail) is not None:
                created += await self.on_application(
                    app,
                    uid,
                    warning=False,
                    reason=REASON_HELD,
                    message=f"image '{image.alias or image.image}' {image.message}",
                )
        return created

    async def image_failed(
        self, cr: CRState, app: str, alias: str, reason: str, message: str
    ) -> bool:
        """A Warning on the ImageUpdater, at most one per ``warning_interval`` for the same
        (CR, application, alias, reason). ``reason`` may be a reason code (``registry-error``)."""
        if not self.enabled:
            return False
        now = self._clock()
        key = (cr.namespace, cr.name, app, alias, reason)
        last = self._last_warning.get(key)
        if last is not None and now - last < self._interval:
            return False
        self._last_warning[key] = now
        self._forget_old(now)
        meta = cr.raw.get("metadata") if isinstance(cr.raw.get("metadata"), dict) else {}
        involved = {
            "kind": "ImageUpdater",
            "apiVersion": IMAGE_UPDATER_API_VERSION,
            "name": cr.name,
            "namespace": cr.namespace,
            "uid": str((meta or {}).get("uid", "")),
        }
        subject = f"application '{app}'" + (f", image '{alias}'" if alias else "")
        body = self._body(
            cr.namespace,
            cr.name,
            involved,
            type_="Warning",
            reason=reason_name(reason),
            message=f"Could not update {subject}: {message}" if app else message,
            annotations={},
        )
        return await self._create(cr.namespace, body)

    async def cr_failed(self, cr: CRState, message: str) -> bool:
        """A Warning on an ImageUpdater that could not be used at all (e.g. a field of the wrong
        type), rate-limited like :meth:`image_failed`."""
        return await self.image_failed(cr, "", "", "invalid-config", message)

    def _forget_old(self, now: float) -> None:
        if len(self._last_warning) < 1024:
            return
        for key, seen in list(self._last_warning.items()):
            if now - seen >= self._interval:
                del self._last_warning[key]

    async def publish(
        self, result: CycleResult, *, app_uids: Mapping[str, str] | None = None
    ) -> int:
        """All events of a cycle: ``ImagesUpdated`` for every written application, ``ImageHeld``
        for every rollback hold not announced before, a Warning for every failed image (and
        failed write) of a CR. Returns the number of events created.

        ``app_uids`` maps ``<namespace>/<name>`` to the Application's uid, when known.
        """
        if not self.enabled:
            return 0
        created = 0
        for outcome in result.apps:
            plan = outcome.plan
            if outcome.written and plan is not None and plan.changes:
                uid = (app_uids or {}).get(outcome.app, "")
                created += await self.images_updated(
                    plan.app_namespace, plan.app_name, uid, plan.changes
                )
            if plan is not None:
                uid = (app_uids or {}).get(outcome.app, outcome.uid)
                created += await self.holds_announced(outcome.app, uid, plan.results)
            if outcome.cr is None:
                continue
            if outcome.error:
                created += await self.image_failed(
                    outcome.cr, outcome.app, "", "write-back-failed", outcome.error
                )
            for image in plan.results if plan is not None else ():
                if image.outcome is Outcome.ERROR:
                    created += await self.image_failed(
                        outcome.cr, outcome.app, image.alias, image.reason, image.message
                    )
        return created
