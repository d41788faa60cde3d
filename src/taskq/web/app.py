"""The dashboard's Starlette application: settings, the store, auth, rendering, routes.

``create_app(settings)`` builds it; ``taskq dashboard`` serves it with uvicorn. Pages are
in ``pages.py``, actions in ``actions.py``, safety rules in ``security.py``.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware, RequestResponseEndpoint
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from .. import redaction
from ..client import AsyncClient
from ..store import Store, create_store
from . import actions, pages
from .security import CSRF_COOKIE, csrf_token, who

HERE = Path(__file__).parent


@dataclass(frozen=True, slots=True)
class DashboardSettings:
    dsn: str | None = None
    schema: str | None = None
    allow_actions: bool = False
    token: str | None = None  # TASKQ_DASHBOARD_TOKEN
    poll_seconds: float = 3.0


def _age(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    seconds = max(0.0, seconds)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds / size:.1f}{unit}"
    return f"{seconds:.1f}s"


def _since(moment: datetime | None) -> str:
    if moment is None:
        return "-"
    return _age((datetime.now(UTC) - moment).total_seconds()) + " ago"


def _when(moment: datetime | None) -> str:
    return "-" if moment is None else moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _pretty(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def _environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(HERE / "templates"),
        autoescape=select_autoescape(["html"]),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(age=_age, since=_since, when=_when, pretty=_pretty, redact=redaction.text)
    return env


class Pages:
    """Rendering with what every page needs (settings, the CSRF token, who)."""

    def __init__(self, settings: DashboardSettings) -> None:
        self.settings = settings
        self.env = _environment()

    def render(self, request: Request, template: str, **context: Any) -> HTMLResponse:
        store: Store = request.app.state.store
        body = self.env.get_template(template).render(
            request=request,
            settings=self.settings,
            store_dsn=store.display_dsn,
            store_kind=store.kind,
            csrf=csrf_token(request),
            user=getattr(request.state, "who", None),
            now=datetime.now(UTC),
            **context,
        )
        return HTMLResponse(body)


class Guard(BaseHTTPMiddleware):
    """Authenticate every request (when a token is set) and hand out the CSRF cookie."""

    def __init__(self, app: Any, *, settings: DashboardSettings) -> None:
        super().__init__(app)
        self._settings = settings

    async def dispatch(self, request: Request, call_next: RequestResponseEndpoint) -> Response:
        caller = who(request, self._settings.token)
        if caller is None:
            return PlainTextResponse(
                "authentication required: TASKQ_DASHBOARD_TOKEN as a bearer token or as "
                "the basic auth password\n",
                status_code=401,
                headers={"WWW-Authenticate": 'Basic realm="taskq dashboard", charset="UTF-8"'},
            )
        request.state.who = caller
        response = await call_next(request)
        fresh = getattr(request.state, "new_csrf", None)
        if fresh:
            response.set_cookie(
                CSRF_COOKIE, fresh, httponly=True, samesite="strict", path="/", max_age=86400
            )
        response.headers.setdefault("X-Frame-Options", "DENY")
        response.headers.setdefault("Referrer-Policy", "same-origin")
        return response


Handler = Callable[[Request], Awaitable[Response]]


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
        Route("/", pages.overview),
        Route("/jobs", pages.jobs),
        Route("/jobs/{job_id}", pages.job),
        Route("/dead", pages.dead),
        Route("/workers", pages.workers),
        Route("/queues", pages.queues),
        Route("/workflows", pages.workflows),
        Route("/workflows/{workflow_id}", pages.workflow),
        Route("/actions/{action}", actions.act, methods=["POST"]),
        Route("/actions/queues/{name}/{action}", actions.queue_act, methods=["POST"]),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
    ]
    app = Starlette(
        routes=routes,
        lifespan=lifespan,
        middleware=[Middleware(Guard, settings=settings)],
    )
    app.state.pages = Pages(settings)
    app.state.settings = settings
    return app
