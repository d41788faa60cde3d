"""What a worker does with jobs: run each once, retry, dead-letter with a reason.

In-process ``Worker`` against both real stores; runs are recorded in a file so a double
run is caught.
"""

from __future__ import annotations

from collections import Counter

from taskq import AsyncClient
from taskq.ids import uuid7
from taskq.jobs import JobSpec
from tests.conftest import WITH_POOLER, target_fixture
from tests.support import worker_actors as actors
from tests.support.helpers import async_wait_until
from tests.support.worker_harness import running_worker, wait_for_states

# claims, acks, heartbeats, rescues, cancels and limits also through PgBouncer (issue 19)
target = target_fixture(*WITH_POOLER)


async def test_n_jobs_each_run_exactly_once(target, store, runs_file):
    keys = [f"k{i}" for i in range(300)]
    async with AsyncClient(store=store) as client:
        ids = await client.enqueue_many(actors.remember, [((k,), {}) for k in keys[:150]])
        ids += await client.enqueue_many(actors.remember_sync, [((k,), {}) for k in keys[150:]])
        async with running_worker(target, max_concurrency=8):
            jobs = await wait_for_states(store, ids, {"succeeded"})
    assert Counter(actors.runs(runs_file)) == Counter(keys)  # every key once, none twice
    assert all(j.attempts == 1 and j.crash_count == 0 for j in jobs)
    assert {j.result["key"] for j in jobs} == set(keys)
    assert (await store.stats())["running"] == 0


async def test_exception_retries_then_dead_failed_with_the_error(target, store, runs_file):
    async with AsyncClient(store=store) as client:
        job_id = await client.enqueue(actors.always_fails, "x")
        async with running_worker(target):
            (job,) = await wait_for_states(store, [job_id], {"dead"})
    assert job.dead_reason == "failed"
    assert job.attempts == 3
    assert job.last_error.startswith("ValueError: boom x")
    assert "always_fails" in job.last_error  # the traceback names the actor's frame
    assert actors.runs(runs_file) == ["x", "x", "x"]


async def test_unknown_actor_is_dead_unknown_actor(target, store):
    async with AsyncClient(store=store) as client:
        job_id = await client.enqueue_with("no_such_actor", queue="default")
        async with running_worker(target):
            (job,) = await wait_for_states(store, [job_id], {"dead"})
    assert job.dead_reason == "unknown_actor"
    assert "no_such_actor" in job.last_error
    assert job.attempts == 1


async def test_undecodable_payload_is_dead_undecodable(target, store):
    # valid JSON (Postgres checks that) but not an argument list
    spec = JobSpec(
        id=uuid7(), actor="remember", queue="default", args_json='{"key": 1}', kwargs_json="{}"
    )
    (job_id,) = await store.enqueue([spec])
    async with running_worker(target):
        (job,) = await wait_for_states(store, [job_id], {"dead"})
    assert job.dead_reason == "undecodable"


async def test_async_job_past_its_timeout_is_cancelled_and_failed(target, store, runs_file):
    async with AsyncClient(store=store) as client:
        job_id = await client.enqueue(actors.async_too_slow, "t")
        async with running_worker(target):
            (job,) = await wait_for_states(store, [job_id], {"dead"})
    assert job.dead_reason == "failed"
    assert job.last_error.startswith("JobTimedOut")


async def test_sync_job_past_its_timeout_is_recorded_timed_out(target, store, runs_file, tmp_path):
    async with AsyncClient(store=store) as client:
        job_id = await client.enqueue(actors.sync_too_slow, "s", str(tmp_path))
        async with running_worker(target) as worker:
            (job,) = await wait_for_states(store, [job_id], {"dead"})
            # the worker still serves while the abandoned thread runs on
            ok = await client.enqueue(actors.remember, "after")
            await wait_for_states(store, [ok], {"succeeded"})
            (tmp_path / "s").touch()  # let the abandoned thread end
            assert worker.running == {}
    assert job.last_error.startswith("JobTimedOut")


async def test_large_result_is_dropped_and_job_still_succeeds(target, store):
    async with AsyncClient(store=store) as client:
        small = await client.enqueue(actors.huge_result, 10)
        big = await client.enqueue(actors.huge_result, 100_000)
        async with running_worker(target):
            small_job, big_job = await wait_for_states(store, [small, big], {"succeeded"})
    assert small_job.result == "x" * 10
    assert big_job.result is None


async def test_idle_worker_wakes_on_enqueue_not_on_the_poll_interval(target, store):
    """LISTEN/NOTIFY on Postgres (commit detection on SQLite) wakes the fetcher: with a
    60 s poll interval, jobs enqueued to an idle worker still run at once, again and again."""
    async with AsyncClient(store=store) as client:
        async with running_worker(target, poll_interval=60.0) as worker:
            await async_wait_until(lambda: _claimed_once(worker), what="a first empty claim")
            for i in range(3):
                job_id = await client.enqueue(actors.remember, f"wake{i}")
                await wait_for_states(store, [job_id], {"succeeded"}, timeout=20)


async def _claimed_once(worker) -> bool:
    return worker.fetcher is not None and worker.fetcher.claims >= 1
