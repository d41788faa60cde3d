"""The dashboard's workflow pages over HTTP (Starlette's test client), both stores: the
list, a workflow's page with its graph drawn server-side (SVG, no script), the job page's
link to its workflow, and cancel as an action."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("starlette")

from starlette.testclient import TestClient

import taskq
from taskq.testing import drain
from taskq.web import DashboardSettings, create_app
from taskq.web.graph import draw, layers
from taskq.workflows.model import StepInfo
from tests.integration.test_dashboard import TOKEN, csrf_of
from tests.support import workflow_actors as wa


def app_for(target, **settings) -> TestClient:
    settings.setdefault("allowed_hosts", ("testserver",))  # the test client's Host
    return TestClient(
        create_app(DashboardSettings(dsn=target.dsn, schema=target.schema, **settings)),
        follow_redirects=False,
        headers={"Origin": "http://testserver"},  # a form from the dashboard's own page
    )


def test_a_workflow_page_draws_its_graph_coloured_by_state(target, client) -> None:
    wf = taskq.Workflow("night <run>")
    a = wf.add(wa.work, "a", name="fetch")
    b = wf.add(wa.work, "b", fail=True, after=[a], name="resize")
    wf.add(wa.work, "c", after=[a, b], name="report")
    wf_id = client.enqueue_workflow(wf)
    drain(client, registry=wa.registry)
    waiting = client.enqueue_workflow(
        taskq.chain(taskq.step(wa.work, "x"), taskq.step(wa.work, "y"))
    )
    with app_for(target) as web:
        listed = web.get("/workflows")
        assert listed.status_code == 200
        assert f'href="/workflows/{wf_id}"' in listed.text and "night &lt;run&gt;" in listed.text
        assert "night <run>" not in listed.text  # escaped
        failed_only = web.get("/workflows?state=failed").text
        assert str(wf_id) in failed_only and str(waiting) not in failed_only

        page = web.get(f"/workflows/{wf_id}").text
        svg = page[page.index("<svg") : page.index("</svg>")]
        assert "<script" not in page.split("</head>")[1]  # nothing drawn by a script
        boxes = dict(re.findall(r'data-step="([^"]+)" data-state="([^"]+)"', svg))
        assert boxes == {"fetch": "succeeded", "resize": "dead", "report": "cancelled"}
        assert svg.count('class="wf-edge') == 3
        assert 'class="wf-box wf-dead"' in svg and "wf-edge-dead" in svg
        info = client.workflow(wf_id)
        assert f'href="/jobs/{info.step("resize").id}"' in svg
        assert "cancelled by upstream_failed" in page

        second = web.get(f"/workflows/{waiting}").text
        assert re.search(r'data-step="work-2" data-state="waiting"', second)

        job_page = web.get(f"/jobs/{info.step('report').id}").text
        assert f'<a href="/workflows/{wf_id}">' in job_page and "step report" in job_page

        assert web.get("/workflows/nope").status_code == 404
        missing = web.get("/workflows/01900000-0000-7000-8000-000000000000")
        assert missing.status_code == 404 and "No workflow" in missing.text  # a page, 404


def test_cancel_a_workflow_from_its_page(target, client) -> None:
    wf_id = client.enqueue_workflow(taskq.chain(taskq.step(wa.work, "x"), taskq.step(wa.work, "y")))
    with app_for(target, allow_actions=True, token=TOKEN) as web:
        auth = {"Authorization": f"Bearer {TOKEN}"}
        page = web.get(f"/workflows/{wf_id}", headers=auth).text
        assert "/actions/cancel-workflow" in page
        done = web.post(
            "/actions/cancel-workflow",
            data={"workflow": str(wf_id), "csrf": csrf_of(page), "next": f"/workflows/{wf_id}"},
            headers=auth,
        )
        assert done.status_code == 303
        assert client.workflow(wf_id).state == "cancelled"
    with app_for(target) as web:  # read-only: no action offered
        assert "/actions/cancel-workflow" not in web.get(f"/workflows/{wf_id}").text


def _step(name: str, *after: str) -> StepInfo:
    return StepInfo(
        None, name, "a", "q", "queued", list(after), "cancel", 0,  # type: ignore[arg-type]
        None, None, None, None, None, None, None,  # type: ignore[arg-type]
    )  # fmt: skip


def test_the_layout_puts_each_step_one_layer_past_its_deepest_upstream() -> None:
    steps = [_step("a"), _step("b", "a"), _step("c"), _step("d", "b", "c"), _step("e", "a")]
    assert layers(steps) == [0, 1, 0, 2, 1]
    drawing = draw(steps)
    assert drawing is not None
    xs = {b.step.name: (b.x, b.y) for b in drawing.boxes}
    assert xs["a"][0] == xs["c"][0] < xs["b"][0] == xs["e"][0] < xs["d"][0]
    assert len(drawing.edges) == 4
    chain = [_step("s0")] + [_step(f"s{i}", f"s{i - 1}") for i in range(1, 5000)]
    assert layers(chain)[-1] == 4999  # no recursion limit
    assert draw(chain) is None  # too many to draw
