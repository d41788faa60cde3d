"""Late outcomes, both stores: an outcome that arrives after the crash rules ended its run
is recorded when nobody has run the job since, and is a no-op in every other case."""

from __future__ import annotations

import pytest

from taskq.ids import uuid7
from taskq.jobs import Outcome, OutcomeKind
from tests.support.storekit import spec

LEASE = 30.0


async def lost_run(store, *, idempotent: bool, how: str = "rescue_expired", max_crashes=5):
    """Enqueue one job, claim it as worker w and let the crash rules end that run."""
    w = uuid7()
    await store.enqueue([spec(idempotent=idempotent, max_crashes=max_crashes)])
    (c,) = await store.claim(w, ["default"], 1, -1.0 if how == "rescue_expired" else LEASE)
    if how == "rescue_expired":
        assert [r.id for r in await store.rescue_expired("lease sweep")] == [c.id]
    else:
        assert [r.id for r in await store.rescue_worker(w, "worker died")] == [c.id]
    return w, c


def succeeded(c, result: str = '{"ok": 1}') -> Outcome:
    return Outcome(c.id, c.attempt, OutcomeKind.SUCCEEDED, result_json=result)


@pytest.mark.parametrize("how", ["rescue_expired", "rescue_worker"])
async def test_late_success_of_a_dead_crashed_run_is_recorded(store, how):
    w, c = await lost_run(store, idempotent=False, how=how)
    before = await store.get_job(c.id)
    assert (before.state, before.dead_reason, before.late) == ("dead", "crashed", False)

    assert await store.complete(w, [succeeded(c)]) == 1
    job = await store.get_job(c.id)
    assert (job.state, job.dead_reason, job.result, job.late) == (
        "succeeded",
        None,
        {"ok": 1},
        True,
    )
    assert (job.attempts, job.crash_count, job.worker_id) == (1, 1, w)
    assert job.last_error == before.last_error  # the crash note stays: what happened, in order
    assert job.finished_at is not None and job.finished_at >= before.finished_at
    # a re-sent ack (the first one's reply was lost) changes nothing more
    assert await store.complete(w, [succeeded(c, '"again"')]) == 0
    assert (await store.get_job(c.id)).result == {"ok": 1}


async def test_late_success_of_a_requeued_unclaimed_run_is_recorded_and_not_run_again(store):
    w, c = await lost_run(store, idempotent=True)
    assert (await store.get_job(c.id)).state == "queued"
    assert await store.complete(w, [succeeded(c)]) == 1
    job = await store.get_job(c.id)
    assert (job.state, job.late, job.worker_id, job.attempts) == ("succeeded", True, w, 1)
    assert (await store.claim(uuid7(), ["default"], 10, LEASE)).jobs == []


@pytest.mark.parametrize("kind", [OutcomeKind.RETRY, OutcomeKind.DEAD])
async def test_late_failure_is_recorded_as_the_failure(store, kind):
    w, c = await lost_run(store, idempotent=False)
    outcome = Outcome(c.id, c.attempt, kind, error="ValueError: boom", dead_reason=None)
    assert await store.complete(w, [outcome]) == 1
    job = await store.get_job(c.id)
    expected = ("queued", None) if kind == OutcomeKind.RETRY else ("dead", "failed")
    assert (job.state, job.dead_reason, job.late) == (*expected, True)
    assert job.last_error == "ValueError: boom"


async def test_a_normal_outcome_is_not_late(store):
    w = uuid7()
    await store.enqueue([spec()])
    (c,) = await store.claim(w, ["default"], 1, LEASE)
    assert await store.complete(w, [succeeded(c)]) == 1
    assert (await store.get_job(c.id)).late is False


async def test_a_late_job_runs_again_without_the_late_mark(store):
    w, c = await lost_run(store, idempotent=False)
    assert await store.complete(w, [Outcome(c.id, c.attempt, OutcomeKind.RETRY, error="e")]) == 1
    assert (await store.get_job(c.id)).late is True
    (again,) = await store.claim(w, ["default"], 1, LEASE)
    assert again.attempt == 2
    assert await store.complete(w, [succeeded(again)]) == 1
    assert (await store.get_job(c.id)).late is False


# -- every other late write stays a no-op --------------------------------------------
async def test_late_outcome_after_the_job_ran_again_is_a_no_op(store):
    w, c = await lost_run(store, idempotent=True)
    other = uuid7()
    (again,) = await store.claim(other, ["default"], 1, LEASE)
    assert await store.complete(w, [succeeded(c)]) == 0
    job = await store.get_job(c.id)
    assert (job.state, job.worker_id, job.attempts, job.late) == ("running", other, 2, False)
    # claimed and given back (never started): still not that run's verdict
    assert await store.give_back(other, [(again.id, again.attempt)]) == 1
    assert (await store.get_job(c.id)).attempts == 1
    assert await store.complete(w, [succeeded(c)]) == 0
    assert (await store.get_job(c.id)).state == "queued"


async def test_late_outcome_from_another_worker_or_attempt_is_a_no_op(store):
    w, c = await lost_run(store, idempotent=False)
    assert await store.complete(uuid7(), [succeeded(c)]) == 0
    wrong = Outcome(c.id, c.attempt + 1, OutcomeKind.SUCCEEDED, result_json="1")
    assert await store.complete(w, [wrong]) == 0
    assert (await store.get_job(c.id)).state == "dead"


async def test_a_late_crash_or_give_back_is_a_no_op(store):
    w, c = await lost_run(store, idempotent=False)
    crashed = Outcome(c.id, c.attempt, OutcomeKind.CRASHED, error="runner died")
    assert await store.complete(w, [crashed]) == 0
    assert await store.give_back(w, [(c.id, c.attempt)]) == 0
    job = await store.get_job(c.id)
    assert (job.state, job.dead_reason, job.crash_count) == ("dead", "crashed", 1)


async def test_late_outcome_after_an_operator_retry_or_cancel_is_a_no_op(store):
    w, cancelled = await lost_run(store, idempotent=True)
    assert await store.cancel_jobs([cancelled.id]) == [cancelled.id]
    assert await store.complete(w, [succeeded(cancelled)]) == 0
    assert (await store.get_job(cancelled.id)).state == "cancelled"

    w2, retried = await lost_run(store, idempotent=False)
    assert await store.retry_jobs([retried.id]) == [retried.id]
    assert await store.complete(w2, [succeeded(retried)]) == 0
    assert (await store.get_job(retried.id)).state == "queued"


async def test_late_success_of_a_normally_finished_run_is_a_no_op(store):
    w = uuid7()
    await store.enqueue([spec()])
    (c,) = await store.claim(w, ["default"], 1, LEASE)
    fail = Outcome(c.id, c.attempt, OutcomeKind.DEAD, error="ValueError")
    assert await store.complete(w, [fail]) == 1
    assert await store.complete(w, [succeeded(c)]) == 0
    assert (await store.get_job(c.id)).state == "dead"
