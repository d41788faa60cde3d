"""The Store contract: the crash rules (blame, unproven deaths, the backstop), rescues,
the lease sweep, heartbeats, give-backs and pruning, against every engine."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

from taskq.ids import uuid7
from taskq.jobs import ActorConfig, Outcome, OutcomeKind, WorkerInfo
from tests.support.conformance_kit import LEASE, claim_all, worker
from tests.support.storekit import another_store, spec


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
    assert [w.id for w in await store.insight.list_workers()] == [live_w.id]
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
    before = (await store.insight.list_workers())[0].last_seen_at
    await store.enqueue([spec(), spec(), spec()])
    claimed = await claim_all(store, w.id, limit=2, lease=-1)
    assert await store.heartbeat(w.id, 60.0) == 2
    for c in claimed:
        job = await store.get_job(c.id)
        assert (job.lease_expires_at - await store.now()).total_seconds() > 50
    assert await store.rescue_expired("lease expired") == []
    assert (await store.insight.list_workers())[0].last_seen_at >= before
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
    assert [w.id for w in await store.insight.list_workers()] == [busy.id]  # it holds a running job


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
