"""The supervisor's small HTTP endpoint (``[supervisor] http_port``), stdlib asyncio only.

``GET /live``    200 while the supervisor's event loop answers.
``GET /ready``   200, or 503 while any child is latched or the supervisor shuts down.
``GET /metrics`` Prometheus text of ``metrics.WORKGROUP``.
``GET /status``  JSON: instance, state, and every child (name, pid, state, restarts,
                 last exit cause, latched).

One request per connection (``Connection: close``); a client that does not send its
request line within a few seconds is dropped.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

from .. import metrics
from ..logs import get_logger

log = get_logger(__name__)

_REASONS = {200: "OK", 404: "Not Found", 405: "Method Not Allowed", 503: "Service Unavailable"}
_READ_TIMEOUT = 5.0


class StatusServer:
    def __init__(self, *, status: Callable[[], dict[str, Any]],
                 ready: Callable[[], tuple[bool, str]]) -> None:
        self._status = status
        self._ready = ready
        self._server: asyncio.Server | None = None

    @property
    def port(self) -> int | None:
        if self._server is None or not self._server.sockets:
            return None
        return int(self._server.sockets[0].getsockname()[1])

    async def start(self, port: int, host: str = "0.0.0.0") -> int:
        self._server = await asyncio.start_server(self._handle, host, port)
        return self.port or port

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None

    def _route(self, method: str, path: str) -> tuple[int, str, bytes]:
        if method not in ("GET", "HEAD"):
            return 405, "text/plain", b"method not allowed\n"
        path = path.split("?", 1)[0]
        if path == "/live":
            return 200, "text/plain", b"ok\n"
        if path == "/ready":
            ok, why = self._ready()
            return (200 if ok else 503), "text/plain", (why + "\n").encode()
        if path == "/metrics":
            return 200, "text/plain; version=0.0.4", metrics.render(metrics.WORKGROUP)
        if path == "/status":
            body = json.dumps(self._status(), indent=2).encode() + b"\n"
            return 200, "application/json", body
        return 404, "text/plain", b"not found: try /live /ready /metrics /status\n"

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = await asyncio.wait_for(reader.readline(), _READ_TIMEOUT)
            while True:  # skip the headers
                header = await asyncio.wait_for(reader.readline(), _READ_TIMEOUT)
                if header in (b"\r\n", b"\n", b""):
                    break
            parts = request.decode("latin-1").split()
            if len(parts) < 2:
                return
            method, path = parts[0].upper(), parts[1]
            code, content_type, body = self._route(method, path)
            head = (
                f"HTTP/1.1 {code} {_REASONS.get(code, '')}\r\n"
                f"Content-Type: {content_type}\r\n"
                f"Content-Length: {len(body)}\r\n"
                "Connection: close\r\n\r\n"
            ).encode()
            writer.write(head if method == "HEAD" else head + body)
            await writer.drain()
        except (TimeoutError, ConnectionError, asyncio.IncompleteReadError, ValueError):
            pass
        except Exception:
            log.exception("workgroup.http_request_failed")
        finally:
            writer.close()
            try:
                await writer.wait_closed()
            except (ConnectionError, OSError):
                pass
