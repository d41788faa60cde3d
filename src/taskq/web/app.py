"""The dashboard's Starlette application: its settings, the store, the routes, and what
a refused or failed request gets.

``create_app(settings)`` builds it; ``taskq dashboard`` (``serve.py``) serves it. Pages
are in ``pages.py``, actions in ``actions.py``, what every request passes first in
``guard.py`` (``auth.py``, ``csrf.py``), rendering in ``render.py``.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from ..client import AsyncClient
from ..exceptions import StoreError, TaskqError
from ..store import Store, create_store
from . import actions, csrf, fleet_pages, pages, queue_pages
from .auth import Throttle
from .guard import Guard
from .render import HERE, Pages


@dataclass(frozen=True, slots=True)
class DashboardSettings:
    dsn: str | None = None
    schema: str | None = None
    allow_actions: bool = False
    token: str | None = None  # TASKQ_DASHBOARD_TOKEN
    poll_seconds: float = 3.0
    #: the address it binds (answered as a host name unless a wildcard)
    host: str = "127.0.0.1"
    #: more host names it answers to (--allowed-host)
    allowed_hosts: tuple[str, ...] = ()
    #: signs CSRF tokens (TASKQ_DASHBOARD_SECRET); None: random per process
    secret: bytes | None = None


async def _bad_input(request: Request, exc: Exception) -> Response:
    """A taskq error from the store or the client while serving a page: the request
    asked for something taskq refuses (400), or the store failed or is away (503)."""
    status = 503 if isinstance(exc, StoreError) else 400
    return PlainTextResponse(f"{exc}\n", status_code=status)


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    return PlainTextResponse(f"{exc.detail}\n", status_code=exc.status_code)


def create_app(settings: DashboardSettings, *, store: Store | None = None) -> Starlette:
    """The dashboard. ``store``: an open store to use (else one from the settings)."""

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        own = store is None
        app.state.store = store or create_store(settings.dsn, settings.schema)
        if own:
            await app.state.store.open()
        app.state.client = AsyncClient(store=app.state.store)
        try:
            yield
        finally:
            if own:
                await app.state.store.close()

    routes: list[Route | Mount] = [
        Route("/", queue_pages.overview),
        Route("/jobs", pages.jobs),
        Route("/jobs/{job_id}", pages.job),
        Route("/dead", pages.dead),
        Route("/workers", fleet_pages.workers),
        Route("/schedules", fleet_pages.schedules),
        Route("/actors", fleet_pages.actors),
        Route("/queues", queue_pages.queues),
        Route("/queues/{name}", queue_pages.queue),
        Route("/workflows", pages.workflows),
        Route("/workflows/{workflow_id}", pages.workflow),
        Route("/actions/{action}", actions.act, methods=["POST"]),
        Route("/actions/queues/{name}/{action}", actions.queue_act, methods=["POST"]),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
    ]
    secret = settings.secret or csrf.new_secret()
    throttle = Throttle()
    app = Starlette(
        routes=routes,
        lifespan=lifespan,
        middleware=[Middleware(Guard, settings=settings, secret=secret, throttle=throttle)],
        exception_handlers={TaskqError: _bad_input, HTTPException: _http_error},
    )
    app.state.pages = Pages(settings)
    app.state.settings = settings
    app.state.secret = secret
    app.state.throttle = throttle  # the tests turn its clock
    return app
