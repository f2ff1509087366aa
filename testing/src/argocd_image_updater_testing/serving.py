"""Standard-library HTTP servers of the sandbox, served from a daemon thread."""

from __future__ import annotations

import socketserver
import threading


def serve_in_thread(server: socketserver.BaseServer, name: str) -> threading.Thread:
    """Start ``server.serve_forever`` in a daemon thread (polling for shutdown every 50 ms)."""
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, name=name, daemon=True
    )
    thread.start()
    return thread


def shut_down(
    server: socketserver.BaseServer | None, thread: threading.Thread | None, timeout: float = 10
) -> None:
    """Stop serving, close the socket and wait for the thread (either may be None)."""
    if server is not None:
        server.shutdown()
        server.server_close()
    if thread is not None:
        thread.join(timeout=timeout)
