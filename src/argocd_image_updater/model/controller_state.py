"""What the controller remembers across cycles, restarts and leader changes (pure).

* per Application (``namespace/name``) and image alias: the last tag the controller wrote, when,
  where, whether it was seen running since, and the rollback hold it announced
  (:class:`~argocd_image_updater.model.write_record.WriteRecord`);
* per image repository (``<registry host>/<repository path>``) and tag: when the controller
  first saw the tag in the registry (``minAge``);
* per repository and tag: the last digest seen (a tag moved to another digest);
* the written changes not yet confirmed live (ship tracking: ``report.ship_tracker``), as the
  tracker serializes them, so that a restart goes on following them.

The record is versioned (:data:`STATE_VERSION`); it is stored as a few JSON documents
(:meth:`ControllerState.to_data`), in the cluster as the data of a ConfigMap (gzip-compressed in
its ``binaryData`` when the documents do not fit: :meth:`ControllerState.to_stored`), in local
mode as a file. Every change is also kept as an operation until the record is saved, so that a store
whose copy changed meanwhile (another replica, the ``release`` command) can load the newer copy
and apply the same operations to it (:meth:`ControllerState.replay_onto`).
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import replace
from datetime import datetime
from typing import Any, Final, TypeVar

from argocd_image_updater.model.stored_record import COMPRESSED_SUFFIX as COMPRESSED_SUFFIX
from argocd_image_updater.model.stored_record import DATA_KEYS as DATA_KEYS
from argocd_image_updater.model.stored_record import DIGESTS_KEY as DIGESTS_KEY
from argocd_image_updater.model.stored_record import FIRST_SEEN_KEY as FIRST_SEEN_KEY
from argocd_image_updater.model.stored_record import MAX_BYTES as MAX_BYTES
from argocd_image_updater.model.stored_record import MAX_INFLATED_BYTES as MAX_INFLATED_BYTES
from argocd_image_updater.model.stored_record import SHIPMENTS_KEY as SHIPMENTS_KEY
from argocd_image_updater.model.stored_record import STATE_VERSION as STATE_VERSION
from argocd_image_updater.model.stored_record import TABLE_KEYS as TABLE_KEYS
from argocd_image_updater.model.stored_record import VERSION_KEY as VERSION_KEY
from argocd_image_updater.model.stored_record import WRITES_KEY as WRITES_KEY
from argocd_image_updater.model.stored_record import Stored as Stored
from argocd_image_updater.model.stored_record import compressed as _compressed
from argocd_image_updater.model.stored_record import dump as _dump
from argocd_image_updater.model.stored_record import fit as _fit
from argocd_image_updater.model.stored_record import plain as _plain
from argocd_image_updater.model.write_record import StateError as StateError
from argocd_image_updater.model.write_record import WriteRecord as WriteRecord
from argocd_image_updater.model.write_record import format_time as format_time
from argocd_image_updater.model.write_record import parse_time as parse_time

_V = TypeVar("_V")


def repo_key(registry: str, repository: str) -> str:
    """The key of an image repository: ``<registry host>/<repository path>``."""
    return f"{registry}/{repository}" if registry else repository


def app_key(namespace: str, name: str) -> str:
    return f"{namespace}/{name}"


Operation = tuple[str, tuple[Any, ...]]
Tables = Mapping[str, Mapping[str, _V]]
"""An unsaved change: the operation's name and its arguments."""
APP_OPERATIONS: Final = frozenset({"write", "live", "held", "release", "forget_app"})
"""The operations on one Application's write records (their first argument is its key)."""
REPO_OPERATIONS: Final = frozenset({"seen", "digest", "forget_tags"})
"""The operations on one repository's tags (their first argument is the repository)."""
SHIPMENTS_OPERATION: Final = "ships"
"""The operation that replaces the changes followed (its argument: the table by Application)."""


class ControllerState:
    """The remembered record; see the module documentation. ``token`` is the store's version of
    the copy it was loaded from (a ConfigMap's resourceVersion); ``changed`` says whether
    anything differs from that copy."""

    def __init__(
        self,
        writes: Mapping[str, Mapping[str, WriteRecord]] | None = None,
        first_seen: Mapping[str, Mapping[str, datetime]] | None = None,
        digests: Mapping[str, Mapping[str, str]] | None = None,
        token: str = "",
        shipments: Mapping[str, Any] | None = None,
    ) -> None:
        self._writes = {k: dict(v) for k, v in (writes or {}).items()}
        self._first_seen = {k: dict(v) for k, v in (first_seen or {}).items()}
        self._digests = {k: dict(v) for k, v in (digests or {}).items()}
        self._shipments: dict[str, Any] = dict(shipments or {})
        self.token = token
        self._ops: list[Operation] = []

    # --- changes (each one kept as an operation until saved) -----------------------------------
    @property
    def changed(self) -> bool:
        return bool(self._ops)

    def _do(self, name: str, *args: Any) -> None:
        applied: bool = getattr(self, f"_op_{name}")(*args)
        if applied:
            self._ops.append((name, args))

    def replay_onto(self, other: ControllerState) -> ControllerState:
        """``other`` (a newer stored copy) with this record's unsaved changes applied."""
        return other.apply(self._ops)

    @property
    def operations(self) -> tuple[Operation, ...]:
        """The unsaved changes, oldest first."""
        return tuple(self._ops)

    def apply(self, operations: Iterable[Operation]) -> ControllerState:
        """Make ``operations`` (another record's unsaved changes) here too; returns self."""
        for name, args in operations:
            self._do(name, *args)
        return self

    def contents(
        self,
    ) -> tuple[Tables[WriteRecord], Tables[datetime], Tables[str], Mapping[str, Any]]:
        """The writes, first-seen times, digests and changes followed as held (not copies: read
        them, never change them)."""
        return self._writes, self._first_seen, self._digests, self._shipments

    def copy(self, token: str | None = None) -> ControllerState:
        """A copy of the contents (without unsaved changes), as version ``token``."""
        return ControllerState(
            self._writes,
            self._first_seen,
            self._digests,
            self.token if token is None else token,
            self._shipments,
        )

    def adopt(self, other: ControllerState) -> None:
        """Take the contents, version and unsaved changes of ``other``."""
        self._writes, self._first_seen, self._digests, self._shipments = (
            other._writes,
            other._first_seen,
            other._digests,
            other._shipments,
        )
        self.token = other.token
        self._ops = list(other._ops)

    def saved(self, token: str) -> None:
        """The store holds this record now, as version ``token``."""
        self.token = token
        self._ops.clear()

    # --- per Application and image alias --------------------------------------------------------
    def last_write(self, app: str, alias: str) -> WriteRecord | None:
        return self._writes.get(app, {}).get(alias)

    def writes_of(self, app: str) -> Mapping[str, WriteRecord]:
        return dict(self._writes.get(app, {}))

    def record_write(
        self, app: str, alias: str, tag: str, at: datetime, via: str = "", commit: str = ""
    ) -> None:
        """``tag`` was written for ``alias`` of ``app`` at ``at`` (any hold is over), ``via``
        the Application (``argocd``) or a git target (``git``, with the ``commit`` pushed)."""
        self._do("write", app, alias, tag, format_time(at), via, commit)

    def mark_live(self, app: str, alias: str) -> None:
        """The last written tag was seen running."""
        self._do("live", app, alias)

    def mark_held(self, app: str, alias: str, running: str, by: str = "") -> None:
        """A rollback hold to ``running`` was announced (announce it once); ``by``: who
        overwrote the tag written, when known."""
        self._do("held", app, alias, running, by)

    def release(self, app: str, aliases: Collection[str] = ("*",)) -> None:
        """Forget the last writes of ``aliases`` (``*``: every alias) of ``app``: the running
        tag is taken as it is, which ends a rollback hold."""
        self._do("release", app, tuple(sorted(aliases)))

    def prune_apps(self, existing: Collection[str], namespaces: Collection[str] | None) -> None:
        """Forget the Applications of ``namespaces`` (None: every namespace) that are not in
        ``existing`` (``namespace/name`` keys): they no longer exist."""
        gone = [
            key
            for key in {**self._writes, **self._shipments}
            if key not in existing and (namespaces is None or key.partition("/")[0] in namespaces)
        ]
        for key in gone:
            self._do("forget_app", key)

    def _op_write(
        self, app: str, alias: str, tag: str, at: str, via: str = "", commit: str = ""
    ) -> bool:
        record = WriteRecord(tag, parse_time(at), via=via, commit=commit)
        if self._writes.get(app, {}).get(alias) == record:
            return False
        self._writes.setdefault(app, {})[alias] = record
        return True

    def _update(self, app: str, alias: str, change: Callable[[WriteRecord], WriteRecord]) -> bool:
        record = self._writes.get(app, {}).get(alias)
        if record is None:
            return False
        new = change(record)
        if new == record:
            return False
        self._writes[app][alias] = new
        return True

    def _op_live(self, app: str, alias: str) -> bool:
        return self._update(app, alias, lambda r: replace(r, live=True))

    def _op_held(self, app: str, alias: str, running: str, by: str = "") -> bool:
        def change(r: WriteRecord) -> WriteRecord:
            keep = r.held_by if r.held == running else ""
            return replace(r, held=running, held_by=by or keep)

        return self._update(app, alias, change)

    def _op_release(self, app: str, aliases: tuple[str, ...]) -> bool:
        records = self._writes.get(app)
        if not records:
            return False
        names = list(records) if "*" in aliases else [a for a in aliases if a in records]
        for name in names:
            del records[name]
        if not records:
            del self._writes[app]
        return bool(names)

    def _op_forget_app(self, app: str) -> bool:
        wrote = self._writes.pop(app, None) is not None
        return self._shipments.pop(app, None) is not None or wrote

    # --- per repository and tag: first seen ----------------------------------------------------
    def first_seen(self, repo: str, tag: str) -> datetime | None:
        return self._first_seen.get(repo, {}).get(tag)

    def first_seen_of(self, repo: str) -> Mapping[str, datetime]:
        return dict(self._first_seen.get(repo, {}))

    def record_first_seen(self, repo: str, tags: Iterable[str], now: datetime) -> None:
        """Tags not seen before are first seen ``now``; known tags keep their time."""
        known = self._first_seen.get(repo, {})
        new = tuple(sorted({t for t in tags if t not in known}))
        if new:
            self._do("seen", repo, new, format_time(now))

    def _op_seen(self, repo: str, tags: tuple[str, ...], at: str) -> bool:
        known = self._first_seen.setdefault(repo, {})
        moment = parse_time(at)
        added = False
        for tag in tags:
            if tag not in known:
                known[tag] = moment
                added = True
        return added

    # --- per repository and tag: the last digest seen ------------------------------------------
    def seen_digest(self, repo: str, tag: str) -> str | None:
        """The digest ``tag`` had when last seen; None when never seen."""
        return self._digests.get(repo, {}).get(tag)

    def record_digest(self, repo: str, tag: str, digest: str) -> None:
        if digest and self._digests.get(repo, {}).get(tag) != digest:
            self._do("digest", repo, tag, digest)

    def _op_digest(self, repo: str, tag: str, digest: str) -> bool:
        if self._digests.get(repo, {}).get(tag) == digest:
            return False
        self._digests.setdefault(repo, {})[tag] = digest
        return True

    # --- tags no longer in the registry ----------------------------------------------------------
    def remembers_tags(self, repo: str) -> bool:
        """Whether anything is remembered of the tags of ``repo`` (first-seen times, digests)."""
        return repo in self._first_seen or repo in self._digests

    def prune_tags(self, repo: str, present: Collection[str]) -> None:
        """Forget the tags of ``repo`` that its full tag listing no longer holds."""
        listed = frozenset(present)
        gone = {
            tag
            for table in (self._first_seen, self._digests)
            for tag in table.get(repo, {})
            if tag not in listed
        }
        if gone:
            self._do("forget_tags", repo, tuple(sorted(gone)))

    def _op_forget_tags(self, repo: str, tags: tuple[str, ...]) -> bool:
        removed = False
        for table in (self._first_seen, self._digests):
            known: dict[str, Any] | None = table.get(repo)
            if known is None:
                continue
            for tag in tags:
                removed |= known.pop(tag, None) is not None
            if not known:
                del table[repo]
        return removed

    # --- written changes not confirmed live yet -------------------------------------------------
    def shipments(self) -> Mapping[str, Any]:
        """The changes followed until live, by Application (as the ship tracker wrote them)."""
        return dict(self._shipments)

    def set_shipments(self, table: Mapping[str, Any], apps: Collection[str] | None = None) -> None:
        """The changes followed now: replacing those remembered of ``apps`` (None: all), the
        others' kept (another static shard follows those)."""
        self._do("ships", json.loads(_dump(table)), None if apps is None else sorted(apps))

    def _op_ships(self, table: dict[str, Any], apps: list[str] | None = None) -> bool:
        if apps is not None:
            scope = set(apps) | set(table)
            table = {k: v for k, v in self._shipments.items() if k not in scope} | table
        if table == self._shipments:
            return False
        self._shipments = dict(table)
        return True

    # --- serialization ----------------------------------------------------------------------------
    def _tables(self) -> dict[str, dict[str, Any]]:
        return {
            WRITES_KEY: {
                app: {alias: r.to_json() for alias, r in sorted(records.items())}
                for app, records in sorted(self._writes.items())
            },
            FIRST_SEEN_KEY: {
                repo: {tag: format_time(t) for tag, t in sorted(tags.items())}
                for repo, tags in sorted(self._first_seen.items())
            },
            DIGESTS_KEY: {
                repo: dict(sorted(tags.items())) for repo, tags in sorted(self._digests.items())
            },
            SHIPMENTS_KEY: dict(sorted(self._shipments.items())),
        }

    def to_data(self, limit: int = MAX_BYTES) -> dict[str, str]:
        """The record as string data (a file's JSON, the data of a ConfigMap that fits in
        ``limit`` bytes). Above ``limit`` bytes the digests, then the first-seen times, of the
        largest repositories are left out (they are only hints; of a record of one repository,
        its oldest tags), then the write records of the Applications written longest ago."""
        return _fit(self._tables(), limit, _plain).data

    def to_stored(self, limit: int = MAX_BYTES) -> Stored:
        """The record for a ConfigMap: :meth:`to_data` when it fits in ``limit`` bytes; else
        the JSON documents gzip-compressed under ``<key>.gz`` (a ConfigMap's ``binaryData``),
        trimmed as :meth:`to_data` trims when even that does not fit."""
        tables = self._tables()
        plain = _plain(tables)
        if plain.size <= limit:
            return plain
        return _fit(tables, limit, _compressed)

    @classmethod
    def from_stored(
        cls, data: Mapping[str, str], binary: Mapping[str, bytes], token: str = ""
    ) -> ControllerState:
        """Read a record written by :meth:`to_stored` (or :meth:`to_data`)."""
        if not binary:
            return cls.from_data(data, token)
        texts = dict(data)
        for key in TABLE_KEYS:
            packed = binary.get(key + COMPRESSED_SUFFIX)
            if packed is None:
                continue
            try:
                inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
                raw = inflater.decompress(packed, MAX_INFLATED_BYTES)
                if inflater.unconsumed_tail:
                    raise StateError(
                        f"{key}{COMPRESSED_SUFFIX}: more than {MAX_INFLATED_BYTES} bytes inflated"
                    )
                texts[key] = raw.decode()
            except (zlib.error, UnicodeDecodeError) as err:
                raise StateError(
                    f"{key}{COMPRESSED_SUFFIX}: not gzip-compressed JSON: {err}"
                ) from None
        return cls.from_data(texts, token)

    @classmethod
    def from_data(cls, data: Mapping[str, str], token: str = "") -> ControllerState:
        """Read a stored record; :class:`StateError` names the key that cannot be read. An
        empty ``data`` is an empty record."""
        if not data:
            return cls(token=token)
        version = str(data.get(VERSION_KEY, "")).strip()
        if version != str(STATE_VERSION):
            raise StateError(
                f"{VERSION_KEY}: layout {version or '(missing)'} is not {STATE_VERSION}, "
                "the layout this version reads"
            )
        writes_raw = _json(data, WRITES_KEY)
        writes: dict[str, dict[str, WriteRecord]] = {}
        for app, records in writes_raw.items():
            if not isinstance(records, Mapping):
                raise StateError(f"{WRITES_KEY}: {app}: expected an object of image aliases")
            writes[app] = {
                alias: WriteRecord.from_json(raw, f"{WRITES_KEY}: {app}.{alias}")
                for alias, raw in records.items()
            }
        first_seen: dict[str, dict[str, datetime]] = {}
        for repo, tags in _json(data, FIRST_SEEN_KEY).items():
            if not isinstance(tags, Mapping):
                raise StateError(f"{FIRST_SEEN_KEY}: {repo}: expected an object of tags")
            try:
                first_seen[repo] = {tag: parse_time(str(t)) for tag, t in tags.items()}
            except ValueError as err:
                raise StateError(f"{FIRST_SEEN_KEY}: {repo}: {err}") from None
        digests: dict[str, dict[str, str]] = {}
        for repo, tags in _json(data, DIGESTS_KEY).items():
            if not isinstance(tags, Mapping):
                raise StateError(f"{DIGESTS_KEY}: {repo}: expected an object of tags")
            digests[repo] = {tag: str(d) for tag, d in tags.items()}
        return cls(writes, first_seen, digests, token, _json(data, SHIPMENTS_KEY))


def _json(data: Mapping[str, str], key: str) -> dict[str, Any]:
    text = data.get(key, "") or "{}"
    try:
        value = json.loads(text)
    except ValueError as err:
        raise StateError(f"{key}: not JSON: {err}") from None
    if not isinstance(value, dict):
        raise StateError(f"{key}: expected a JSON object")
    return value
