"""The one small HTTP server taskq runs for probes and scrapers (stdlib asyncio only).

A worker serves ``/live``, ``/ready``, ``/metrics`` on it (``worker/health.py``); a
workgroup supervisor adds ``/status`` (``workgroup/http.py``). Each of those is only a
*route*: ``async (path) -> (status, content type, body)``. This module owns the rest:
listening on TCP or a Unix socket, reading one request per connection (a client that
does not send its request within ``READ_TIMEOUT`` is dropped), ``GET`` and ``HEAD``
(405 for anything else), query strings ignored, ``Connection: close``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
from collections.abc import Awaitable, Callable

from . import metrics
from .events import HTTP_REQUEST_FAILED
from .logs import get_logger

log = get_logger(__name__)

READ_TIMEOUT = 5.0
METRICS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
_REASONS = {
    200: "OK",
    400: "Bad Request",
    404: "Not Found",
    405: "Method Not Allowed",
    503: "Service Unavailable",
}

Response = tuple[int, str, bytes]
Route = Callable[[str], Awaitable[Response]]


class EndpointServer:
    """Serve ``route`` over HTTP/1.0 on a TCP port or a Unix socket."""

    def __init__(self, route: Route, *, name: str) -> None:
        self._route = route
        self._name = name  # for the log line of a failing handler
        self._server: asyncio.Server | None = None
        self._socket_path: str | None = None

    @property
    def port(self) -> int | None:
        """The bound TCP port (useful after asking for port 0)."""
        if self._server is None or not self._server.sockets or self._socket_path:
            return None
        return int(self._server.sockets[0].getsockname()[1])

    async def start_tcp(self, host: str, port: int) -> int:
        """Listen on ``host:port``; returns the bound port. Raises OSError."""
        self._server = await asyncio.start_server(self._handle, host, port)
        return self.port or port

    async def start_unix(self, path: str) -> None:
        """Listen on a Unix socket (a stale socket file is replaced). Raises OSError."""
        _remove_stale_socket(path)
        self._server = await asyncio.start_unix_server(self._handle, path)
        self._socket_path = path

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None
        if self._socket_path is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self._socket_path)
            self._socket_path = None

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            method, status, content_type, body = await asyncio.wait_for(
                self._respond(reader), READ_TIMEOUT
            )
            head = (
                f"HTTP/1.0 {status} {_REASONS.get(status, '')}\r\n"
                f"Content-Type: {content_type}\r\nContent-Length: {len(body)}\r\n"
                "Connection: close\r\n\r\n"
            ).encode()
            writer.write(head if method == "HEAD" else head + body)
            await writer.drain()
        except (TimeoutError, ConnectionError, asyncio.IncompleteReadError, ValueError):
            pass  # the client went away or never spoke: nothing to answer
        except Exception:
            log.event(HTTP_REQUEST_FAILED, exc_info=True, server=self._name)
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError, OSError):
                await writer.wait_closed()

    async def _respond(self, reader: asyncio.StreamReader) -> tuple[str, int, str, bytes]:
        request_line = await reader.readline()
        while (await reader.readline()) not in (b"\r\n", b"\n", b""):
            pass  # headers: not needed
        parts = request_line.decode("latin-1").split()
        if len(parts) < 2:
            return "GET", 400, "text/plain", b"bad request\n"
        method, path = parts[0].upper(), parts[1].split("?", 1)[0]
        if method not in ("GET", "HEAD"):
            return method, 405, "text/plain", b"method not allowed\n"
        status, content_type, body = await self._route(path)
        return method, status, content_type, body


async def probe_route(
    path: str, *, ready: Callable[[], Awaitable[tuple[bool, str]]], registry: metrics.Registry
) -> Response | None:
    """``/live``, ``/ready`` and ``/metrics``, shared by every taskq process; None for
    any other path."""
    if path == "/live":
        return 200, "text/plain", b"ok\n"
    if path == "/ready":
        ok, why = await ready()
        return (200 if ok else 503), "text/plain", (why + "\n").encode()
    if path == "/metrics":
        return 200, METRICS_CONTENT_TYPE, metrics.render(registry)
    return None


def _remove_stale_socket(path: str) -> None:
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return
    if stat.S_ISSOCK(mode):
        os.unlink(path)
