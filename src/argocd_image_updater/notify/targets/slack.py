"""Slack incoming webhooks: a Block Kit message (a header, the events as ``mrkdwn`` sections)
with ``text`` as the fallback shown in notifications."""

from __future__ import annotations

import json
from typing import Any, Final

from argocd_image_updater.notify.events import Batch
from argocd_image_updater.notify.targets import Payload
from argocd_image_updater.notify.text import Line, lines, title

SECTION_LIMIT: Final = 3000
"""Characters of one section's text (Slack's limit)."""
HEADER_LIMIT: Final = 150


def escape(text: str) -> str:
    """Slack's ``mrkdwn`` control characters."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _mrkdwn(item: Line) -> str:
    text = f"• *{escape(item.subject)}*: {escape(item.what)}"
    if item.detail:
        text += f" — {escape(item.detail)}"
    if item.link:
        text += f" (<{escape(item.link)}|link>)"
    return text


def _sections(texts: list[str]) -> list[dict[str, Any]]:
    """The lines packed into sections of at most :data:`SECTION_LIMIT` characters."""
    chunks: list[str] = []
    for text in texts:
        text = text[:SECTION_LIMIT]
        if chunks and len(chunks[-1]) + 1 + len(text) <= SECTION_LIMIT:
            chunks[-1] += "\n" + text
        else:
            chunks.append(text)
    return [{"type": "section", "text": {"type": "mrkdwn", "text": c}} for c in chunks]


class Slack:
    name = "slack"

    def render(self, batch: Batch) -> list[Payload]:
        head = title(batch)
        shown, more = lines(batch)
        texts = [_mrkdwn(item) for item in shown]
        if more:
            texts.append(f"… and {more} more")
        body = {
            "text": head,
            "blocks": [
                {"type": "header", "text": {"type": "plain_text", "text": head[:HEADER_LIMIT]}},
                *_sections(texts),
            ],
        }
        return [Payload(json.dumps(body).encode(), "application/json", batch.events)]


TARGET: Final = Slack()
