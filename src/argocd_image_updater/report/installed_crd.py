"""What the cluster's ImageUpdater CRD keeps, as far as the controller knows, and what it says
about a CRD that lacks fields.

The CRD check (``controller.crd_check``) hands it the installed CRD's schema; without the RBAC to
read CRDs, status writes teach it instead: a field the controller sent that the server's answer
lacks was pruned. With that knowledge:

* the status writer compares only what the server keeps, so an unchanged status is not written
  again every cycle because a pruned field (``status.shipments``) never comes back;
* one warning names the missing fields and the command that installs this project's CRD, the
  ``argocd_image_updater_crd_missing_fields`` gauge has a series per missing field, and every
  ImageUpdater's ``Ready`` condition says ``CRDOutdated``;
* an ImageUpdater that sets a spec field the installed CRD drops (``holds``, …) is ``Ready=False``
  with the field named. Its value is gone from the object; kubectl's last-applied copy (kept for
  this by the ImageUpdater listing, see :meth:`InstalledCrd.keeps_applied`) shows it was set.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, Final

from prometheus_client import Gauge

from argocd_image_updater.observe.log import get_logger
from argocd_image_updater.observe.metrics import REGISTRY
from argocd_image_updater.report.crd_schema import (
    CRD_NAME,
    INSTALL_COMMAND,
    applied_spec,
    dropped_by_server,
    fields_of,
    generic,
    known_fields,
    missing_fields,
    outermost,
    prune,
)
from argocd_image_updater.report.status import READY, format_time

log = get_logger("crd")

CRD_MISSING_FIELDS: Final = Gauge(
    "argocd_image_updater_crd_missing_fields",
    "1 per ImageUpdater field the controller supports that the installed CRD lacks (the API "
    "server drops it)",
    ["field"],
    registry=REGISTRY,
)
REASON: Final = "CRDOutdated"
SHOWN: Final = 6
"""Missing fields named in a condition message (the log line names them all)."""


def _inside(path: str, prefix: str) -> bool:
    return path == prefix or path.startswith(prefix + ".") or path.startswith(prefix + "[")


class InstalledCrd:
    def __init__(self) -> None:
        self.schema: Mapping[str, Any] | None = None
        """The installed CRD's ``openAPIV3Schema`` (None: not read)."""
        self.learned: set[str] = set()
        """Status fields that writes showed pruned, beyond what the schema says."""
        self.missing: tuple[str, ...] = ()
        """Known fields the server drops, outermost only, status fields and short paths first."""
        self.from_writes = False
        """The CRD cannot be read: only what status writes teach is known."""
        self._announced: tuple[str, ...] | None = None
        self._spec_keys: tuple[str, ...] = ()

    # --- what is known ------------------------------------------------------------------------

    def use_schema(self, schema: Mapping[str, Any]) -> None:
        """The installed CRD's schema, as the CRD check read it."""
        self.schema, self.from_writes = schema, False
        self._update()

    def use_writes(self, why: str) -> None:
        """The CRD cannot be read (``why``): learn from status writes; said once."""
        if not self.from_writes and self.schema is None:
            log.warning(
                "cannot read the ImageUpdater CRD %s (%s): learning which status fields it "
                "keeps from the status writes instead, and not checking spec fields; grant "
                "get on customresourcedefinitions (the install manifests and the chart do)",
                CRD_NAME,
                why,
            )
        self.from_writes = True

    def _status_schema(self) -> Mapping[str, Any] | None:
        props = (self.schema or {}).get("properties") or {}
        status = props.get("status")
        return status if isinstance(status, Mapping) else None

    def keep_status(self, status: Mapping[str, Any]) -> dict[str, Any]:
        """``status`` as the API server keeps it (with nothing missing, all of it: the
        controller writes only fields it knows)."""
        if not self.missing:
            return dict(status)
        kept = prune(dict(status), self._status_schema(), self.learned, "status")
        return kept if isinstance(kept, dict) else {}

    def learn(self, sent: Mapping[str, Any], answered: Any) -> None:
        """Compare a written status with the server's answer (the status it stored): remember
        fields it pruned that were not expected to be, forget learnt ones it now keeps."""
        if not isinstance(answered, dict):
            return
        new = dropped_by_server(self.keep_status(sent), answered, "status")
        kept_again: set[str] = set()
        if self.learned:  # walking every field of the answer costs a third of a status write
            present = {generic(p) for p in fields_of(answered, "status")}
            kept_again = {p for p in self.learned if p in present}
        if not new and not kept_again:
            return
        self.learned = (self.learned | new) - kept_again
        self._update()

    def _update(self) -> None:
        found = set(missing_fields(self.schema)) if self.schema is not None else set()
        # status fields first, then the spec's from the outermost: the most telling first
        self.missing = tuple(
            sorted(
                outermost(found | self.learned),
                key=lambda p: (p.startswith("spec."), p.count(".") + p.count("["), p),
            )
        )
        self._spec_keys = tuple(
            {p.rsplit(".", 1)[-1] for p in self.missing if p.startswith("spec.")}
        )
        if self.missing == self._announced:
            return
        CRD_MISSING_FIELDS.clear()
        for path in self.missing:
            CRD_MISSING_FIELDS.labels(path).set(1)
        if self.missing:
            log.warning(
                "the installed ImageUpdater CRD %s lacks %d fields this controller supports, and "
                "the API server drops them: %s; spec fields among them have no effect (an "
                "ImageUpdater that sets one says so in its Ready condition). Install this "
                "project's CRD: %s",
                CRD_NAME,
                len(self.missing),
                ", ".join(self.missing),
                INSTALL_COMMAND,
            )
        elif self._announced:
            log.info(
                "the installed ImageUpdater CRD %s has every field this controller supports",
                CRD_NAME,
            )
        self._announced = self.missing

    # --- what one ImageUpdater sets -----------------------------------------------------------

    def keeps_applied(self, text: str) -> bool:
        """Whether an ImageUpdater's last-applied copy (``text``) may hold a spec field the
        installed CRD drops: then the listing keeps it for :meth:`pruned_in_use`."""
        return any(f'"{key}"' in text for key in self._spec_keys)

    def pruned_in_use(self, obj: Mapping[str, Any]) -> list[str]:
        """The spec fields ``obj`` was applied with that the installed CRD drops (concrete
        paths under ``spec``, outermost only)."""
        dropped = [p for p in self.missing if p.startswith("spec.")]
        spec = applied_spec(obj) if dropped else None
        if spec is None:
            return []
        known = known_fields()
        found = [
            path
            for path in fields_of(spec, "spec")
            if generic(path) in known and any(_inside(generic(path), p) for p in dropped)
        ]
        return [p.removeprefix("spec.") for p in outermost(found)]

    def mark(
        self,
        status: Mapping[str, Any],
        obj: Mapping[str, Any],
        stored: Mapping[str, Any] | None,
        now: datetime,
    ) -> Mapping[str, Any]:
        """``status`` with its ``Ready`` condition saying the CRD is outdated (a new status:
        ``status`` may be shared); as it is when the CRD lacks nothing."""
        if not self.missing:
            return status
        conditions = [dict(c) for c in status.get("conditions") or () if isinstance(c, Mapping)]
        ready = next((c for c in conditions if c.get("type") == READY), None)
        if ready is None:
            return status
        shown = ", ".join(self.missing[:SHOWN])
        more = len(self.missing) - SHOWN
        shown += f" and {more} more (see the controller log)" if more > 0 else ""
        note = (
            f"The installed ImageUpdater CRD is outdated: it lacks {len(self.missing)} fields "
            f"of this controller ({shown}); install this project's CRD: {INSTALL_COMMAND}"
        )
        in_use = self.pruned_in_use(obj)
        if in_use:
            state = "False"
            message = (
                "; ".join(f"field {p} is not in the installed CRD" for p in in_use)
                + ": the API server dropped it from this ImageUpdater, so it cannot be read "
                "from the object and has no effect. " + note
            )
            ready["reason"] = REASON
        elif ready.get("reason") == "ReconcileFailed":
            state, message = str(ready.get("status")), f"{ready.get('message')} {note}"
        else:
            state, message = str(ready.get("status")), f"{ready.get('message')} {note}"
            ready["reason"] = REASON
        before = next(
            (
                c
                for c in (stored or {}).get("conditions") or ()
                if isinstance(c, Mapping) and c.get("type") == READY
            ),
            None,
        )
        if before is not None and before.get("status") == state:
            ready["lastTransitionTime"] = before.get("lastTransitionTime")
        elif ready.get("status") != state:
            ready["lastTransitionTime"] = format_time(now)
        ready.update(status=state, message=message)
        return {**status, "conditions": conditions}
