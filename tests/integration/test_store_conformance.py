"""The Store contract, method by method, against both real engines (``store`` fixture)."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta

import psycopg
import pytest

from taskq.exceptions import StoreError
from taskq.ids import uuid7
from taskq.jobs import ALL_STATES, ActorConfig, Outcome, OutcomeKind, WorkerInfo

from .storekit import another_store, spec

LEASE = 30.0


def past(seconds: float = 60.0) -> datetime:
    return datetime.now(UTC) - timedelta(seconds=seconds)


def future(seconds: float = 3600.0) -> datetime:
    return datetime.now(UTC) + timedelta(seconds=seconds)


async def claim_all(store, worker, queues=("default",), limit=100, lease=LEASE, **kw):
    return await store.claim(worker, list(queues), limit, lease, **kw)


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
def actor(name: str = "tests.resize", **changes) -> ActorConfig:
    fields = {
        "queue": "images",
        "max_attempts": 3,
        "max_crashes": 2,
        "idempotent": False,
        "cpu_bound": True,
        "timeout": 30.0,
    } | changes
    return ActorConfig(name=name, **fields)


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

    changed = actor(max_attempts=5, queue="big")
    differences = await store.sync_actor_configs([changed, actor("tests.new")], force=False)
    assert sorted(differences) == [
        "tests.resize: max_attempts 3 -> 5",
        "tests.resize: queue 'images' -> 'big'",
    ]
    after = await store.actor_configs()
    assert after["tests.resize"] == actor() and "tests.new" not in after  # nothing written

    assert len(await store.sync_actor_configs([changed], force=True)) == 2
    assert (await store.actor_configs())["tests.resize"] == changed


# -- workers -------------------------------------------------------------------------
def worker(label: str | None = None, instance=None, **kw) -> WorkerInfo:
    return WorkerInfo(
        id=uuid7(),
        pid=kw.pop("pid", 4242),
        hostname="host-1",
        queues=kw.pop("queues", ["default", "b"]),
        worker_label=label,
        workgroup_instance=instance,
        **kw,
    )


async def test_register_list_find_unregister_workers(store):
    instance = uuid7()
    w1, w2, w3 = worker("api", instance), worker("api", instance, pid=7), worker()
    for w in (w1, w2, w3):
        await store.register_worker(w)
    listed = await store.list_workers()
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
    assert {w.id for w in await store.list_workers()} == {w2.id, w3.id}


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


# -- crash rules ---------------------------------------------------------------------
async def crash_via(store, how: str, w, c, *, blamed: bool = True) -> None:
    if how == "complete":
        cause = "runner died: SIGSEGV" if blamed else "runner died: SIGKILL"
        await store.complete(
            w, [Outcome(c.id, c.attempt, OutcomeKind.CRASHED, error=cause, blamed=blamed)]
        )
    elif how == "rescue_worker":
        await store.rescue_worker(w, "runner died: SIGKILL", blamed=blamed)
    else:
        await store.rescue_expired("lease sweep")


@pytest.mark.parametrize("how", ["complete", "rescue_worker"])
async def test_crash_rules_for_a_death_blamed_on_the_job_alone(store, how):
    """A death that points at the job (a pool process's SIGSEGV, an os._exit, an OOM kill)
    of a runner that ran nothing else: the crash counts toward poison."""
    idem, plain, fragile = (
        spec(idempotent=True, max_crashes=2),
        spec(idempotent=False, max_crashes=2),
        spec(idempotent=True, max_crashes=1),
    )
    await store.enqueue([idem, plain, fragile])
    for s in (idem, plain, fragile):  # one runner (worker) per job: no shared death
        w = uuid7()
        (c,) = await claim_all(store, w, limit=1)
        assert c.id == s.id
        await crash_via(store, how, w, c)
    ji, jp, jf = [await store.get_job(s.id) for s in (idem, plain, fragile)]
    assert (ji.state, ji.crash_count, ji.dead_reason, ji.worker_id) == ("queued", 1, None, None)
    assert ji.attempts == 1 and ji.lease_expires_at is None
    assert (jp.state, jp.crash_count, jp.dead_reason) == ("dead", 1, "crashed")
    assert (jf.state, jf.crash_count, jf.dead_reason) == ("dead", 1, "poison")
    assert jp.finished_at is not None and jp.worker_id is not None
    for job in (ji, jp, jf):
        assert job.last_error.startswith("runner died")

    # the idempotent one runs again at once; its second blamed crash makes it poison
    w = uuid7()
    (again,) = await claim_all(store, w)
    assert (again.id, again.attempt, again.crash_count) == (idem.id, 2, 1)
    await crash_via(store, how, w, again)
    ji = await store.get_job(idem.id)
    assert (ji.state, ji.crash_count, ji.dead_reason) == ("dead", 2, "poison")


@pytest.mark.parametrize("how", ["complete", "rescue_worker", "rescue_expired"])
async def test_unblamed_deaths_rerun_and_charge_but_never_poison_until_the_backstop(store, how):
    """An outside SIGKILL (no OOM evidence) or a lost lease blames no job: crash_count
    goes up, idempotent jobs re-run, non-idempotent ones end dead/crashed, and only the
    backstop (5 unproven deaths by default) makes a job poison."""
    lease = -1.0 if how == "rescue_expired" else LEASE
    idem, plain = spec(idempotent=True, max_crashes=1), spec(idempotent=False, max_crashes=1)
    await store.enqueue([idem, plain])
    for crash in range(1, 6):
        w = uuid7()
        claimed = await claim_all(store, w, lease=lease)
        for c in claimed:
            if how == "rescue_worker":
                await store.rescue_worker(w, "worker killed by SIGKILL", blamed=False)
                break
            await crash_via(store, how, w, c, blamed=False)
        ji = await store.get_job(idem.id)
        if crash < 5:
            assert (ji.state, ji.crash_count, ji.dead_reason) == ("queued", crash, None)
        if crash == 1:
            jp = await store.get_job(plain.id)
            assert (jp.state, jp.crash_count, jp.dead_reason) == ("dead", 1, "crashed")
    assert (ji.state, ji.crash_count, ji.dead_reason) == ("dead", 5, "poison")


async def test_the_backstop_is_the_actor_option_max_unblamed_crashes(store):
    await store.sync_actor_configs(
        [
            ActorConfig(
                name="tests.echo",
                queue="default",
                max_attempts=3,
                max_crashes=2,
                idempotent=True,
                cpu_bound=False,
                timeout=None,
                extra={"max_unblamed_crashes": 2},
            )
        ],
        force=True,
    )
    await store.enqueue([spec(idempotent=True)])
    for _ in range(2):
        w = uuid7()
        (c,) = await claim_all(store, w)
        await store.rescue_worker(w, "worker killed by SIGKILL", blamed=False)
    job = await store.get_job(c.id)
    assert (job.state, job.dead_reason, job.crash_count) == ("dead", "poison", 2)


async def test_a_blame_shared_with_other_jobs_poisons_only_after_a_death_alone(store):
    """A worker running three jobs dies of a cause that points at a job: at most one of
    them did it. None is poisoned by that death; each is re-run, and a second blame poisons
    only a job that died alone on its runner."""
    jobs = [spec(idempotent=True, max_crashes=2) for _ in range(3)]
    await store.enqueue(jobs)
    w = uuid7()
    assert len(await claim_all(store, w)) == 3
    rescued = await store.rescue_worker(w, "worker exited with code 1", blamed=True)
    assert {r.state for r in rescued} == {"queued"}
    # all three again on one runner, blamed again: still shared, still not poison
    w = uuid7()
    assert len(await claim_all(store, w)) == 3
    rescued = await store.rescue_worker(w, "worker exited with code 1", blamed=True)
    assert {r.state for r in rescued} == {"queued"}
    # now one of them alone on a fresh runner, blamed: that one is poison
    w = uuid7()
    (alone,) = await claim_all(store, w, limit=1)
    (rescued,) = await store.rescue_worker(w, "worker exited with code 1", blamed=True)
    assert (rescued.id, rescued.state, rescued.dead_reason) == (alone.id, "dead", "poison")
    others = [await store.get_job(s.id) for s in jobs if s.id != alone.id]
    assert all(j.state == "queued" and j.crash_count == 2 for j in others)


async def test_retry_resets_blame(store):
    await store.enqueue([spec(idempotent=True, max_crashes=2)])
    w = uuid7()
    (c,) = await claim_all(store, w)
    await crash_via(store, "complete", w, c)  # blamed once
    (again,) = await claim_all(store, w)
    await store.complete(
        w, [Outcome(again.id, again.attempt, OutcomeKind.DEAD, error="ValueError")]
    )
    assert await store.retry_jobs([c.id]) == [c.id]
    (third,) = await claim_all(store, w)
    await crash_via(store, "complete", w, third)  # a first blame again: re-queued
    assert (await store.get_job(c.id)).state == "queued"


async def test_rescue_worker_touches_only_that_worker_and_drops_its_row(store):
    dead_w, live_w = worker(), worker()
    await store.register_worker(dead_w)
    await store.register_worker(live_w)
    await store.enqueue([spec(idempotent=True), spec(), spec()])
    mine = await claim_all(store, dead_w.id, limit=2)
    (theirs,) = await claim_all(store, live_w.id)
    rescued = await store.rescue_worker(dead_w.id, "worker exited with SIGKILL")
    assert {r.id for r in rescued} == {c.id for c in mine}
    by_id = {r.id: r for r in rescued}
    for c in mine:
        job = await store.get_job(c.id)
        assert (by_id[c.id].state, by_id[c.id].dead_reason) == (job.state, job.dead_reason)
        assert by_id[c.id].crash_count == 1 and by_id[c.id].actor == c.actor
        assert job.last_error == "worker exited with SIGKILL"
    assert (await store.get_job(theirs.id)).state == "running"
    assert [w.id for w in await store.list_workers()] == [live_w.id]
    assert await store.rescue_worker(dead_w.id, "again") == []


async def test_a_lease_expiry_names_the_worker_its_host_and_pid_once(store):
    lost = WorkerInfo(id=uuid7(), pid=4242, hostname="box-7", queues=["default"])
    await store.register_worker(lost)
    await store.enqueue([spec(idempotent=True)])
    (expired,) = await claim_all(store, lost.id, limit=1, lease=-1)
    await store.rescue_expired("lease expired")
    job = await store.get_job(expired.id)
    assert job.last_error == (
        f"lease expired: worker {lost.id} on box-7 (pid 4242) stopped heartbeating"
    )


async def test_rescue_expired_only_touches_expired_leases_and_names_the_worker(store):
    lost, alive = uuid7(), uuid7()
    await store.enqueue([spec(idempotent=True), spec(idempotent=True)])
    (expired,) = await claim_all(store, lost, limit=1, lease=-1)
    (fresh,) = await claim_all(store, alive, limit=1, lease=LEASE)
    rescued = await store.rescue_expired("lease expired")
    assert [(r.id, r.state, r.crash_count) for r in rescued] == [(expired.id, "queued", 1)]
    job = await store.get_job(expired.id)
    assert job.last_error == f"lease expired: worker {lost} stopped heartbeating"  # no row left
    assert (await store.get_job(fresh.id)).state == "running"
    assert await store.rescue_expired("lease expired") == []


async def test_a_sweeper_never_rescues_its_own_workers_runs(store):
    me, other = uuid7(), uuid7()
    await store.enqueue([spec(idempotent=True), spec(idempotent=True)])
    (mine,) = await claim_all(store, me, limit=1, lease=-1)
    (theirs,) = await claim_all(store, other, limit=1, lease=-1)
    rescued = await store.rescue_expired("lease expired", exclude_worker=me)
    assert [r.id for r in rescued] == [theirs.id]
    assert (await store.get_job(mine.id)).state == "running"  # expired, but known alive
    assert [r.id for r in await store.rescue_expired("lease expired")] == [mine.id]


async def test_concurrent_sweepers_charge_each_expired_run_once(store, target):
    lost = uuid7()
    await store.enqueue([spec(idempotent=True, max_crashes=5) for _ in range(200)])
    assert len(await claim_all(store, lost, limit=200, lease=-1)) == 200
    async with another_store(target) as other:
        results = await asyncio.gather(
            *(s.rescue_expired("sweep") for s in (store, other, store, other))
        )
    rescued = [r.id for batch in results for r in batch]
    assert len(rescued) == len(set(rescued)) == 200
    jobs = await store.list_jobs(limit=300)
    assert {(j.state, j.crash_count) for j in jobs} == {("queued", 1)}


async def test_heartbeat_extends_leases_so_the_sweeper_leaves_them(store):
    w = worker()
    await store.register_worker(w)
    before = (await store.list_workers())[0].last_seen_at
    await store.enqueue([spec(), spec(), spec()])
    claimed = await claim_all(store, w.id, limit=2, lease=-1)
    assert await store.heartbeat(w.id, 60.0) == 2
    for c in claimed:
        job = await store.get_job(c.id)
        assert (job.lease_expires_at - await store.now()).total_seconds() > 50
    assert await store.rescue_expired("lease expired") == []
    assert (await store.list_workers())[0].last_seen_at >= before
    assert await store.heartbeat(uuid7(), 60.0) == 0


# -- give back -----------------------------------------------------------------------
async def test_give_back_uncharges_the_attempt_and_is_fenced(store):
    w = uuid7()
    await store.enqueue([spec(), spec()])
    a, b = await claim_all(store, w)
    assert await store.give_back(uuid7(), [(a.id, a.attempt)]) == 0
    assert await store.give_back(w, [(a.id, a.attempt + 1)]) == 0
    assert await store.give_back(w, [(a.id, a.attempt), (b.id, b.attempt)]) == 2
    job = await store.get_job(a.id)
    assert (job.state, job.attempts, job.worker_id) == ("queued", 0, None)
    assert job.lease_expires_at is None and job.started_at is None
    assert await store.give_back(w, [(a.id, a.attempt)]) == 0
    again = await claim_all(store, w)
    assert sorted(c.attempt for c in again) == [1, 1]


# -- pruning -------------------------------------------------------------------------
async def test_prune_deletes_old_succeeded_jobs_and_idle_workers(store):
    busy, idle = worker(), worker()
    await store.register_worker(busy)
    await store.register_worker(idle)
    await store.enqueue([spec() for _ in range(7)])
    claimed = await claim_all(store, busy.id, limit=6)
    await store.complete(
        busy.id, [Outcome(c.id, c.attempt, OutcomeKind.SUCCEEDED) for c in claimed[:5]]
    )
    cutoff = await store.now() + timedelta(seconds=1)
    assert await store.prune(
        succeeded_before=cutoff - timedelta(hours=1), workers_before=cutoff - timedelta(hours=1)
    ) == (0, 0)
    assert await store.prune(succeeded_before=cutoff, workers_before=cutoff, batch=2) == (5, 1)
    assert await store.stats() == {
        "queued": 1,
        "running": 1,
        "succeeded": 0,
        "dead": 0,
        "cancelled": 0,
    }
    assert [w.id for w in await store.list_workers()] == [busy.id]  # it holds a running job


async def test_prune_deletes_dead_and_cancelled_jobs_only_when_given_their_cutoff(store):
    w = uuid7()
    ids = await store.enqueue([spec(), spec(), spec()])
    (dead,) = await claim_all(store, w, limit=1)
    await store.complete(
        w, [Outcome(dead.id, dead.attempt, OutcomeKind.DEAD, error="no", dead_reason="failed")]
    )
    (cancelled,) = await store.cancel_jobs([ids[2]])
    cutoff = await store.now() + timedelta(seconds=1)
    assert await store.prune(succeeded_before=cutoff, workers_before=cutoff) == (0, 0)
    assert await store.prune(
        succeeded_before=cutoff,
        workers_before=cutoff,
        dead_before=cutoff - timedelta(hours=1),
        cancelled_before=cutoff - timedelta(hours=1),
    ) == (0, 0)
    assert await store.prune(
        succeeded_before=cutoff, workers_before=cutoff, dead_before=cutoff
    ) == (1, 0)
    assert await store.get_job(dead.id) is None
    assert await store.prune(
        succeeded_before=cutoff, workers_before=cutoff, cancelled_before=cutoff
    ) == (1, 0)
    assert await store.get_job(cancelled) is None
    assert (await store.stats())["queued"] == 1


# -- waking --------------------------------------------------------------------------
async def prime(store, w) -> None:
    """What a worker does before it waits: an (empty) claim, and a first wait that sets
    up listening. Anything committed after this must wake the next wait."""
    assert await claim_all(store, w) == []
    await store.wait_for_jobs(["default"], timeout=0.0)


async def test_warm_up_claims_nothing_and_opens_the_listening(store, target):
    """A starting worker warms its store up while it checks the schema: nothing may be
    claimed yet; on Postgres the LISTEN is in place (its first wait finds it open)."""
    (job_id,) = await store.enqueue([spec()])
    await store.warm_up()
    await store.warm_up()  # again: nothing more
    job = await store.get_job(job_id)
    assert job is not None and job.state == "queued" and job.attempts == 0
    if target.kind == "postgres":
        with psycopg.connect(target.dsn, autocommit=True) as conn:
            (listening,) = conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE query = %s",
                (f'LISTEN "{store.channel}"',),
            ).fetchone()
        assert listening == 1
    assert [c.id for c in await claim_all(store, uuid7())] == [job_id]


async def test_wait_for_jobs_wakes_on_enqueue_from_another_connection(store, target):
    await prime(store, uuid7())
    async with another_store(target) as producer:
        waiter = asyncio.create_task(store.wait_for_jobs(["default"], timeout=20.0))
        await producer.enqueue([spec()])
        assert await asyncio.wait_for(waiter, timeout=25.0) is True


async def test_wait_for_jobs_sees_an_enqueue_made_before_it_started(store, target):
    await prime(store, uuid7())
    async with another_store(target) as producer:
        await producer.enqueue([spec(), spec()])
    assert await store.wait_for_jobs(["default"], timeout=20.0) is True


async def test_wait_for_jobs_ignores_other_queues_and_times_out(store, target):
    await prime(store, uuid7())
    async with another_store(target) as producer:
        waiter = asyncio.create_task(store.wait_for_jobs(["default"], timeout=0.5))
        await producer.enqueue([spec(queue="elsewhere"), spec(run_at=future())])
        assert await asyncio.wait_for(waiter, timeout=10.0) is False


async def test_wait_for_jobs_wakes_on_requeue(store, target):
    w = uuid7()
    await store.enqueue([spec(idempotent=True)])
    async with another_store(target) as other:
        assert len(await claim_all(other, w)) == 1
        await prime(store, uuid7())
        waiter = asyncio.create_task(store.wait_for_jobs(["default"], timeout=20.0))
        await other.rescue_worker(w, "died")
        assert await asyncio.wait_for(waiter, timeout=25.0) is True


async def test_a_cancelled_wait_leaves_the_next_wait_working(store, target):
    """The fetcher cancels its wait at shutdown or on its own timeout."""
    await prime(store, uuid7())
    for _ in range(3):
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(store.wait_for_jobs(["default"], timeout=30.0), timeout=0.1)
    async with another_store(target) as producer:
        await producer.enqueue([spec()])
    assert await store.wait_for_jobs(["default"], timeout=20.0) is True
    await store.ping()


async def test_a_shared_blame_marks_the_jobs_to_run_alone_until_a_run_ends(store):
    await store.enqueue([spec(idempotent=True, max_crashes=3) for _ in range(2)])
    w = uuid7()
    assert [c.run_alone for c in await claim_all(store, w)] == [False, False]
    await store.rescue_worker(w, "worker exited with code 1", blamed=True)  # shared
    w = uuid7()
    a, b = await claim_all(store, w)
    assert (a.run_alone, b.run_alone) == (True, True)
    await store.rescue_worker(w, "worker killed by SIGKILL", blamed=False)  # still unproven
    w = uuid7()
    a, b = await claim_all(store, w)
    assert (a.run_alone, b.run_alone) == (True, True)
    await store.complete(w, [Outcome(a.id, a.attempt, OutcomeKind.RETRY, error="e")])
    await store.give_back(w, [(b.id, b.attempt)])
    flags = {c.id: c.run_alone for c in await claim_all(store, uuid7())}
    assert flags == {a.id: False, b.id: True}  # a's run ended: cleared; b never ran
