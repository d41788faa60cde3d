"""The supervisor's HTTP endpoints (``[supervisor] http_port``), served by
``taskq.http.EndpointServer``.

``GET /live``    200 while the supervisor's event loop answers.
``GET /ready``   200 once every configured child runs and its own ``/ready`` (asked over
                 its health socket) is 200: its consumers claim and its store answers;
                 503 while any child is starting, in backoff or latched, or the supervisor
                 shuts down; the body names each child that is not ready and why.
``GET /metrics`` Prometheus text of ``metrics.WORKGROUP`` and of every running child's
                 worker metrics, labelled ``worker="<name>"`` (``scrape.py``).
``GET /status``  JSON: instance, state, and every child (name, pid, state, restarts,
                 last exit cause, latched).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from typing import Any

from prometheus_client import generate_latest

from .. import metrics
from ..events import WORKGROUP_HTTP_LISTENING
from ..exceptions import WorkgroupStartError
from ..http import METRICS_CONTENT_TYPE, EndpointServer, Response, probe_route
from ..lifecycle import Stoppable, StopSignal
from ..logs import get_logger
from .scrape import MergedMetrics, child_not_ready, scrape_children

log = get_logger(__name__)

#: how a not-ready answer starts (then "; "-separated problems, one per child)
NOT_READY = "not ready: "
SHUTTING_DOWN = "shutting down"

#: (worker name, its health socket path, or None while it has no running process)
ChildSockets = Callable[[], Sequence[tuple[str, str | None]]]


class StatusServer(Stoppable):
    """The endpoints, as a part of the supervisor (``lifecycle.Part``): ``start`` binds
    ``port`` (None: nothing to serve; a port that cannot be bound refuses the start),
    ``run`` serves until the stop, then closes."""

    name = "http"
    stop_timeout = None  # closing is immediate

    def __init__(
        self,
        *,
        status: Callable[[], dict[str, Any]],
        ready: Callable[[], tuple[bool, str]],
        children: ChildSockets = tuple,
        port: int | None = None,
        host: str = "127.0.0.1",
    ) -> None:
        self._status = status
        self._children = children
        self._ready = ready
        self._bind = port
        self._host = host
        self._server = EndpointServer(self._route, name="workgroup")
        self._stopped = StopSignal()

    @property
    def port(self) -> int | None:
        return self._server.port

    async def start(self) -> None:
        if self._bind is None:
            return
        try:
            port = await self._server.start_tcp(self._host, self._bind)
        except OSError as exc:
            raise WorkgroupStartError(
                f"cannot serve HTTP on port {self._bind}: {exc.strerror or exc}"
            ) from None
        log.event(WORKGROUP_HTTP_LISTENING, port=port, host=self._host)

    async def run(self) -> None:
        try:
            await self._stopped.wait()
        finally:
            await self._server.close()

    async def _readiness(self) -> tuple[bool, str]:
        """The supervisor's view (``ready``), then each running child's own ``/ready``."""
        ok, why = self._ready()
        if why == SHUTTING_DOWN:
            return ok, why
        problems = [] if ok else [why.removeprefix(NOT_READY)]
        running = [(name, path) for name, path in self._children() if path is not None]
        answers = await asyncio.gather(*(child_not_ready(n, p) for n, p in running))
        problems += [answer for answer in answers if answer is not None]
        if problems:
            return False, NOT_READY + "; ".join(problems)
        return True, "ready"

    async def _metrics(self) -> Response:
        children = list(self._children())
        scraped = await scrape_children([(n, p) for n, p in children if p is not None])
        for name, _ in children:
            metrics.workgroup_child_scrape_ok.labels(worker=name).set(scraped.get(name) is not None)
        merged = MergedMetrics(metrics.WORKGROUP, {n: scraped.get(n) for n, _ in children})
        return 200, METRICS_CONTENT_TYPE, generate_latest(merged)

    async def _route(self, path: str) -> Response:
        if path == "/metrics":
            return await self._metrics()
        response = await probe_route(path, ready=self._readiness, registry=metrics.WORKGROUP)
        if response is not None:
            return response
        if path == "/status":
            return 200, "application/json", json.dumps(self._status(), indent=2).encode() + b"\n"
        return 404, "text/plain", b"not found: try /live /ready /metrics /status\n"
