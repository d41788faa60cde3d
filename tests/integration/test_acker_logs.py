"""A job's end is logged once its outcome is written (issue 20 item 6): the acker, on both
stores, with outcomes the store takes, fences out, or never answers for."""

from __future__ import annotations

import asyncio

from taskq.ids import uuid7
from taskq.registry import RetryBackoff
from taskq.worker import outcomes
from taskq.worker.acker import FENCED_OUT, NOT_ANSWERED, Acker
from tests.support.conformance_kit import claim_all
from tests.support.helpers import async_wait_until
from tests.support.storekit import spec
from tests.support.worker_harness import run_acker
from tests.support.worker_logs import captured_logs


async def test_an_end_is_logged_once_it_is_written(store):
    worker = uuid7()
    await store.enqueue([spec(max_attempts=1), spec(max_attempts=2)])
    last, retried = sorted(await claim_all(store, worker), key=lambda j: j.max_attempts)
    acker = Acker(store, worker)
    with captured_logs() as logs:
        acker.add(outcomes.failed(last, "RuntimeError: boom", RetryBackoff()))
        acker.add(outcomes.failed(retried, "RuntimeError: boom", RetryBackoff()))
        assert logs.events("job-dead") == logs.events("job-retry-scheduled") == []  # not yet

        async def written() -> bool:
            return bool(logs.events("job-dead")) and bool(logs.events("job-retry-scheduled"))

        await run_acker(acker, written)
    (dead,) = logs.events("job-dead")
    assert (dead["job"], dead["reason"]) == (str(last.id), "failed")
    assert (await store.get_job(last.id)).state == "dead"
    (retry,) = logs.events("job-retry-scheduled")
    assert retry["job"] == str(retried.id)
    assert (await store.get_job(retried.id)).state == "queued"
    assert logs.events("job-end-not-written") == []


async def test_an_end_the_store_fenced_out_is_logged_as_not_written(store):
    """The run's lease was taken over: rescued (re-queued) and claimed again by another
    worker. Its first worker's dead outcome changes nothing, and is not logged as dead."""
    first, second = uuid7(), uuid7()
    await store.enqueue([spec(max_attempts=1, idempotent=True)])
    (job,) = await claim_all(store, first)
    await store.rescue_worker(first, "worker lost (test)")
    (again,) = await claim_all(store, second)
    assert again.attempt == job.attempt + 1
    acker = Acker(store, first)
    with captured_logs() as logs:
        acker.add(outcomes.failed(job, "RuntimeError: late", RetryBackoff()))

        async def checked() -> bool:
            return bool(logs.events("job-end-not-written"))

        await run_acker(acker, checked)
    assert acker.fenced_out == 1 and logs.events("job-dead") == []
    (line,) = logs.events("job-end-not-written")
    assert (line["job"], line["outcome"], line["reason"]) == (str(job.id), "dead", "failed")
    assert line["why"] == FENCED_OUT
    after = await store.get_job(job.id)
    assert (after.state, after.attempts) == ("running", again.attempt)


async def test_ends_left_unwritten_at_stop_are_logged_as_not_written(store):
    worker = uuid7()
    await store.enqueue([spec(max_attempts=1)])
    (job,) = await claim_all(store, worker)
    await store.close()  # every write fails from now on
    acker = Acker(store, worker)
    with captured_logs() as logs:
        acker.add(outcomes.failed(job, "RuntimeError: boom", RetryBackoff()))
        task = asyncio.create_task(acker.run())
        await async_wait_until(lambda: asyncio.sleep(0, acker.in_outage), what="a failed write")
        acker.stop()
        task.cancel()  # what the worker's parts do once the flush timeout is over
        await asyncio.gather(task, return_exceptions=True)
    assert logs.events("job-dead") == []
    (aggregate,) = logs.events("acks-not-written")
    assert aggregate["outcomes"] == 1
    (line,) = logs.events("job-end-not-written")
    assert (line["job"], line["why"]) == (str(job.id), NOT_ANSWERED)
