"""A notification receiver (a Slack or Teams webhook, a generic webhook, a CloudEvents sink),
served over HTTP on ``127.0.0.1``.

Every request is recorded in ``requests`` (method, path, headers, raw body). The answers are 200
``ok`` unless :meth:`NotificationReceiver.answer` queued others (a status, or a status with
headers such as ``Retry-After``), and with ``hang`` set the receiver reads the request and never
answers. Use it as an async context manager::

    async with NotificationReceiver() as receiver:
        receiver.answer(500, (429, {"Retry-After": "2"}))
        ...  # send to receiver.url
        assert receiver.requests[-1].json()["events"]
"""

from __future__ import annotations

import asyncio
import json
import socket
from collections import deque
from dataclasses import dataclass
from typing import Any, Self

from aiohttp import web

Answer = int | tuple[int, dict[str, str]] | tuple[int, dict[str, str], str]
"""A status; a status and headers; a status, headers and body."""


@dataclass(frozen=True)
class ReceivedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)

    def header(self, name: str) -> str | None:
        """A header, by case-insensitive name."""
        for key, value in self.headers.items():
            if key.lower() == name.lower():
                return value
        return None


class NotificationReceiver:
    def __init__(self, path: str = "/hook") -> None:
        self.path = path
        self.requests: list[ReceivedRequest] = []
        self.hang = False
        """Read each request and never answer (the connection stays open)."""
        self._answers: deque[Answer] = deque()
        self._runner: web.AppRunner | None = None
        self._never = asyncio.Event()
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}{self.path}"

    def answer(self, *answers: Answer) -> None:
        """Answer the next requests with these, in order (then 200 again)."""
        self._answers.extend(answers)

    async def _handle(self, request: web.Request) -> web.Response:
        body = await request.read()
        self.requests.append(
            ReceivedRequest(request.method, request.path, dict(request.headers), body)
        )
        if self.hang:
            await self._never.wait()
        answer = self._answers.popleft() if self._answers else 200
        if isinstance(answer, int):
            answer = (answer, {})
        status, headers = answer[0], answer[1]
        text = answer[2] if len(answer) > 2 else ("ok" if status < 300 else "no")
        return web.Response(status=status, text=text, headers=headers)

    async def start(self) -> Self:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
        await self._runner.setup()
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        site = web.SockSite(self._runner, sock)
        await site.start()
        return self

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> Self:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()


def unused_port() -> int:
    """A loopback port nothing listens on (connections to it are refused)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
