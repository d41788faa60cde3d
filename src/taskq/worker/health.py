"""The worker's health endpoints: a small asyncio HTTP/1.0 server, stdlib only.

* ``GET /live``    200 while the event loop answers (this handler runs on it);
* ``GET /ready``   200 when not shutting down and ``store.ping()`` answers, else 503;
* ``GET /metrics`` the worker's Prometheus registry (``metrics.WORKER``).

Served on ``--health-port`` (TCP on ``health_host``, default ``0.0.0.0`` so probes and
scrapers from outside the host or pod reach it; port 0 picks a free port, logged in
``health-server-started``) or on ``--health-socket-path`` (a Unix socket, local only).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
from collections.abc import Awaitable, Callable

from .. import metrics
from ..exceptions import ConfigError
from ..logs import get_logger

log = get_logger(__name__)

READ_TIMEOUT = 5.0
_REASONS = {200: "OK", 404: "Not Found", 405: "Method Not Allowed", 503: "Service Unavailable",
            400: "Bad Request"}
METRICS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class HealthServer:
    def __init__(self, *, ready: Callable[[], Awaitable[tuple[bool, str]]],
                 port: int | None = None, host: str = "0.0.0.0",
                 socket_path: str | None = None) -> None:
        self._ready = ready
        self._port = port
        self._host = host
        self._socket_path = socket_path
        self._server: asyncio.AbstractServer | None = None
        self.bound_port: int | None = None

    async def start(self) -> None:
        """Start serving; a port or path that cannot be bound is a ConfigError."""
        try:
            await self._bind()
        except OSError as exc:
            where = self._socket_path or f"{self._host}:{self._port}"
            raise ConfigError(f"cannot serve health endpoints on {where}: "
                              f"{exc.strerror or exc}") from exc

    async def _bind(self) -> None:
        if self._socket_path is not None:
            _remove_stale_socket(self._socket_path)
            self._server = await asyncio.start_unix_server(self._handle, self._socket_path)
            log.info("health-server-started", socket_path=self._socket_path)
        elif self._port is not None:
            self._server = await asyncio.start_server(self._handle, self._host, self._port)
            self.bound_port = self._server.sockets[0].getsockname()[1]
            log.info("health-server-started", host=self._host, port=self.bound_port)

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None
            if self._socket_path is not None:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(self._socket_path)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            status, content_type, body, head_only = await asyncio.wait_for(
                self._respond(reader), READ_TIMEOUT)
            head = (f"HTTP/1.0 {status} {_REASONS.get(status, '')}\r\n"
                    f"Content-Type: {content_type}\r\nContent-Length: {len(body)}\r\n"
                    "Connection: close\r\n\r\n")
            writer.write(head.encode() + (b"" if head_only else body))
            await writer.drain()
        except (TimeoutError, ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()

    async def _respond(self, reader: asyncio.StreamReader) -> tuple[int, str, bytes, bool]:
        request_line = await reader.readline()
        while (await reader.readline()) not in (b"\r\n", b"\n", b""):
            pass  # headers: not needed
        parts = request_line.decode("latin-1").split()
        if len(parts) < 2:
            return 400, "text/plain", b"bad request\n", False
        method, path = parts[0], parts[1].split("?", 1)[0]
        if method not in ("GET", "HEAD"):
            return 405, "text/plain", b"method not allowed\n", False
        status, content_type, body = await self._route(path)
        return status, content_type, body, method == "HEAD"

    async def _route(self, path: str) -> tuple[int, str, bytes]:
        if path == "/live":
            return 200, "text/plain", b"ok\n"
        if path == "/ready":
            ok, why = await self._ready()
            return (200 if ok else 503), "text/plain", (why + "\n").encode()
        if path == "/metrics":
            return 200, METRICS_CONTENT_TYPE, metrics.render(metrics.WORKER)
        return 404, "text/plain", b"not found\n"


def _remove_stale_socket(path: str) -> None:
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return
    if stat.S_ISSOCK(mode):
        os.unlink(path)
