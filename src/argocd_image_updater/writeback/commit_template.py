"""The commit message template file (``--git-commit-message-path``), re-read when it changes.

Mounted from the ``git.commit-message-template`` key of the settings ConfigMap, as in the
original; an edit of the ConfigMap applies to the next commit without a restart. A missing file
means the default template; an edited template that does not parse is reported and the last good
one stays in use.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from argocd_image_updater.config.reloading import WatchedFile
from argocd_image_updater.kits.gotemplate import Limits, Template
from argocd_image_updater.observe.log import get_logger
from argocd_image_updater.writeback.messages import MessageError, commit_message_template

__all__ = ["CommitTemplateFile", "read_commit_template"]

log = get_logger("git")

_DEFAULT = commit_message_template(None)


def read_commit_template(path: Path) -> Template | None:
    """The template in ``path``; ``None`` when there is no such file. Raise :class:`MessageError`
    (or :class:`OSError`) when it cannot be used."""
    if not path.is_file():
        return None
    return commit_message_template(path.read_text(encoding="utf-8"), str(path))


class CommitTemplateFile(Template):
    """A template that renders with the file's current content (the default when missing)."""

    __slots__ = ("_current", "_watch")

    def __init__(self, path: str | Path) -> None:
        """Read ``path``; raise :class:`MessageError` or :class:`OSError` when it is not usable."""
        watch = WatchedFile(path)  # before reading: an edit in between is seen later
        current = read_commit_template(watch.path)
        super().__init__(str(watch.path), current.source if current else _DEFAULT.source)
        self._watch = watch
        self._current = current

    def _refresh(self) -> None:
        if not self._watch.changed():
            return
        try:
            current = read_commit_template(self._watch.path)
        except (MessageError, OSError, UnicodeDecodeError) as err:
            log.error(
                "commit message template %s changed but cannot be used; "
                "keeping the previous one: %s",
                str(self._watch.path),
                str(err),
            )
            return
        self._current = current
        self.source = current.source if current else _DEFAULT.source
        log.info(
            "commit message template reloaded",
            path=str(self._watch.path),
            default=current is None,
        )

    def render(self, data: Any, limits: Limits | None = None) -> str:
        self._refresh()
        return (self._current or _DEFAULT).render(data, limits)
