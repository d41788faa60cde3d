"""The worker's background parts: heartbeat keeps leases, acker batches, pruner prunes."""

from __future__ import annotations

import asyncio

import pytest

from taskq import AsyncClient
from taskq.ids import uuid7
from taskq.jobs import Outcome, OutcomeKind, WorkerInfo
from taskq.worker.acker import Acker
from tests.conftest import WITH_POOLER, target_fixture
from tests.support import worker_actors as actors
from tests.support.helpers import async_wait_until
from tests.support.worker_harness import running_worker, wait_for_states

# claims, acks, heartbeats, rescues, cancels and limits also through PgBouncer (issue 19)
target = target_fixture(*WITH_POOLER)


async def test_heartbeat_keeps_a_long_job_leased_past_many_lease_periods(
    target, store, runs_file, tmp_path
):
    async with AsyncClient(store=store) as client:
        job_id = await client.enqueue(actors.held_idempotent, "long", str(tmp_path))
        async with running_worker(
            target, queues=("held",), lease=0.6, heartbeat_interval=0.1
        ) as worker:
            await async_wait_until(lambda: _beats(worker, 12), what="a dozen heartbeats")
            running = await store.get_job(job_id)
            assert running.state == "running" and running.crash_count == 0
            (tmp_path / "long").touch()
            (job,) = await wait_for_states(store, [job_id], {"succeeded"})
    assert job.attempts == 1 and job.crash_count == 0
    assert actors.runs(runs_file, "start") == ["long"]


async def _beats(worker, n: int) -> bool:
    return worker.heartbeat is not None and worker.heartbeat.beats >= n


class _CountingStore:
    """The real store, with its complete() calls counted."""

    def __init__(self, store) -> None:
        self._store = store
        self.complete_calls: list[int] = []

    async def complete(self, worker_id, outcomes):
        self.complete_calls.append(len(outcomes))
        return await self._store.complete(worker_id, outcomes)

    def __getattr__(self, name):
        return getattr(self._store, name)


async def test_acker_sends_collected_outcomes_as_one_complete_call(store):
    worker_id = uuid7()
    await store.register_worker(WorkerInfo(id=worker_id, pid=1, hostname="h", queues=["default"]))
    async with AsyncClient(store=store) as client:
        ids = await client.enqueue_many(actors.remember, [((f"b{i}",), {}) for i in range(50)])
    claimed = (await store.claim(worker_id, ["default"], 50, 30)).jobs
    counting = _CountingStore(store)
    acker = Acker(counting, worker_id)
    for job in claimed:
        acker.add(Outcome(job.id, job.attempt, OutcomeKind.SUCCEEDED))
    task = asyncio.create_task(acker.run())
    acker.stop()
    await asyncio.wait_for(task, 10)
    assert counting.complete_calls == [50]
    jobs = await wait_for_states(store, ids, {"succeeded"})
    assert len(jobs) == 50


async def test_a_workers_acker_waits_for_company_only_while_it_holds_a_job(
    target, store, runs_file, tmp_path
):
    """The acker reads the worker's job buffer: idle, an outcome is written at once;
    while a job runs, a batch waits (the linger) for that job's outcome to join it."""
    release = str(tmp_path)
    async with running_worker(target, queues=("held",), max_concurrency=2) as worker:
        assert worker.acker is not None
        assert worker.acker.linger_now() == 0.0  # nothing claimed: nothing can join
        async with AsyncClient(store=store) as client:
            job_id = await client.enqueue(actors.held_idempotent, "running", release)
            await async_wait_until(
                lambda: actors.started(runs_file, "running"), what="the held job"
            )
            assert worker.acker.linger_now() > 0.0  # its outcome may join the batch
            (tmp_path / "running").touch()
            await wait_for_states(store, [job_id], {"succeeded"})
            assert worker.acker.linger_now() == 0.0


async def test_pruner_prunes_old_succeeded_jobs_and_silent_worker_rows(target, store):
    stale = WorkerInfo(id=uuid7(), pid=1, hostname="gone", queues=["default"])
    await store.register_worker(stale)
    async with AsyncClient(store=store) as client:
        ids = await client.enqueue_many(actors.noop, [((), {}) for _ in range(20)])
        async with running_worker(
            target,
            keep_succeeded=0.0,
            keep_silent_workers=1.0,
            prune_interval=0.2,
            rescue_interval=0.2,
        ) as worker:
            # no wait for "succeeded" first: with a retention of 0 a job may be pruned
            # before anyone sees it succeeded (only an ended job is ever pruned)
            await async_wait_until(
                lambda: _pruned(store, ids, stale.id, worker.id),
                what="old jobs and the silent row pruned",
            )


async def _pruned(store, ids, stale_id, live_id) -> bool:
    workers = {w.id for w in await store.insight.list_workers()}
    jobs = [await store.get_job(i) for i in ids]
    return all(j is None for j in jobs) and stale_id not in workers and live_id in workers


@pytest.mark.parametrize("keep", [False, True])
async def test_pruner_prunes_dead_and_cancelled_jobs_past_their_retention(
    target, store, runs_file, keep: bool
):
    """Dead and cancelled jobs have a retention too (None keeps them forever)."""
    retention = None if keep else 0.0
    async with AsyncClient(store=store) as client:
        dead = await client.enqueue(actors.async_too_slow, "d")
        cancelled = await client.enqueue_with(actors.noop, delay=3600)
        await client.cancel(cancelled)
        done = await client.enqueue(actors.noop)  # pruned at once: proof a prune pass ran
        async with running_worker(
            target,
            keep_succeeded=0.0,
            keep_dead=retention,
            keep_cancelled=retention,
            prune_interval=0.2,
            rescue_interval=0.2,
        ):
            await async_wait_until(
                lambda: _gone(store, [done] if keep else [done, dead, cancelled]),
                what="the jobs past their retention pruned",
            )
    if keep:
        assert (await store.get_job(dead)).state == "dead"
        assert (await store.get_job(cancelled)).state == "cancelled"


async def _gone(store, ids) -> bool:
    return all([await store.get_job(i) is None for i in ids])
