"""The Store contract: lifecycle, producers, reads, retry and cancel, actor configs and
worker rows, against every engine (``tests/conformance/conftest.py``)."""

from __future__ import annotations

import asyncio
import contextlib
import json
from datetime import UTC, datetime, timedelta

import pytest

from taskq.exceptions import StoreError
from taskq.ids import uuid7
from taskq.jobs import ALL_STATES, Outcome, OutcomeKind
from tests.support.conformance_kit import LEASE, actor, claim_all, future, worker
from tests.support.storekit import another_store, spec


# -- lifecycle -----------------------------------------------------------------------
async def test_ping_now_and_schema_check(store):
    await store.ping()
    await store.check_schema()
    now = await store.now()
    assert now.tzinfo is not None and now.utcoffset() == timedelta(0)
    assert abs((now - datetime.now(UTC)).total_seconds()) < 60
    assert store.kind in ("postgres", "sqlite")
    assert await store.migrate() == []


async def test_close_is_idempotent(target):
    async with another_store(target) as other:
        await other.ping()
        await other.close()
    await other.close()


# -- producers -----------------------------------------------------------------------
async def test_enqueue_then_get_returns_every_field(store):
    s = spec(
        args=["a", 2],
        kwargs={"k": [1, {"x": None}]},
        priority=-5,
        max_attempts=7,
        max_crashes=4,
        idempotent=True,
        queue="q1",
    )
    assert await store.enqueue([s]) == [s.id]
    job = await store.get_job(s.id)
    assert job is not None
    assert (job.id, job.actor, job.queue, job.args, job.kwargs) == (
        s.id,
        s.actor,
        "q1",
        ["a", 2],
        {"k": [1, {"x": None}]},
    )
    assert (job.priority, job.state, job.attempts, job.max_attempts) == (-5, "queued", 0, 7)
    assert (job.crash_count, job.max_crashes, job.idempotent) == (0, 4, True)
    assert job.run_at.tzinfo is not None and job.created_at.tzinfo is not None
    assert job.started_at is job.finished_at is job.worker_id is job.lease_expires_at is None
    assert job.last_error is job.dead_reason is job.result is None
    assert await store.get_job(uuid7()) is None


async def test_enqueue_keeps_explicit_run_at(store):
    when = future(120).replace(microsecond=0)
    s = spec(run_at=when)
    await store.enqueue([s])
    assert (await store.get_job(s.id)).run_at == when


async def test_enqueue_batch_is_all_or_nothing(store):
    first = spec()
    await store.enqueue([first])
    batch = [spec(), spec(), first, spec()]  # a duplicate id fails the whole batch
    with pytest.raises(StoreError):
        await store.enqueue(batch)
    assert (await store.stats())["queued"] == 1
    assert await store.get_job(batch[0].id) is None


async def test_enqueue_10000_in_one_call(store):
    specs = [spec(args=[i]) for i in range(10_000)]
    ids = await store.enqueue(specs)
    assert ids == [s.id for s in specs]
    assert (await store.stats())["queued"] == 10_000
    job = await store.get_job(specs[9_999].id)
    assert job.args == [9_999]


async def test_large_batch_keeps_tricky_text_and_each_run_at(store):
    """Big batches take the bulk path (COPY on Postgres): same data, same atomicity."""
    tricky = ["tab\there", "new\nline", "back\\slash", "nul\u0000byte", "\\N", "é😀", ""]
    later = future(600).replace(microsecond=0)
    specs = [
        spec(
            args=[tricky[i % len(tricky)], i],
            kwargs={"k\t": tricky},
            run_at=later if i % 2 else None,
            priority=i % 3,
        )
        for i in range(300)
    ]
    await store.enqueue(specs)
    for s in (specs[0], specs[1], specs[3], specs[6], specs[299]):
        job = await store.get_job(s.id)
        assert job.args == json.loads(s.args_json) and job.kwargs == {"k\t": tricky}
        assert job.priority == s.priority
        if s.run_at is not None:
            assert job.run_at == later
    claimed = await claim_all(store, uuid7(), limit=1000)
    assert {c.id for c in claimed} == {s.id for s in specs if s.run_at is None}
    assert all(
        c.args_json == next(s.args_json for s in specs if s.id == c.id) for c in claimed[:20]
    )
    with pytest.raises(StoreError):
        await store.enqueue([spec() for _ in range(250)] + [specs[0]])
    assert sum((await store.stats()).values()) == 300


async def test_stats_lists_all_five_states(store):
    assert await store.stats() == dict.fromkeys(ALL_STATES, 0)
    w = uuid7()
    await store.enqueue([spec() for _ in range(5)])
    c = await claim_all(store, w, limit=4)
    await store.complete(
        w,
        [
            Outcome(c[0].id, c[0].attempt, OutcomeKind.SUCCEEDED),
            Outcome(c[1].id, c[1].attempt, OutcomeKind.DEAD, error="boom"),
            Outcome(c[2].id, c[2].attempt, OutcomeKind.CANCELLED),
        ],
    )
    assert await store.stats() == {
        "queued": 1,
        "running": 1,
        "succeeded": 1,
        "dead": 1,
        "cancelled": 1,
    }


async def test_list_jobs_newest_first_with_filters(store):
    a = [spec(queue="a") for _ in range(3)]
    b = [spec(queue="b") for _ in range(2)]
    await store.enqueue(a)
    await store.enqueue(b)
    listed = await store.list_jobs()
    assert [j.id for j in listed] == [s.id for s in reversed(a + b)]
    assert [j.id for j in await store.list_jobs(queue="a")] == [s.id for s in reversed(a)]
    assert [j.id for j in await store.list_jobs(limit=2)] == [b[1].id, b[0].id]
    await store.cancel_jobs([a[0].id])
    assert [j.id for j in await store.list_jobs(state="cancelled")] == [a[0].id]
    assert await store.list_jobs(state="dead") == []


async def test_cancel_moves_only_queued_jobs(store):
    w = uuid7()
    queued, running = spec(), spec(priority=-1)
    await store.enqueue([queued, running])
    (claimed,) = await claim_all(store, w, limit=1)
    assert claimed.id == running.id
    assert await store.cancel_jobs([queued.id, running.id, uuid7()]) == [queued.id]
    job = await store.get_job(queued.id)
    assert job.state == "cancelled" and job.finished_at is not None
    assert (await store.get_job(running.id)).state == "running"
    assert await store.cancel_jobs([queued.id]) == []


async def test_retry_requeues_dead_and_cancelled_and_resets_counters(store):
    w = uuid7()
    dead, cancelled, queued = spec(max_crashes=1), spec(), spec()
    await store.enqueue([dead])
    (c,) = await claim_all(store, w)
    crash = Outcome(c.id, c.attempt, OutcomeKind.CRASHED, error="segfault", blamed=True)
    await store.complete(w, [crash])
    assert (await store.get_job(dead.id)).dead_reason == "poison"
    await store.enqueue([cancelled, queued])
    await store.cancel_jobs([cancelled.id])

    moved = await store.retry_jobs([dead.id, cancelled.id, queued.id])
    assert sorted(moved) == sorted([dead.id, cancelled.id])
    job = await store.get_job(dead.id)
    assert (job.state, job.attempts, job.crash_count, job.dead_reason) == ("queued", 0, 0, None)
    assert job.last_error == "segfault"
    assert job.worker_id is None and job.finished_at is None
    assert (await store.get_job(cancelled.id)).state == "queued"
    claimed = await claim_all(store, w)
    assert {c.id for c in claimed} == {dead.id, cancelled.id, queued.id}
    assert {c.attempt for c in claimed} == {1}


async def test_retry_all_dead_counts_only_dead(store):
    w = uuid7()
    await store.enqueue([spec() for _ in range(3)])
    claimed = await claim_all(store, w)
    await store.complete(
        w, [Outcome(c.id, c.attempt, OutcomeKind.DEAD, error="x") for c in claimed[:2]]
    )
    await store.complete(w, [Outcome(claimed[2].id, claimed[2].attempt, OutcomeKind.CANCELLED)])
    assert await store.retry_all_dead() == 2
    assert await store.stats() == {
        "queued": 2,
        "running": 0,
        "succeeded": 0,
        "dead": 0,
        "cancelled": 1,
    }
    assert await store.retry_all_dead() == 0


# -- actor configs -------------------------------------------------------------------
async def test_actor_configs_sync_and_drift(store):
    assert await store.actor_configs() == {}
    assert (
        await store.sync_actor_configs([actor(), actor("tests.other", timeout=None)], force=False)
        == []
    )
    stored = await store.actor_configs()
    assert stored["tests.resize"] == actor()
    assert stored["tests.other"].timeout is None
    assert await store.sync_actor_configs([actor()], force=False) == []

    # how a job runs changes with the code: written, and returned once
    runs = actor(max_attempts=5, timeout=None)
    differences = await store.sync_actor_configs([runs], force=False)
    assert sorted(map(str, differences)) == [
        "tests.resize: max_attempts 3 -> 5",
        "tests.resize: timeout 30.0 -> None",
    ]
    assert not any(d.routes for d in differences)
    assert (await store.actor_configs())["tests.resize"] == runs
    assert await store.sync_actor_configs([runs], force=False) == []

    # where jobs go (the queue) only when forced: else nothing is written
    moved = actor(max_attempts=7, queue="big")
    differences = await store.sync_actor_configs([moved, actor("tests.new")], force=False)
    assert [(str(d), d.routes) for d in differences] == [
        ("tests.resize: queue 'images' -> 'big'", True),
        ("tests.resize: max_attempts 5 -> 7", False),
        ("tests.resize: timeout None -> 30.0", False),
    ]
    after = await store.actor_configs()
    assert after["tests.resize"] == runs and "tests.new" not in after
    assert len(await store.sync_actor_configs([moved], force=True)) == 3
    assert (await store.actor_configs())["tests.resize"] == moved


async def test_of_workers_recording_one_change_at_once_exactly_one_sees_it(store, target):
    """The read and the write are one transaction: ten stores (ten workers' connections)
    syncing the same change at once get it back once between them (one log line)."""
    await store.sync_actor_configs([actor()], force=False)
    changed = actor(max_attempts=9)
    async with contextlib.AsyncExitStack() as stack:
        others = [await stack.enter_async_context(another_store(target)) for _ in range(10)]
        results = await asyncio.gather(
            *(s.sync_actor_configs([changed], force=False) for s in others)
        )
    assert sorted(len(r) for r in results) == [0] * 9 + [1]
    assert (await store.actor_configs())["tests.resize"] == changed


# -- workers -------------------------------------------------------------------------
async def test_register_list_find_unregister_workers(store):
    instance = uuid7()
    w1, w2, w3 = worker("api", instance), worker("api", instance, pid=7), worker()
    for w in (w1, w2, w3):
        await store.register_worker(w)
    listed = await store.insight.list_workers()
    assert {w.id for w in listed} == {w1.id, w2.id, w3.id}
    row = next(w for w in listed if w.id == w1.id)
    assert (row.pid, row.hostname, row.queues, row.worker_label) == (
        4242,
        "host-1",
        ["default", "b"],
        "api",
    )
    assert row.workgroup_instance == instance
    assert row.started_at.tzinfo is not None and row.last_seen_at.tzinfo is not None

    await store.heartbeat(w1.id, LEASE)  # w1 seen last: it is the newest row for the label
    found = await store.find_worker(instance, "api")
    assert found is not None and found.id == w1.id
    assert await store.find_worker(instance, "nope") is None
    assert await store.find_worker(uuid7(), "api") is None

    await store.unregister_worker(w1.id)
    assert (await store.find_worker(instance, "api")).id == w2.id
    assert {w.id for w in await store.insight.list_workers()} == {w2.id, w3.id}
