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
from ..http import EndpointServer, Response, probe_route


class StatusServer:
    def __init__(
        self, *, status: Callable[[], dict[str, Any]], ready: Callable[[], tuple[bool, str]]
    ) -> None:
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

    async def _readiness(self) -> tuple[bool, str]:
        return self._ready()

    async def _route(self, path: str) -> Response:
        response = await probe_route(path, ready=self._readiness, registry=metrics.WORKGROUP)
        if response is not None:
            return response
        if path == "/status":
            return 200, "application/json", json.dumps(self._status(), indent=2).encode() + b"\n"
        return 404, "text/plain", b"not found: try /live /ready /metrics /status\n"
