"""Microsoft Teams workflow webhooks ("Post to a channel when a webhook request is received"):
an Adaptive Card in the ``attachments`` envelope the workflow expects."""

from __future__ import annotations

import json
from typing import Any, Final

from argocd_image_updater.notify.events import Batch
from argocd_image_updater.notify.targets import Payload
from argocd_image_updater.notify.text import Line, lines, title

CARD_CONTENT_TYPE: Final = "application/vnd.microsoft.card.adaptive"
CARD_SCHEMA: Final = "http://adaptivecards.io/schemas/adaptive-card.json"
CARD_VERSION: Final = "1.4"


def _markdown(item: Line) -> str:
    text = f"**{item.subject}**: {item.what}"
    if item.detail:
        text += f" — {item.detail}"
    if item.link:
        text += f" ([link]({item.link}))"
    return text


def _block(text: str, **style: Any) -> dict[str, Any]:
    return {"type": "TextBlock", "text": text, "wrap": True, **style}


class Teams:
    name = "teams"

    def render(self, batch: Batch) -> list[Payload]:
        shown, more = lines(batch)
        body = [_block(title(batch), weight="Bolder", size="Medium")]
        body += [_block(_markdown(item), spacing="Small") for item in shown]
        if more:
            body.append(_block(f"… and {more} more", spacing="Small", isSubtle=True))
        card = {
            "$schema": CARD_SCHEMA,
            "type": "AdaptiveCard",
            "version": CARD_VERSION,
            "msteams": {"width": "Full"},
            "body": body,
        }
        message = {
            "type": "message",
            "attachments": [
                {"contentType": CARD_CONTENT_TYPE, "contentUrl": None, "content": card}
            ],
        }
        return [Payload(json.dumps(message).encode(), "application/json", batch.events)]


TARGET: Final = Teams()
