"""A workflow's page in a real Chromium, against a real ``taskq dashboard`` and a real
``taskq worker``: the graph is drawn (server-side SVG, no script of its own), each step
coloured by its state, it follows the run without a reload, and a step's box leads to
its job, whose page leads back. Screenshot: ``dashboard-workflow.png``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import taskq
from tests.browser.test_dashboard_browser import shots
from tests.support import workflow_actors as wa
from tests.support.dashboard_process import TOKEN, answers, free_port, start, stop
from tests.support.helpers import wait_until
from tests.support.workgroup_harness import run_cli

pytestmark = pytest.mark.slow
__all__ = ["shots"]  # the fixture, used by name


@pytest.fixture
def run(target, tmp_path: Path) -> Iterator[dict[str, object]]:
    env = {**target.env, "TASKQ_DASHBOARD_TOKEN": TOKEN}
    assert run_cli("migrate", env=env).returncode == 0
    wf = taskq.Workflow("nightly export")
    gate = wf.add(wa.nap, "gate", 2.0, name="gate")
    parts = [wf.add(wa.work, f"p{i}", after=[gate], name=f"part-{i}") for i in range(3)]
    bad = wf.add(wa.work, "bad", fail=True, after=[gate], name="broken")
    wf.add(wa.work, "merge", after=[*parts, bad], name="merge")
    wf.add(wa.echo_upstream, after=["merge"], name="cleanup", on_failure="run")
    with taskq.Client(target.dsn, schema=target.schema) as client:
        wf_id = client.enqueue_workflow(wf)
    port = free_port()
    worker = start(
        ["worker", "--actors", "tests.support.workflow_actors:registry", "--poll-interval", "0.1"],
        env,
        tmp_path / "worker.log",
    )
    dashboard = start(["dashboard", "--port", str(port)], env, tmp_path / "dash.log")
    try:
        url = f"http://127.0.0.1:{port}"
        wait_until(lambda: answers(url + "/"), timeout=30, what="the dashboard listening")
        yield {"url": url, "id": wf_id, "target": target}
    finally:
        stop(dashboard)
        stop(worker)


def test_the_workflow_graph_follows_the_run(browser, run, shots) -> None:
    url, wf_id = run["url"], run["id"]
    context = browser.new_context(
        http_credentials={"username": "alice", "password": TOKEN},
        viewport={"width": 1360, "height": 860},
    )
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        page.goto(f"{url}/workflows")
        page.click(f'tr[data-workflow="{wf_id}"] a')
        page.wait_for_selector("#workflow-graph")
        assert page.locator("#workflow-graph a.wf-step").count() == 7
        # waiting steps are drawn as such while the gate runs
        assert page.locator('#workflow-graph [data-step="merge"]').get_attribute("data-state") in (
            "waiting",
            "cancelled",
        )
        # the page follows the run by itself: the failure reaches merge, cleanup runs
        # (a selector, not a function: the dashboard's CSP forbids eval)
        page.wait_for_selector("#workflow-state:has-text('failed')", timeout=60_000)
        state = {
            name: page.locator(f'#workflow-graph [data-step="{name}"]').get_attribute("data-state")
            for name in ("gate", "part-0", "broken", "merge", "cleanup")
        }
        assert state == {
            "gate": "succeeded",
            "part-0": "succeeded",
            "broken": "dead",
            "merge": "cancelled",
            "cleanup": "succeeded",
        }
        fill = page.locator('#workflow-graph [data-step="broken"] rect').evaluate(
            "r => getComputedStyle(r).fill"
        )
        ok_fill = page.locator('#workflow-graph [data-step="gate"] rect').evaluate(
            "r => getComputedStyle(r).fill"
        )
        assert fill != ok_fill  # coloured by state, by the stylesheet
        page.screenshot(path=str(shots / "dashboard-workflow.png"), full_page=True)
        page.click('#workflow-graph [data-step="broken"]')
        page.wait_for_selector("#job-workflow")
        assert "dead" in page.inner_text("#job-state")
        page.click("#job-workflow a")
        page.wait_for_selector("#workflow-graph")
    finally:
        context.close()
    assert not errors, errors
