"""The dashboard in a real Chromium against a real store, a real ``taskq dashboard``
process and a real ``taskq worker``: every page loads with real jobs, a dead job is
retried with a click and is seen to run (the page updates itself), a queue is paused
with a click. Screenshots go to ``TASKQ_SCREENSHOTS`` (``make screenshots``: docs/img).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.dashboard_process import TOKEN, answers, free_port, start, stop
from tests.support.helpers import wait_until
from tests.support.workgroup_harness import run_cli

pytestmark = pytest.mark.slow

WORKER_QUEUES = "default,reports,emails"


@pytest.fixture
def shots(tmp_path: Path) -> Path:
    out = Path(os.environ.get("TASKQ_SCREENSHOTS") or tmp_path / "shots")
    out.mkdir(parents=True, exist_ok=True)
    return out


@pytest.fixture
def site(target, tmp_path: Path) -> Iterator[dict[str, object]]:
    """A migrated store with real jobs (some run by a real worker, one dead that will
    succeed when retried), a worker, and ``taskq dashboard --allow-actions``."""
    env = {
        **target.env,
        "TASKQ_DASHBOARD_TOKEN": TOKEN,
        "TASKQ_TEST_MARKER": str(tmp_path / "flaky-ran-once"),
    }
    assert run_cli("migrate", env=env).returncode == 0
    from taskq.client import Client
    from tests.support import dashboard_actors as actors

    with Client(target.dsn, schema=target.schema) as client:
        ids = {
            "dead": client.enqueue(actors.flaky_once),
            "report": client.enqueue(actors.load_report, "/srv/reports/q3.csv"),
        }
        for i in range(12):
            client.enqueue(actors.add, i, i)
        client.enqueue_with(actors.charge, ["4111-1111"], {"amount": 5, "api_token": "t-1"})
        client.enqueue_with(actors.add, [1, 2], queue="emails", delay=3600)
    port = free_port()
    worker = start(
        [
            "worker",
            "--actors",
            "tests.support.dashboard_actors:registry",
            "--queues",
            WORKER_QUEUES,
            "--poll-interval",
            "0.1",
            "--worker-label",
            "browser-test",
        ],
        env,
        tmp_path / "worker.log",
    )
    dashboard = start(
        ["dashboard", "--port", str(port), "--allow-actions"], env, tmp_path / "dash.log"
    )
    try:
        with Client(target.dsn, schema=target.schema) as client:
            wait_until(
                lambda: (
                    client.get(ids["dead"]).state == "dead"
                    and client.get(ids["report"]).state == "dead"
                ),
                timeout=60,
                what="the failing jobs dead",
            )
        url = f"http://127.0.0.1:{port}"
        wait_until(lambda: answers(url + "/"), timeout=30, what="the dashboard listening")
        yield {"url": url, "ids": ids, "target": target, "logs": tmp_path}
    finally:
        stop(dashboard)
        stop(worker)


def test_every_page_then_retry_a_dead_job_and_pause_a_queue(browser, site, shots) -> None:
    url, ids = site["url"], site["ids"]
    context = browser.new_context(
        http_credentials={"username": "alice", "password": TOKEN},
        viewport={"width": 1360, "height": 860},
    )
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    try:
        page.goto(url + "/")
        page.wait_for_selector('tr[data-queue="reports"]')
        assert page.locator('tr[data-queue="reports"] td[data-col="dead"]').inner_text() == "1"
        page.screenshot(path=str(shots / "dashboard-overview.png"), full_page=True)

        page.goto(url + "/jobs?state=dead")
        assert page.locator("tr[data-job]").count() == 2
        page.goto(url + "/jobs")
        page.wait_for_selector(f'tr[data-job="{ids["report"]}"]')
        page.screenshot(path=str(shots / "dashboard-jobs.png"), full_page=True)

        page.goto(f"{url}/jobs/{ids['report']}")
        assert page.locator("[data-attempt]").count() == 2
        assert "Caused by: KeyError" in page.content()
        assert "hunter2" not in page.content()
        page.screenshot(path=str(shots / "dashboard-job.png"), full_page=True)

        page.goto(url + "/workers")
        page.wait_for_selector('tr[data-worker="browser-test"][data-status="alive"]')
        page.screenshot(path=str(shots / "dashboard-workers.png"), full_page=True)

        # the pages operators look for: a queue's charts, actors, schedules, the search
        page.goto(url + "/queues/reports")
        page.wait_for_selector("#chart-hour rect.bar-dead")
        page.wait_for_selector('#queue-actors tr[data-actor="load_report"]')
        page.screenshot(path=str(shots / "dashboard-queue.png"), full_page=True)
        page.goto(url + "/actors")
        page.wait_for_selector('tr[data-actor="load_report"]')
        page.screenshot(path=str(shots / "dashboard-actors.png"), full_page=True)
        page.goto(url + "/schedules")
        page.wait_for_selector('tr[data-schedule="nightly-cleanup"]')
        assert (
            page.inner_text('tr[data-schedule="nightly-cleanup"] td[data-col="missed"]')
            == "run_once"
        )
        page.screenshot(path=str(shots / "dashboard-schedules.png"), full_page=True)
        page.goto(url + "/workflows")
        page.wait_for_selector("#workflows")
        page.goto(url + "/jobs")
        page.fill('input[name="args"]', '["/srv/reports/q3.csv"]')
        page.click("form.filters button[type=submit]")
        page.wait_for_selector(f'tr[data-job="{ids["report"]}"]')
        assert page.locator("tr[data-job]").count() == 1
        # a whole id, copied with a click (dashboard.js; the page's CSP allows no inline script)
        context.grant_permissions(["clipboard-read", "clipboard-write"], origin=url)
        page.click(f'tr[data-job="{ids["report"]}"] button.copy')
        page.wait_for_selector(f'tr[data-job="{ids["report"]}"] button.copy.copied')
        # a bulk action asks first, with the count of what the filter matches
        dialogs: list[str] = []

        def dismiss(dialog) -> None:  # type: ignore[no-untyped-def]
            dialogs.append(dialog.message)
            dialog.dismiss()

        page.on("dialog", dismiss)
        page.goto(url + "/jobs?state=dead")
        page.click("#bulk-retry")
        wait_until(lambda: dialogs or page.wait_for_timeout(50), timeout=10, what="the confirm")
        assert dialogs[0].startswith("Retry every dead or cancelled job of the 2 matching")
        page.remove_listener("dialog", dismiss)

        # a dead job: retry it with a click and watch it run, without reloading
        page.goto(url + "/dead")
        page.screenshot(path=str(shots / "dashboard-dead.png"), full_page=True)
        page.click(f'tr[data-job="{ids["dead"]}"] a')
        page.wait_for_selector("#job-state")
        assert "dead" in page.inner_text("#job-state")
        page.click("button:has-text('Retry')")
        page.wait_for_selector(".flash")
        assert "1 job(s) re-queued" in page.inner_text(".flash")
        # the page updates itself (a selector, not a function: the CSP forbids eval)
        page.wait_for_selector("#job-state:has-text('succeeded')", timeout=30_000)
        assert '"ok"' in page.inner_text("#job-result")

        # pause a queue with a click
        page.goto(url + "/queues")
        page.click('tr[data-queue="reports"] button:has-text("Pause")')
        page.wait_for_selector('tr[data-queue="reports"] td[data-col="paused"] .bad')
        assert page.locator('tr[data-queue="default"]').count() == 1  # only finished jobs
        assert "alice" in page.inner_text('tr[data-queue="reports"] td[data-col="paused"]')
        page.screenshot(path=str(shots / "dashboard-queues.png"), full_page=True)
    finally:
        context.close()
    assert not errors, errors
    assert all(r.startswith(url) for r in requests), [r for r in requests if not r.startswith(url)]
    from taskq.client import Client

    with Client(site["target"].dsn, schema=site["target"].schema) as client:
        assert client.get(ids["dead"]).state == "succeeded"
        assert [q.paused for q in client.queues() if q.name == "reports"] == [True]
    assert "dashboard-action" in (site["logs"] / "dash.log").read_text()


def test_without_the_token_the_browser_gets_nothing(browser, site) -> None:
    context = browser.new_context()
    try:
        response = context.request.get(str(site["url"]) + "/")
        assert response.status == 401
        assert response.headers["www-authenticate"].startswith("Basic")
        assert "taskq_csrf" not in response.headers.get("set-cookie", "")
    finally:
        context.close()
