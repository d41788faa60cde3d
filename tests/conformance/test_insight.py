"""The operator's store methods (backlog, activity, browsing, errors, discard, leases,
workgroup reports) against both real engines."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

from taskq.ids import uuid7
from taskq.insight import JobFilter, QueueDepth
from taskq.jobs import Outcome, OutcomeKind
from tests.support.conformance_kit import worker
from tests.support.storekit import another_store, spec


def ago(seconds: float) -> datetime:
    return datetime.now(UTC) - timedelta(seconds=seconds)


async def run_and_fail(store, queue="default", *, kind=OutcomeKind.RETRY, error="boom", n=1):
    """Claim ``n`` jobs of ``queue`` and end each with an exception outcome."""
    w = worker(queues=[queue])
    await store.register_worker(w)
    claimed = (await store.claim(w.id, [queue], n, 30.0)).jobs
    outcomes = [
        Outcome(
            c.id,
            c.attempt,
            kind,
            error=f"{error} {c.attempt}",
            dead_reason="failed" if kind is OutcomeKind.DEAD else None,
            retry_delay=0.0,
        )
        for c in claimed
    ]
    assert await store.complete(w.id, outcomes) == len(claimed)
    return w, claimed


async def test_queue_backlog_counts_each_state_and_the_oldest_due_age(store):
    await store.enqueue([spec(queue="a", run_at=ago(120)), spec(queue="a", run_at=ago(5))])
    await store.enqueue([spec(queue="a", run_at=datetime.now(UTC) + timedelta(hours=1))])
    await store.enqueue([spec(queue="later", run_at=datetime.now(UTC) + timedelta(hours=1))])
    await store.enqueue([spec(queue="b"), spec(queue="b"), spec(queue="b")])
    w = worker(queues=["b"])
    await store.register_worker(w)
    running = (await store.claim(w.id, ["b"], 2, 30.0)).jobs
    await store.complete(
        w.id,
        [Outcome(running[0].id, 1, OutcomeKind.DEAD, error="x", dead_reason="failed")],
    )

    by_queue = {d.queue: d for d in await store.insight.queue_backlog()}
    a, b, later = by_queue["a"], by_queue["b"], by_queue["later"]
    assert (a.queued, a.running, a.dead) == (3, 0, 0)
    assert 119 <= a.oldest_due_age < 600  # the oldest *due* job, not the future one
    assert (b.queued, b.running, b.dead) == (1, 1, 1)
    assert (later.queued, later.oldest_due_age) == (1, 0.0)  # nothing due yet


async def test_every_failed_run_is_recorded_with_crashes_told_apart(store):
    (job_id,) = await store.enqueue([spec(max_attempts=5, max_crashes=5, idempotent=True)])
    w1, _ = await run_and_fail(store, error="first")
    # a crash: the runner dies, a workgroup rescues the job (crash rules: requeued)
    w2 = worker()
    await store.register_worker(w2)
    await store.claim(w2.id, ["default"], 1, 30.0)
    await store.rescue_worker(w2.id, "worker 'api' killed by SIGKILL")
    # a give-back is not a failed run
    w3 = worker()
    await store.register_worker(w3)
    (again,) = await store.claim(w3.id, ["default"], 1, 30.0)
    await store.give_back(w3.id, [(again.id, again.attempt)])
    await run_and_fail(store, kind=OutcomeKind.DEAD, error="last")

    errors = await store.insight.job_errors(job_id)
    assert [(e.attempt, e.crash) for e in errors] == [(1, False), (2, True), (3, False)]
    assert errors[0].error == "first 1" and errors[0].worker_id == w1.id
    assert "killed by SIGKILL" in errors[1].error and errors[1].worker_id == w2.id
    assert errors[2].error == "last 3"
    assert all(e.at.tzinfo is not None for e in errors)
    assert errors[0].at <= errors[1].at <= errors[2].at
    assert (await store.get_job(job_id)).state == "dead"


async def test_browse_jobs_filters_and_pages_by_keyset(store):
    ids = []
    for i in range(7):
        ids += await store.enqueue([spec(actor=f"act{i % 2}", queue="p" if i < 5 else "r")])
    newest_first = list(reversed(ids))
    page1 = await store.insight.browse_jobs(JobFilter(), limit=3)
    page2 = await store.insight.browse_jobs(JobFilter(), before=page1[-1].id, limit=3)
    page3 = await store.insight.browse_jobs(JobFilter(), before=page2[-1].id, limit=3)
    assert [j.id for j in page1 + page2 + page3] == newest_first
    assert {j.id for j in await store.insight.browse_jobs(JobFilter(queue="r"))} == set(ids[5:])
    assert [j.id for j in await store.insight.browse_jobs(JobFilter(actor="act1", queue="p"))] == [
        ids[3],
        ids[1],
    ]
    await run_and_fail(store, "r", kind=OutcomeKind.DEAD, error="Disk FULL on /var", n=1)
    (dead,) = await store.insight.browse_jobs(JobFilter(state="dead"))
    assert dead.queue == "r"
    assert [j.id for j in await store.insight.browse_jobs(JobFilter(error="disk full"))] == [
        dead.id
    ]
    assert await store.insight.browse_jobs(JobFilter(error="50%_")) == []  # no LIKE wildcards


async def test_discard_deletes_only_dead_or_cancelled_jobs_and_their_errors(store):
    queued, dead, cancelled = await store.enqueue([spec(), spec(queue="d"), spec()])
    await run_and_fail(store, "d", kind=OutcomeKind.DEAD)
    await store.cancel_jobs([cancelled])
    assert await store.insight.job_errors(dead)
    assert set(await store.insight.discard_jobs([queued, dead, cancelled])) == {dead, cancelled}
    assert await store.get_job(dead) is None and await store.get_job(cancelled) is None
    assert (await store.get_job(queued)).state == "queued"
    assert await store.insight.job_errors(dead) == []
    assert await store.insight.discard_jobs([]) == []


async def test_one_leader_at_a_time_and_takeover_after_the_lease(store, target):
    async with another_store(target) as other:
        assert await store.try_lead("chore", "one", 30.0)
        assert await store.try_lead("chore", "one", 30.0)  # renewed
        assert not await other.try_lead("chore", "two", 30.0)
        await store.release_lead("chore", "one")
        assert await other.try_lead("chore", "two", 0.2)
        assert not await store.try_lead("chore", "one", 30.0)
        deadline = asyncio.get_running_loop().time() + 10
        while not await store.try_lead("chore", "one", 30.0):  # "two" lapses
            assert asyncio.get_running_loop().time() < deadline, "the lease never lapsed"
            await asyncio.sleep(0.05)
        assert not await other.try_lead("chore", "two", 30.0)


async def test_workgroup_reports_are_listed_until_removed(store):
    instance = uuid7()
    children = [{"name": "api", "pid": 7, "restarts": 2, "latched": False}]
    await store.report_workgroup(instance, "host-a", 99, children)
    await store.report_workgroup(instance, "host-a", 99, [{**children[0], "restarts": 3}])
    (report,) = await store.insight.list_workgroups(ago(60))
    assert (report.instance, report.hostname, report.pid) == (instance, "host-a", 99)
    assert report.children[0]["restarts"] == 3
    assert abs((report.updated_at - datetime.now(UTC)).total_seconds()) < 60
    assert await store.insight.list_workgroups(datetime.now(UTC) + timedelta(minutes=1)) == []
    await store.remove_workgroup(instance)
    assert await store.insight.list_workgroups(ago(60)) == []


async def test_queue_statuses_from_the_backlog_with_pause_and_limits(store):
    from taskq.client import AsyncClient

    await store.enqueue([spec(queue="q", run_at=ago(30)), spec(queue="q")])
    async with AsyncClient(store=store) as client:
        await client.pause_queue("q", by="alice")
        await client.set_queue_limits("idle", concurrency=2)
    statuses = {q.name: q for q in await store.insight.queue_statuses()}
    q, idle = statuses["q"], statuses["idle"]
    assert (q.backlog.queued, q.paused, q.paused_by) == (2, True, "alice")
    assert q.backlog.oldest_due_age >= 29
    assert (idle.limits.concurrency, idle.paused, idle.backlog) == (2, False, QueueDepth("idle"))
