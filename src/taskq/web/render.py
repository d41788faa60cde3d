"""Rendering the dashboard's pages: the Jinja2 environment, its filters, and what every
page is given (settings, the store's name, who is asking, their CSRF token)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.requests import Request
from starlette.responses import HTMLResponse

from .. import redaction

HERE = Path(__file__).parent
#: the pages in the header: (key, label, path)
NAV = (
    ("overview", "Overview", "/"),
    ("jobs", "Jobs", "/jobs"),
    ("dead", "Dead letters", "/dead"),
    ("queues", "Queues", "/queues"),
    ("actors", "Actors", "/actors"),
    ("schedules", "Schedules", "/schedules"),
    ("workflows", "Workflows", "/workflows"),
    ("workers", "Workers", "/workers"),
)


def age(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    seconds = max(0.0, seconds)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds / size:.1f}{unit}"
    return f"{seconds:.1f}s"


def since(moment: datetime | None) -> str:
    if moment is None:
        return "-"
    return age((datetime.now(UTC) - moment).total_seconds()) + " ago"


def when(moment: datetime | None) -> str:
    return "-" if moment is None else moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def pretty(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(HERE / "templates"),
        autoescape=select_autoescape(["html", "svg"]),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(age=age, since=since, when=when, pretty=pretty, redact=redaction.text)
    return env


class Pages:
    """Renders a template with what every page needs."""

    def __init__(self, settings: Any) -> None:
        self.settings = settings
        self.env = environment()

    def render(
        self, request: Request, template: str, *, status: int = 200, **context: Any
    ) -> HTMLResponse:
        store = request.app.state.store
        body = self.env.get_template(template).render(
            request=request,
            settings=self.settings,
            store_dsn=store.display_dsn,
            store_kind=store.kind,
            csrf=getattr(request.state, "csrf", ""),
            user=getattr(request.state, "who", None),
            now=datetime.now(UTC),
            nav=NAV,
            **context,
        )
        return HTMLResponse(body, status_code=status)
