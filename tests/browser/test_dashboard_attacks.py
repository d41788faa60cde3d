"""The security review's attacks on the dashboard, mounted in a real Chromium against a
real ``taskq dashboard --allow-actions`` (issue 21 items 1 and 2):

- **cookie tossing**: a page on another port of the same host (cookies are not
  isolated by port) plants its own session and CSRF cookies, then posts a retry form to
  the dashboard with the browser's basic-auth credentials;
- **the sandboxed iframe**: the same form from a ``sandbox`` iframe (``Origin: null``);
- **reflected XSS**: ``/dead?queue='+alert(document.domain)+'`` and a click on
  "Discard all", which used to run the queue as script inside an ``onclick``.

Each reaches the dashboard (the answer is 403, not 401: the credentials were sent) and
changes nothing; no page logs a console error (a CSP violation would be one).
"""

from __future__ import annotations

import base64
import html
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from taskq.client import Client
from taskq.testing import drain
from tests.support import dashboard_actors as actors
from tests.support.dashboard_process import TOKEN, answers, free_port, start, stop
from tests.support.helpers import wait_until
from tests.support.workgroup_harness import run_cli

pytestmark = pytest.mark.slow

XSS = "'+alert(document.domain)+'"
ALICE = {"Authorization": "Basic " + base64.b64encode(f"alice:{TOKEN}".encode()).decode()}


def attacker_pages(dashboard: str, job_id: str) -> dict[str, str]:
    form = (
        f'<form method="post" action="{dashboard}/actions/retry">'
        f'<input name="id" value="{job_id}"><input name="csrf" value="x">'
        '<input name="all" value="dead"></form>'
        # submitted once loaded: a frame's navigation started while its parent still
        # loads may be dropped by Chromium
        '<script>addEventListener("load", () => document.forms[0].submit())</script>'
    )
    toss = (
        "<script>"
        'document.cookie = "taskq_session=" + "A".repeat(43) + "; path=/actions";'
        'document.cookie = "taskq_csrf=x; path=/actions";'
        "</script>"
    )
    return {
        "/toss": f"<!doctype html><html><body>{toss}{form}</body></html>",
        "/frame": (
            "<!doctype html><html><body>"
            f'<iframe sandbox="allow-forms allow-scripts" srcdoc="{html.escape(toss + form)}">'
            "</iframe></body></html>"
        ),
    }


@pytest.fixture
def attacker(site: dict[str, Any]) -> Iterator[str]:
    """Another web server on the same host, another port: the attacker's pages."""
    pages = attacker_pages(site["url"], str(site["dead"]))

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = pages.get(self.path, "").encode()
            self.send_response(200 if body else 404)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        thread.join(10)
        server.server_close()


@pytest.fixture
def site(sqlite_target, tmp_path: Path) -> Iterator[dict[str, Any]]:
    """A store with one dead job and ``taskq dashboard --allow-actions`` on it."""
    target = sqlite_target
    env = {**target.env, "TASKQ_DASHBOARD_TOKEN": TOKEN}
    assert run_cli("migrate", env=env).returncode == 0
    with Client(target.dsn, schema=target.schema) as client:
        dead = client.enqueue(actors.load_report, "/r.csv")
        drain(client, registry=actors.registry)
        assert client.get(dead).state == "dead"
    port = free_port()
    dashboard = start(
        ["dashboard", "--port", str(port), "--allow-actions"], env, tmp_path / "dash.log"
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until(lambda: answers(url + "/"), timeout=30, what="the dashboard listening")
        yield {"url": url, "dead": dead, "target": target, "logs": tmp_path}
    finally:
        stop(dashboard)


def still_dead(site: dict[str, Any]) -> bool:
    target = site["target"]
    with Client(target.dsn, schema=target.schema) as client:
        return client.get(site["dead"]).state == "dead" and client.stats()["queued"] == 0


def refusals(site: dict[str, Any]) -> list[dict[str, Any]]:
    lines = (site["logs"] / "dash.log").read_text().splitlines()
    found = [json.loads(line) for line in lines if line.startswith("{")]
    return [e for e in found if e.get("event") == "dashboard-action-refused"]


@pytest.mark.parametrize(("page", "origin"), [("/toss", "attacker"), ("/frame", "null")])
def test_a_forged_form_from_another_port_is_refused(
    browser, site, attacker, page: str, origin: str
) -> None:
    # the worst case: the browser sends the operator's credentials with every request
    context = browser.new_context(extra_http_headers=ALICE)
    try:
        tab = context.new_page()
        tab.goto(site["url"] + "/dead")  # the operator's session
        assert tab.locator("#discard-all").count() == 1
        tab.goto(attacker + page)
        # the dashboard says why it refused (the browser may not report a framed answer);
        # Chromium sometimes sends a sandboxed frame's request without the credentials
        # (401, refused before the CSRF check): the attack page is then loaded again
        for _ in range(10):
            try:
                wait_until(lambda: refusals(site), timeout=5, what="the forged form refused")
                break
            except AssertionError:
                tab.goto(attacker + page)
        for refused in refusals(site):
            assert refused["who"] == "alice"  # it got past authentication
            assert refused["origin"] == (attacker if origin == "attacker" else "null")
        if page == "/toss":  # the toss itself worked
            planted = {(c["name"], c["value"], c["path"]) for c in context.cookies()}
            assert ("taskq_session", "A" * 43, "/actions") in planted
    finally:
        context.close()
    assert still_dead(site)


def test_a_queue_name_is_never_script(browser, site) -> None:
    context = browser.new_context(http_credentials={"username": "alice", "password": TOKEN})
    dialogs: list[tuple[str, str]] = []
    errors: list[str] = []
    try:
        tab = context.new_page()
        tab.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        tab.on("pageerror", lambda exc: errors.append(str(exc)))

        def answer(dialog: Any) -> None:
            dialogs.append((dialog.type, dialog.message))
            dialog.dismiss()

        tab.on("dialog", answer)
        tab.goto(f"{site['url']}/dead?queue={quote(XSS)}")
        tab.click("#discard-all")
        wait_until(lambda: dialogs or tab.wait_for_timeout(50), timeout=10, what="the confirm")
    finally:
        context.close()
    assert dialogs == [
        (
            "confirm",
            f"Discard all 0 dead job(s) in {XSS}? They are deleted with their error history.",
        )
    ]
    assert not any(kind == "alert" for kind, _ in dialogs)
    assert not errors, errors
    assert still_dead(site)
