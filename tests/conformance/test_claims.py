"""The Store contract: claims (order, leases, limits of one call, concurrent claimers)
and finishing runs (outcomes, fences, late acks), against every engine."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace

import pytest

from taskq.ids import uuid7
from taskq.jobs import Limits, Outcome, OutcomeKind
from tests.support.conformance_kit import LEASE, claim_all, future, past
from tests.support.storekit import another_store, spec


# -- claiming ------------------------------------------------------------------------
async def test_claim_orders_by_priority_then_run_at(store):
    w = uuid7()
    late_hi = spec(priority=1, run_at=past(10))
    early_hi = spec(priority=1, run_at=past(20))
    low = spec(priority=-3, run_at=past(1))
    mid = spec(priority=0, run_at=past(5))
    await store.enqueue([late_hi, early_hi, low, mid])
    claimed = await claim_all(store, w, limit=10)
    assert [c.id for c in claimed] == [low.id, mid.id, early_hi.id, late_hi.id]


async def test_claim_marks_running_with_attempt_worker_and_lease(store):
    w = uuid7()
    s = spec(args=["x"], kwargs={"y": 1}, max_attempts=5, max_crashes=3, idempotent=True)
    await store.enqueue([s])
    (c,) = await claim_all(store, w, lease=45.0)
    assert (c.id, c.actor, c.queue, c.attempt, c.max_attempts) == (s.id, s.actor, "default", 1, 5)
    assert (c.crash_count, c.max_crashes, c.idempotent) == (0, 3, True)
    assert json.loads(c.args_json) == ["x"] and json.loads(c.kwargs_json) == {"y": 1}
    job = await store.get_job(s.id)
    assert (job.state, job.attempts, job.worker_id) == ("running", 1, w)
    assert job.started_at is not None
    lease_left = (job.lease_expires_at - await store.now()).total_seconds()
    assert 30 < lease_left <= 45.5


@pytest.mark.parametrize("path", ["plain", "limited"])
async def test_every_column_of_a_claimed_run_comes_back(store, path):
    """Each field of a claimed run lands where it belongs, by the plain claim and by the
    claim under limits (their statements are separate on both stores)."""
    w = uuid7()
    s = replace(
        spec("tests.cols", "cols", args=["a"], kwargs={"k": 2}, max_attempts=7, max_crashes=4),
        meta_json='{"m": 1}',
    )
    await store.enqueue([s])
    if path == "limited":
        await store.set_limits("queue", "cols", Limits(concurrency=5))
    (c,) = await claim_all(store, w, queues=["cols"])
    assert (c.id, c.actor, c.queue) == (s.id, "tests.cols", "cols")
    assert (json.loads(c.args_json), json.loads(c.kwargs_json)) == (["a"], {"k": 2})
    assert (c.attempt, c.max_attempts, c.crash_count, c.max_crashes) == (1, 7, 0, 4)
    assert (c.idempotent, c.snooze_count, c.run_alone) == (False, 0, False)
    assert json.loads(c.meta_json or "null") == {"m": 1}
    assert (c.workflow_id, c.step, c.upstream_steps) == (None, None, 0)


async def test_claim_respects_limit_queues_and_excluded_actors(store):
    w = uuid7()
    await store.enqueue(
        [spec(queue="a") for _ in range(5)]
        + [spec(queue="b"), spec(queue="c", actor="tests.cpu"), spec(queue="c")]
    )
    assert len(await claim_all(store, w, queues=["a"], limit=3)) == 3
    assert {c.queue for c in await claim_all(store, w, queues=["b", "zzz"])} == {"b"}
    only = await claim_all(store, w, queues=["c"], exclude_actors=["tests.cpu"])
    assert [c.actor for c in only] == ["tests.echo"]
    assert await claim_all(store, w, queues=["c"], exclude_actors=["tests.cpu"]) == []
    assert [c.actor for c in await claim_all(store, w, queues=["c"])] == ["tests.cpu"]
    assert await claim_all(store, w, queues=["a"], limit=0) == []


async def test_delayed_jobs_are_not_claimed_early(store):
    w = uuid7()
    later, due = spec(run_at=future()), spec(run_at=past())
    await store.enqueue([later, due])
    assert [c.id for c in await claim_all(store, w)] == [due.id]
    assert await claim_all(store, w) == []
    assert (await store.get_job(later.id)).state == "queued"


async def test_concurrent_claimers_never_get_the_same_job(store, target):
    total = 600
    await store.enqueue([spec() for _ in range(total)])
    seen: dict[object, object] = {}
    async with another_store(target) as other:
        workers = [(store, uuid7()), (other, uuid7()), (store, uuid7()), (other, uuid7())]

        async def claimer(s, wid):
            got = []
            while batch := await s.claim(wid, ["default"], 7, LEASE):
                got.extend(batch)
            return wid, got

        results = await asyncio.gather(*(claimer(s, wid) for s, wid in workers))
    for wid, got in results:
        for c in got:
            assert c.id not in seen, f"job {c.id} claimed by {seen[c.id]} and {wid}"
            seen[c.id] = wid
    assert len(seen) == total
    assert (await store.stats())["running"] == total


# -- finishing runs ------------------------------------------------------------------
async def test_complete_succeeded_stores_result(store):
    w = uuid7()
    s = spec()
    await store.enqueue([s])
    (c,) = await claim_all(store, w)
    assert (
        await store.complete(
            w, [Outcome(c.id, c.attempt, OutcomeKind.SUCCEEDED, result_json='{"size": [64, 48]}')]
        )
        == 1
    )
    job = await store.get_job(s.id)
    assert (job.state, job.attempts, job.dead_reason) == ("succeeded", 1, None)
    assert job.result == {"size": [64, 48]}
    assert job.finished_at is not None and job.lease_expires_at is None
    assert job.worker_id == w


async def test_complete_retry_requeues_after_delay(store):
    w = uuid7()
    now_job, later_job = spec(), spec()
    await store.enqueue([now_job, later_job])
    claimed = {c.id: c for c in await claim_all(store, w)}
    a, b = claimed[now_job.id], claimed[later_job.id]
    assert (
        await store.complete(
            w,
            [
                Outcome(
                    a.id, a.attempt, OutcomeKind.RETRY, error="ValueError: once", retry_delay=0
                ),
                Outcome(
                    b.id, b.attempt, OutcomeKind.RETRY, error="ValueError: later", retry_delay=3600
                ),
            ],
        )
        == 2
    )
    job = await store.get_job(later_job.id)
    assert (job.state, job.attempts, job.last_error) == ("queued", 1, "ValueError: later")
    assert job.worker_id is None and job.lease_expires_at is None and job.finished_at is None
    assert (job.run_at - await store.now()).total_seconds() > 3000
    (again,) = await claim_all(store, w)  # only the one whose delay is over
    assert (again.id, again.attempt) == (now_job.id, 2)


async def test_complete_dead_with_and_without_reason(store):
    w = uuid7()
    await store.enqueue([spec(), spec()])
    a, b = await claim_all(store, w)
    assert (
        await store.complete(
            w,
            [
                Outcome(a.id, a.attempt, OutcomeKind.DEAD, error="KeyError: x"),
                Outcome(
                    b.id,
                    b.attempt,
                    OutcomeKind.DEAD,
                    error="no such actor",
                    dead_reason="unknown_actor",
                ),
            ],
        )
        == 2
    )
    ja, jb = await store.get_job(a.id), await store.get_job(b.id)
    assert (ja.state, ja.dead_reason, ja.last_error) == ("dead", "failed", "KeyError: x")
    assert (jb.state, jb.dead_reason) == ("dead", "unknown_actor")
    assert ja.finished_at is not None


async def test_complete_cancelled(store):
    w = uuid7()
    await store.enqueue([spec()])
    (c,) = await claim_all(store, w)
    assert (
        await store.complete(w, [Outcome(c.id, c.attempt, OutcomeKind.CANCELLED, error="shutdown")])
        == 1
    )
    job = await store.get_job(c.id)
    assert (job.state, job.dead_reason, job.last_error) == ("cancelled", None, "shutdown")


async def test_complete_is_fenced_by_attempt_worker_and_state(store):
    w, intruder = uuid7(), uuid7()
    await store.enqueue([spec()])
    (c,) = await claim_all(store, w)
    done = Outcome(c.id, c.attempt, OutcomeKind.SUCCEEDED)
    assert await store.complete(intruder, [done]) == 0
    assert await store.complete(w, [Outcome(c.id, c.attempt + 1, OutcomeKind.DEAD)]) == 0
    assert await store.complete(w, [Outcome(c.id, c.attempt - 1, OutcomeKind.DEAD)]) == 0
    assert (await store.get_job(c.id)).state == "running"
    assert await store.complete(w, [done]) == 1
    assert await store.complete(w, [Outcome(c.id, c.attempt, OutcomeKind.DEAD)]) == 0
    assert (await store.get_job(c.id)).state == "succeeded"


async def test_late_ack_after_takeover_is_a_no_op(store):
    """A worker whose lease was taken over cannot overwrite the new owner's run."""
    old, new = uuid7(), uuid7()
    await store.enqueue([spec(idempotent=True, max_crashes=5)])
    (first,) = await claim_all(store, old, lease=-1)
    await store.rescue_expired("lease sweep")
    (second,) = await claim_all(store, new)
    assert second.attempt == first.attempt + 1
    assert await store.complete(old, [Outcome(first.id, first.attempt, OutcomeKind.SUCCEEDED)]) == 0
    assert await store.give_back(old, [(first.id, first.attempt)]) == 0
    job = await store.get_job(first.id)
    assert (job.state, job.worker_id, job.attempts) == ("running", new, 2)


async def test_complete_writes_a_mixed_batch(store):
    w = uuid7()
    await store.enqueue([spec(idempotent=True) for _ in range(4)])
    a, b, c, d = await claim_all(store, w)
    changed = await store.complete(
        w,
        [
            Outcome(a.id, a.attempt, OutcomeKind.SUCCEEDED, result_json="1"),
            Outcome(b.id, b.attempt, OutcomeKind.RETRY, error="e", retry_delay=3600),
            Outcome(c.id, c.attempt, OutcomeKind.CRASHED, error="SIGKILL"),
            Outcome(d.id, d.attempt + 9, OutcomeKind.SUCCEEDED),
        ],
    )  # fenced out
    assert changed == 3
    states = {x.id: (await store.get_job(x.id)).state for x in (a, b, c, d)}
    assert states == {a.id: "succeeded", b.id: "queued", c.id: "queued", d.id: "running"}
