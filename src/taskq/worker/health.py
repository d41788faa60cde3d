"""The worker's health endpoints, served by ``taskq.http.EndpointServer``.

* ``GET /live``    200 while the event loop answers (this handler runs on it);
* ``GET /ready``   200 when not shutting down and ``store.ping()`` answers, else 503;
* ``GET /metrics`` the worker's Prometheus registry (``metrics.WORKER``; outside a
  workgroup ``metrics.BARE_WORKER``, which adds the fleet's backlog).

Served on ``--health-port`` (TCP on ``--health-host``, default ``127.0.0.1``: only this
machine, unless told otherwise; a container sets ``0.0.0.0`` so that probes and scrapers
reach the pod's address; port 0 picks a free port, logged in ``health-server-started``)
or on ``--health-socket-path`` (a Unix socket, local only).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from .. import metrics
from ..events import HEALTH_SERVER_STARTED
from ..exceptions import ConfigError
from ..http import EndpointServer, Response, probe_route
from ..lifecycle import Stoppable, StopSignal
from ..logs import get_logger

log = get_logger(__name__)


class HealthServer(Stoppable):
    name = "health"
    stop_timeout = 5.0

    def __init__(
        self,
        *,
        ready: Callable[[], Awaitable[tuple[bool, str]]],
        port: int | None = None,
        host: str = "127.0.0.1",
        socket_path: str | None = None,
        registry: metrics.Registry = metrics.WORKER,
    ) -> None:
        self._ready = ready
        self._registry = registry
        self._port = port
        self._host = host
        self._socket_path = socket_path
        self._server = EndpointServer(self._route, name="worker-health")
        self.bound_port: int | None = None
        self._stopped = StopSignal()

    async def start(self) -> None:
        """Start serving (if a port or socket was asked for); a port or path that cannot
        be bound is a ConfigError."""
        try:
            if self._socket_path is not None:
                await self._server.start_unix(self._socket_path)
                log.event(HEALTH_SERVER_STARTED, socket_path=self._socket_path)
            elif self._port is not None:
                self.bound_port = await self._server.start_tcp(self._host, self._port)
                log.event(HEALTH_SERVER_STARTED, host=self._host, port=self.bound_port)
        except OSError as exc:
            where = self._socket_path or f"{self._host}:{self._port}"
            raise ConfigError(
                f"cannot serve health endpoints on {where}: {exc.strerror or exc}"
            ) from exc

    async def run(self) -> None:
        """Serve until stopped (the first part started, the last stopped)."""
        try:
            await self._stopped.wait()
        finally:
            await self._server.close()

    async def _route(self, path: str) -> Response:
        response = await probe_route(path, ready=self._ready, registry=self._registry)
        return response or (404, "text/plain", b"not found: try /live /ready /metrics\n")
