"""In-process shutdown: claimed-but-unstarted jobs go back uncharged; the grace period."""

from __future__ import annotations

from taskq import AsyncClient
from tests.conftest import WITH_POOLER, target_fixture
from tests.support import worker_actors as actors
from tests.support.helpers import async_wait_until
from tests.support.worker_harness import running_worker, wait_for_states

# claims, acks, heartbeats, rescues, cancels and limits also through PgBouncer (issue 19)
target = target_fixture(*WITH_POOLER)


async def test_stop_gives_back_claimed_but_unstarted_jobs_without_charging(
    target, store, runs_file, tmp_path
):
    release = str(tmp_path)
    async with AsyncClient(store=store) as client:
        first = await client.enqueue(actors.held_idempotent, "first", release)
        async with running_worker(
            target, queues=("held",), max_concurrency=1, prefetch=3, shutdown_grace=0.0
        ) as worker:
            await async_wait_until(lambda: actors.started(runs_file, "first"), what="first job")
            rest = await client.enqueue_many(
                actors.held_idempotent, [((f"r{i}", release), {}) for i in range(3)]
            )

            async def prefetched() -> bool:
                jobs = [await store.get_job(i) for i in rest]
                return all(j.state == "running" for j in jobs)

            await async_wait_until(prefetched, what="three prefetched (claimed) jobs")
        assert worker.exit_code == 0
        jobs = await wait_for_states(store, [first, *rest], {"queued"})
    assert all(j.attempts == 0 and j.crash_count == 0 for j in jobs)
    assert actors.runs(runs_file, "start") == ["first"]  # the others never started


async def test_request_stop_before_run_stops_right_after_start(target, store):
    from taskq.worker import Worker
    from tests.support.worker_harness import config_for

    worker = Worker(config_for(target))
    worker.request_stop("early")
    assert await worker.run() == 0
    assert await store.insight.list_workers() == []
