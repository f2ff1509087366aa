"""Running an asyncio test double from synchronous code: in a daemon thread with its own loop."""

from __future__ import annotations

import asyncio
import threading
from typing import Any, Self


class InThread:
    """For a double with ``async start()`` (returns once it listens) and ``async close()``:
    ``async with`` it in a test's loop, or :meth:`start_in_thread` / :meth:`stop` it."""

    _loop: asyncio.AbstractEventLoop | None = None
    _thread: threading.Thread | None = None

    async def start(self) -> Any:
        raise NotImplementedError

    async def close(self) -> None:
        raise NotImplementedError

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    def start_in_thread(self, timeout: float = 30.0) -> Self:
        """Serve from a daemon thread with its own event loop; returns once it listens."""
        loop = asyncio.new_event_loop()
        ready = threading.Event()
        failure: list[BaseException] = []

        def run() -> None:
            asyncio.set_event_loop(loop)
            try:
                loop.run_until_complete(self.start())
            except BaseException as exc:
                failure.append(exc)
            ready.set()
            try:
                if not failure:
                    loop.run_forever()
            finally:
                loop.close()

        self._loop = loop
        self._thread = threading.Thread(target=run, name=type(self).__name__, daemon=True)
        self._thread.start()
        if not ready.wait(timeout):
            raise TimeoutError(f"{type(self).__name__} did not start within {timeout} s")
        if failure:
            raise failure[0]
        return self

    def stop(self, timeout: float = 30.0) -> None:
        """Stop a double started with :meth:`start_in_thread`."""
        loop, thread = self._loop, self._thread
        self._loop = self._thread = None
        if loop is None or thread is None:
            return
        if not loop.is_closed():
            asyncio.run_coroutine_threadsafe(self.close(), loop).result(timeout)
            loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout)
