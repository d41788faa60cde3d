"""The pages an operator looks for (issue 23 items 1-3), over HTTP on both real stores:
charts over time (server-side SVG) on the overview and each queue's page, schedules,
actors with their options, limits and last hour, workers with the CLI's stale rule and
their labels, the job search (id prefix, arguments, meta), full ids, the worker of a job
by its label, bulk actions on what a filter matches (with the count to confirm), and a
dead job's retry or discard from its row. Jobs run by the worker's real executor."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest

pytest.importorskip("starlette")


from taskq.client import Client
from taskq.ids import uuid7
from taskq.jobs import ActorConfig, Limits, Rate, WorkerInfo
from taskq.store.queues import ACTOR
from taskq.testing import drain
from tests.support import dashboard_actors as actors
from tests.support.dashboard_support import token_of, web_for
from tests.support.helpers import wait_until

TOKEN = "s3cret-token-for-tests-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}", "Origin": "http://testserver"}


@pytest.fixture
def ran(client: Client) -> dict[str, object]:
    ok = [client.enqueue(actors.add, i, i) for i in range(4)]
    dead = [client.enqueue(actors.load_report, f"/r{i}.csv") for i in range(3)]
    drain(client, registry=actors.registry)
    return {"ok": ok, "dead": dead}


def test_the_overview_and_a_queue_page_draw_charts_of_what_ran(target, ran) -> None:
    with web_for(target) as web:
        page = web.get("/").text
        for chart in ("chart-hour", "chart-day", "age-hour", "age-day"):
            assert f'id="{chart}"' in page, chart
        hour = page.split('id="chart-hour"', 1)[1].split("</figure>", 1)[0]
        assert len(re.findall(r'class="bar bar-succeeded"', hour)) >= 1
        assert "4 succeeded" in hour and "3 retried" in hour and "3 dead" in hour
        assert "<script" not in hour  # drawn by the server
        reports = web.get("/queues/reports").text
        assert 'id="chart-hour"' in reports and 'data-actor="load_report"' in reports
        mine = reports.split('id="chart-hour"', 1)[1].split("</figure>", 1)[0]
        assert "0 succeeded" in mine and "3 dead" in mine  # only this queue's jobs
        assert web.get("/queues/no%20such%20queue").status_code == 404


async def test_schedules_and_actors(target, store, ran) -> None:
    now = datetime.now(UTC)
    schedule = {
        "name": "nightly",
        "actor": "add",
        "cron": "0 3 * * *",
        "timezone": "UTC",
        "missed": "run_once",
    }
    await store.record_schedules([schedule], now)
    config = ActorConfig("load_report", "reports", 2, 2, True, False, 30.0)
    await store.sync_actor_configs([config], force=True)
    await store.set_limits(ACTOR, "load_report", Limits(concurrency=3, rate=Rate(10, 60.0)))
    with web_for(target) as web:
        schedules = web.get("/schedules").text
        row = schedules.split('data-schedule="nightly"', 1)[1].split("</tr>", 1)[0]
        assert "0 3 * * *" in row and 'data-col="missed">run_once' in row
        assert re.search(r'data-col="next">\d{4}-\d\d-\d\dT03:00:00', row)
        page = web.get("/actors").text
        row = page.split('data-actor="load_report"', 1)[1].split("</tr>", 1)[0]
        assert ">reports<" in row and ">30.0 s<" in row and ">yes<" in row  # idempotent
        assert 'data-col="concurrency">3<' in row and 'data-col="rate">10/minute<' in row
        assert 'data-col="failed">6<' in row and 'data-col="failure-rate">100.0%<' in row
        add = page.split('data-actor="add"', 1)[1].split("</tr>", 1)[0]
        assert 'data-col="succeeded">4<' in add and 'data-col="failure-rate">0.0%<' in add


async def test_workers_follow_the_clis_stale_rule_and_show_labels(target, store, ran) -> None:
    worker_id = uuid7()
    await store.register_worker(
        WorkerInfo(worker_id, 4242, "host-1", ["default"], worker_label="api-1")
    )
    job_id = ran["ok"][0]
    with web_for(target) as web:
        page = web.get("/workers").text
        row = page.split('data-worker="api-1"', 1)[1].split("</tr>", 1)[0]
        assert 'data-status="alive"' in page.split('data-worker="api-1"', 1)[1][:40]
        assert str(worker_id) in row and 'data-copy="' + str(worker_id) in row
        wait_until(
            lambda: (
                'data-worker="api-1" data-status="stale"'
                in web.get("/workers", params={"stale_after": "0.05"}).text
            ),
            timeout=10,
            what="the row stale after 0.05 s",
        )
        assert web.get("/workers", params={"stale_after": "-1"}).status_code == 400
    # a job run by that worker names it by its label, not only its id
    job = await store.get_job(job_id)
    assert job is not None
    claimed_by = job.worker_id
    await store.register_worker(WorkerInfo(claimed_by, 7, "host-2", ["default"], "runner-7"))
    with web_for(target) as web:
        shown = web.get(f"/jobs/{job_id}").text
    worker = shown.split('id="job-worker"', 1)[1].split("</dd>", 1)[0]
    assert "runner-7" in worker and "host-2" in worker and str(claimed_by) in worker


def test_search_by_id_prefix_arguments_and_meta_and_full_ids(target, client, ran) -> None:
    tagged = client.enqueue_with(actors.charge, ["4111"], {"amount": 9}, meta={"tenant": 7})
    with web_for(target) as web:

        def found(**params: str) -> set[str]:
            response = web.get("/jobs", params=params)
            assert response.status_code == 200, response.text
            return set(re.findall(r'<tr data-job="([0-9a-f-]+)"', response.text))

        assert found(args='{"amount": 9}') == {str(tagged)}
        assert found(meta='{"tenant": 7}') == {str(tagged)}
        assert found(args="[2, 2]") == {str(ran["ok"][2])}
        assert found(id=str(tagged)[:23]) == {str(tagged)}
        assert web.get("/jobs", params={"args": "[1,"}).status_code == 400
        assert web.get("/jobs", params={"id": "zz"}).status_code == 400
        listing = web.get("/jobs").text
        for job_id in (*ran["ok"], *ran["dead"], tagged):  # every id whole, never cut
            assert f'<code class="id" title="{job_id}">{job_id}</code>' in listing
        assert "…" not in listing.split('<table class="jobs">', 1)[1]


def test_bulk_retry_and_cancel_of_what_a_filter_matches(target, client, ran) -> None:
    queued = [client.enqueue_with(actors.add, [i, i], queue="later", delay=3600) for i in range(5)]
    with web_for(target, allow_actions=True, token=TOKEN) as web:
        page = web.get("/jobs", params={"state": "dead", "queue": "reports"}, headers=AUTH).text
        assert 'id="matching">3 job(s) match' in page
        assert re.search(r'id="bulk-retry"[^>]*data-count="3"', page)
        token = token_of(page)
        form = {"csrf": token, "state": "dead", "queue": "reports", "next": "/jobs"}
        done = web.post("/actions/bulk-retry", data=form, headers=AUTH)
        assert done.status_code == 303 and "3+of+3" in done.headers["location"]
        assert {client.get(j).state for j in ran["dead"]} == {"queued"}
        assert {client.get(j).state for j in ran["ok"]} == {"succeeded"}  # not matched
        refused = web.post(
            "/actions/bulk-cancel",
            data={"csrf": "forged", "queue": "later"},
            headers=AUTH,
        )
        assert refused.status_code == 403
        assert {client.get(j).state for j in queued} == {"queued"}
        cancelled = web.post(
            "/actions/bulk-cancel", data={"csrf": token, "queue": "later"}, headers=AUTH
        )
        assert cancelled.status_code == 303
        assert {client.get(j).state for j in queued} == {"cancelled"}
        assert (
            web.post(
                "/actions/bulk-retry", data={"csrf": token, "state": "bogus"}, headers=AUTH
            ).status_code
            == 400
        )
        searching = web.get("/jobs", params={"args": "[1]"}, headers=AUTH).text
        assert 'id="bulk-retry"' not in searching  # a search is not a bulk filter


def test_a_dead_job_is_retried_or_discarded_from_its_row(target, client, ran) -> None:
    first, second, _ = ran["dead"]
    with web_for(target, allow_actions=True, token=TOKEN) as web:
        page = web.get("/dead", headers=AUTH).text
        row = page.split(f'<tr data-job="{first}"', 1)[1].split("</tr>", 1)[0]
        assert 'action="/actions/retry"' in row and 'action="/actions/discard"' in row
        assert 'data-confirm="Discard this dead job?' in row
        token = token_of(page)
        web.post("/actions/retry", data={"id": str(first), "csrf": token}, headers=AUTH)
        web.post("/actions/discard", data={"id": str(second), "csrf": token}, headers=AUTH)
    assert client.get(first).state == "queued"
    assert [j.id for j in client.list(state="dead")] == [ran["dead"][2]]
