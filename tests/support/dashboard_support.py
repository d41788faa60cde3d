"""The dashboard in the tests: an app over a real store behind Starlette's test client,
answering the test client's host name, the CSRF token of a page, and HTTP basic auth's
header."""

from __future__ import annotations

import base64
import re

from starlette.testclient import TestClient

from taskq.web import DashboardSettings, create_app


def web_for(target, **settings) -> TestClient:
    settings.setdefault("allowed_hosts", ("testserver",))  # the test client's Host
    return TestClient(
        create_app(DashboardSettings(dsn=target.dsn, schema=target.schema, **settings)),
        follow_redirects=False,
    )


def token_of(page: str) -> str:
    """The CSRF token a page's forms carry."""
    match = re.search(r'name="csrf" value="([^"]+)"', page)
    assert match, "no CSRF field in the page"
    return match.group(1)


def basic(user: str, password: str) -> dict[str, str]:
    """The ``Authorization`` header of HTTP basic auth."""
    raw = base64.b64encode(f"{user}:{password}".encode()).decode()
    return {"Authorization": f"Basic {raw}"}
