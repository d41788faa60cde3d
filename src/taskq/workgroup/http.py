"""The supervisor's HTTP endpoints (``[supervisor] http_port``), served by
``taskq.http.EndpointServer``.

``GET /live``    200 while the supervisor's event loop answers.
``GET /ready``   200, or 503 while any child is latched or the supervisor shuts down.
``GET /metrics`` Prometheus text of ``metrics.WORKGROUP``.
``GET /status``  JSON: instance, state, and every child (name, pid, state, restarts,
                 last exit cause, latched).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from .. import metrics
from ..http import METRICS_CONTENT_TYPE, EndpointServer, Response


class StatusServer:
    def __init__(self, *, status: Callable[[], dict[str, Any]],
                 ready: Callable[[], tuple[bool, str]]) -> None:
        self._status = status
        self._ready = ready
        self._server = EndpointServer(self._route, name="workgroup")

    @property
    def port(self) -> int | None:
        return self._server.port

    async def start(self, port: int, host: str = "0.0.0.0") -> int:
        return await self._server.start_tcp(host, port)

    async def close(self) -> None:
        await self._server.close()

    async def _route(self, path: str) -> Response:
        if path == "/live":
            return 200, "text/plain", b"ok\n"
        if path == "/ready":
            ok, why = self._ready()
            return (200 if ok else 503), "text/plain", (why + "\n").encode()
        if path == "/metrics":
            return 200, METRICS_CONTENT_TYPE, metrics.render(metrics.WORKGROUP)
        if path == "/status":
            return 200, "application/json", json.dumps(self._status(), indent=2).encode() + b"\n"
        return 404, "text/plain", b"not found: try /live /ready /metrics /status\n"
