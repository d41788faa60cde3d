"""``taskq.current_job()`` inside every kind of actor, and meta saved with the outcome."""

from __future__ import annotations

import pytest

import taskq
from taskq import AsyncClient, NoCurrentJob
from tests.support import context_actors as actors
from tests.support.worker_harness import running_worker, wait_for_states

ACTORS = "tests.support.context_actors:registry"


def test_current_job_outside_a_job_is_a_clear_error() -> None:
    with pytest.raises(NoCurrentJob, match="outside a running job"):
        taskq.current_job()


@pytest.mark.parametrize("actor", [actors.ctx_async, actors.ctx_sync, actors.ctx_cpu])
async def test_the_actor_sees_its_job_and_its_meta_changes_are_saved(target, store, actor):
    async with AsyncClient(store=store) as client:
        job_id = await client.enqueue_with(
            actor, [0.5], meta={"requested_by": "ops"}, tags=["report"]
        )
        async with running_worker(target, actors=ACTORS, queues=("ctx",), cpu_workers=1):
            (job,) = await wait_for_states(store, [job_id], {"succeeded", "dead"}, timeout=60)
    assert job.state == "succeeded", job.last_error
    assert job.result == {
        "id": str(job_id),
        "actor": actor.name,
        "queue": "ctx",
        "attempt": 1,
        "crash_count": 0,
        "cancel_requested": False,
        "meta_before": {"requested_by": "ops"},
    }
    assert job.meta == {"requested_by": "ops", "progress": 0.5, "seen_by": actor.name}
    assert job.tags == ["report"]


async def test_meta_written_by_failed_runs_is_kept_for_the_next_attempt(target, store):
    async with AsyncClient(store=store) as client:
        counted = await client.enqueue(actors.ctx_counts_tries)
        cpu = await client.enqueue(actors.ctx_cpu_fails_once)
        async with running_worker(target, actors=ACTORS, queues=("ctx",), cpu_workers=1):
            done = await wait_for_states(store, [counted, cpu], {"succeeded", "dead"}, timeout=60)
    by_id = {j.id: j for j in done}
    assert by_id[counted].state == "succeeded" and by_id[counted].result == 3
    assert by_id[counted].meta == {"tries": 3}
    assert by_id[cpu].state == "succeeded" and by_id[cpu].result == 2
    assert by_id[cpu].meta == {"last_attempt": 2}


async def test_meta_over_the_limit_fails_the_run_and_keeps_the_old_meta(target, store):
    async with AsyncClient(store=store) as client:
        job_id = await client.enqueue_with(actors.ctx_meta_too_big, meta={"keep": True})
        async with running_worker(target, actors=ACTORS, queues=("ctx",)):
            (job,) = await wait_for_states(store, [job_id], {"succeeded", "dead"}, timeout=30)
    assert job.state == "dead"
    assert "PayloadTooLarge" in job.last_error
    assert job.meta == {"keep": True}
