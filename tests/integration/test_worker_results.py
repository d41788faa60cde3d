"""One result rule for every runner (issue 9 item 6), on both stores, in a real worker.

A job that returned a result taskq cannot store (not JSON-serialisable, or over
``result_max_bytes``) already had its side effects: it is recorded ``succeeded``, once,
with ``result`` null, ``last_error`` saying why, and a ``job-result-dropped`` warning,
whether it ran on the event loop, in a thread or in the CPU process pool.
"""

from __future__ import annotations

from uuid import UUID

import pytest

from taskq import AsyncClient
from tests.support import result_actors as actors
from tests.support.procpool_support import (
    assert_no_process_left,
    capture_taskq_logs,
    events,
)
from tests.support.worker_harness import running_worker, wait_for_states

ACTORS = "tests.support.result_actors:registry"
LIMIT = 4 * 1024
KINDS = ("async", "sync", "cpu")


async def test_a_result_that_cannot_be_stored_is_dropped_alike_on_every_runner(
    target, store, caplog: pytest.LogCaptureFixture
):
    capture_taskq_logs(caplog)
    ids = {}
    async with AsyncClient(store=store) as client:
        for kind in KINDS:
            not_json, sized = getattr(actors, f"{kind}_not_json"), getattr(actors, f"{kind}_sized")
            ids[kind, "not_json"] = await client.enqueue(not_json)
            ids[kind, "too_big"] = await client.enqueue(sized, 2 * LIMIT)
            ids[kind, "fits"] = await client.enqueue(sized, 100)
        async with running_worker(
            target, actors=ACTORS, cpu_workers=1, max_concurrency=4, result_max_bytes=LIMIT
        ):
            done = await wait_for_states(
                store, list(ids.values()), {"succeeded", "dead"}, timeout=60
            )
    by_id = {job.id: job for job in done}
    jobs = {key: by_id[job_id] for key, job_id in ids.items()}

    for kind in KINDS:
        for case in ("not_json", "too_big"):
            job = jobs[kind, case]
            # succeeded, once: never retried, never failed, never a crash
            assert job.state == "succeeded", (kind, case, job)
            assert job.attempts == 1 and job.crash_count == 0, (kind, case, job)
            assert job.result is None, (kind, case)
            assert job.last_error.startswith("result dropped: "), (kind, case, job.last_error)
        fits = jobs[kind, "fits"]
        assert fits.state == "succeeded" and fits.result == "x" * 100 and fits.last_error is None

    # the very same reason, whichever runner ran the job
    for case, expected in (
        ("not_json", "is not JSON-serialisable: TypeError: Object of type object is not"),
        ("too_big", f"is {2 * LIMIT + 2} bytes, over the limit of {LIMIT}"),
    ):
        reasons = {jobs[kind, case].last_error.replace(f"'{kind}_", "'KIND_") for kind in KINDS}
        assert len(reasons) == 1, reasons
        assert expected in reasons.pop()

    # one warning per dropped result, naming the job, the actor and why
    dropped = events(caplog, "job-result-dropped")
    expected_jobs = {
        (str(ids[kind, case]), f"{kind}_{'not_json' if case == 'not_json' else 'sized'}")
        for kind in KINDS
        for case in ("not_json", "too_big")
    }
    assert {(e["job"], e["actor"]) for e in dropped} == expected_jobs
    assert all(e["level"] == "WARNING" and e["error"] for e in dropped)
    for event in dropped:
        assert by_id[UUID(event["job"])].last_error == f"result dropped: {event['error']}"
    assert_no_process_left()


async def test_a_returned_snooze_is_a_snooze_not_a_result_on_every_runner(target, store):
    async with AsyncClient(store=store) as client:
        ids = {kind: await client.enqueue(getattr(actors, f"{kind}_snooze")) for kind in KINDS}
        async with running_worker(target, actors=ACTORS, cpu_workers=1, max_concurrency=4):
            done = await wait_for_states(store, list(ids.values()), {"succeeded", "dead"})
    by_id = {job.id: job for job in done}
    for kind, job_id in ids.items():
        job = by_id[job_id]
        assert (job.state, job.dead_reason) == ("dead", "snoozed_too_often"), (kind, job)
        assert job.snooze_count == 1, (kind, job)
    assert_no_process_left()
