"""Reading a watch's stream: split into events of bounded length, each parsed.

One event is one line of JSON. A line longer than :data:`WATCH_LINE_LIMIT` is an error (the
watch ends and its caller starts it again), so that a hostile or broken server cannot make the
client buffer without bound: the API server stores objects of at most about 1.5 MiB (etcd's
request limit), and a watch event is one such object plus its envelope, so 16 MiB leaves room
for any object a real server sends.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterable, AsyncIterator
from typing import Any, Final

from argocd_image_updater.kube.errors import KubeError

WATCH_LINE_LIMIT: Final = 16 * 1024 * 1024
"""The longest watch event (one line of JSON) accepted, in bytes."""


async def event_lines(chunks: AsyncIterable[bytes], limit: int) -> AsyncIterator[bytes]:
    """The lines of ``chunks`` (without their newline); a line longer than ``limit`` bytes is
    a :class:`KubeError`, raised as soon as that many bytes are buffered."""
    buffer = bytearray()
    async for chunk in chunks:
        start = 0
        while (end := chunk.find(b"\n", start)) != -1:
            if len(buffer) + end - start > limit:
                raise _too_long(limit)
            if buffer:
                buffer += chunk[start:end]
                yield bytes(buffer)
                buffer.clear()
            else:
                yield chunk[start:end]
            start = end + 1
        buffer += chunk[start:]
        if len(buffer) > limit:
            raise _too_long(limit)
    if buffer:
        yield bytes(buffer)


def _too_long(limit: int) -> KubeError:
    return KubeError(0, f"Kubernetes API: a watch event longer than {limit} bytes")


def parse_event(line: bytes) -> tuple[str, dict[str, Any]]:
    """A watch event's type and object; an ``ERROR`` event is raised as a :class:`KubeError`
    with its code (410 when the version asked for is too old)."""
    try:
        event = json.loads(line)
        kind, obj = str(event["type"]), dict(event["object"])
    except (ValueError, KeyError, TypeError):
        raise KubeError(0, "Kubernetes API: a malformed watch event") from None
    if kind == "ERROR":
        code = obj.get("code")
        status = code if isinstance(code, int) else 0
        message = str(obj.get("message") or "watch error")
        raise KubeError(
            status, f"Kubernetes API: {message} (HTTP {status})", str(obj.get("reason") or "")
        )
    return kind, obj
