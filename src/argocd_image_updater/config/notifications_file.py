"""The process-wide notifications default: the ConfigMap key ``notifications.yaml``, mounted as
``/app/config/notifications.yaml`` (``--notifications-config-path``) and re-read when it changes,
like ``registries.conf``. It holds the shape of an ImageUpdater's ``spec.notifications``
(:class:`~argocd_image_updater.config.notifications.Notifications`). A missing or empty file
means no default targets; a file that is not valid stops the start, and an edit that is not
valid is reported while the last good one stays in use.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError
from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from argocd_image_updater.config.cr_validation import describe_errors
from argocd_image_updater.config.notifications import Notifications
from argocd_image_updater.config.reloading import WatchedFile
from argocd_image_updater.observe.log import get_logger

log = get_logger("config")

CONFIGMAP_KEY = "notifications.yaml"


class NotificationsFileError(ValueError):
    pass


def parse_notifications(text: str, where: str) -> Notifications | None:
    """The notifications of a ``notifications.yaml`` text (None when empty); ``where`` names the
    file in errors, which list every problem with its field path."""
    try:
        data = YAML(typ="safe", pure=True).load(text)
    except YAMLError as err:
        raise NotificationsFileError(f"{where}: not valid YAML: {err}") from None
    if data is None:
        return None
    if not isinstance(data, dict):
        raise NotificationsFileError(
            f"{where}: expected an object with 'targets', got {type(data).__name__}"
        )
    try:
        return Notifications.model_validate(data)
    except ValidationError as exc:
        raise NotificationsFileError(f"{where}: " + "; ".join(describe_errors(exc))) from None


def load_notifications(path: str | Path) -> Notifications | None:
    """The file's notifications; None when it is missing or empty."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as err:
        raise NotificationsFileError(f"{file}: cannot be read: {err}") from None
    return parse_notifications(text, str(file))


class NotificationsFile:
    """The default notifications, following edits of the file."""

    def __init__(self, path: str | Path) -> None:
        """Raise :class:`NotificationsFileError` when the file is not valid."""
        self._watch = WatchedFile(path)  # before reading: an edit in between is seen later
        self._current = load_notifications(path)

    @property
    def path(self) -> Path:
        return self._watch.path

    def current(self) -> Notifications | None:
        if self._watch.changed():
            try:
                self._current = load_notifications(self._watch.path)
            except NotificationsFileError as err:
                log.error(
                    "notifications configuration changed but cannot be used; keeping the "
                    "previous one: %s",
                    str(err),
                )
            else:
                targets = len(self._current.targets) if self._current is not None else 0
                log.info("notifications configuration reloaded", targets=targets)
        return self._current
