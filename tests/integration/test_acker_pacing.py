"""Paced acknowledgement batches (worker/acker.py): while outcomes of idempotent jobs come
fast enough, a batch waits (at most ``MAX_LINGER``) to gather ``PACED_BATCH`` of them; an
outcome of a job that must never run twice is written after the base linger. On both
stores, with the outcomes really written."""

from __future__ import annotations

import pytest

from taskq.ids import uuid7
from taskq.worker import outcomes
from taskq.worker.acker import LINGER, MAX_LINGER, PACED_BATCH, Acker
from tests.support.conformance_kit import claim_all
from tests.support.helpers import FakeClock
from tests.support.storekit import spec
from tests.support.worker_harness import run_acker


async def write_all(acker: Acker, store, jobs, *, idempotent: bool) -> None:
    """Hand ``jobs``' successes to the acker and let it write them."""
    for job in jobs:
        acker.add(outcomes.succeeded(job, None, 1000), idempotent=idempotent)

    async def written() -> bool:
        return {(await store.get_job(job.id)).state for job in jobs} == {"succeeded"}

    await run_acker(acker, written)


async def test_a_batch_waits_for_company_only_while_outcomes_come_fast(store):
    worker = uuid7()
    await store.enqueue([spec(idempotent=True) for _ in range(3)])
    jobs = await claim_all(store, worker)
    acker = Acker(store, worker)
    assert acker.linger_now() == LINGER  # no pace measured yet
    acker.add(outcomes.succeeded(jobs[0], None, 1000), idempotent=True)

    acker.pace = 1000.0  # outcomes a second: the other 7 come in 7 ms
    assert acker.linger_now() == pytest.approx((PACED_BATCH - 1) / 1000.0)
    acker.pace = 100.0  # 70 ms to gather them: longer than MAX_LINGER, not worth it
    assert (PACED_BATCH - 1) / 100.0 > MAX_LINGER
    assert acker.linger_now() == LINGER
    acker.pace = 1_000_000.0  # they come faster than the base linger gathers them anyway
    assert acker.linger_now() == LINGER

    acker.pace = 1000.0
    acker.add(outcomes.succeeded(jobs[1], None, 1000), idempotent=False)
    assert acker.linger_now() == LINGER  # a job that must not run twice: written at once


async def test_a_non_idempotent_outcome_stops_the_wait_until_its_batch_is_written(store):
    worker = uuid7()
    await store.enqueue([spec(idempotent=False), spec(idempotent=True)])
    once_only, retry_safe = sorted(await claim_all(store, worker), key=lambda j: j.idempotent)
    acker = Acker(store, worker)
    acker.pace = 1000.0
    await write_all(acker, store, [once_only], idempotent=False)
    acker.add(outcomes.succeeded(retry_safe, None, 1000), idempotent=True)
    assert acker.linger_now() > LINGER  # the once-only one went out: pacing again


async def test_the_pace_is_measured_from_the_batches_written(store):
    worker = uuid7()
    await store.enqueue([spec(idempotent=True) for _ in range(30)])
    jobs = await claim_all(store, worker)
    clock = FakeClock(100.0)
    acker = Acker(store, worker, clock=clock)
    await write_all(acker, store, jobs[:10], idempotent=True)
    assert acker.pace == 0.0  # the first batch only starts the measure

    clock.advance(0.010)  # 20 outcomes in 10 ms
    await write_all(acker, store, jobs[10:], idempotent=True)
    assert acker.pace == pytest.approx(2000.0)


async def test_an_outcome_no_other_job_can_join_is_written_at_once(store):
    worker = uuid7()
    await store.enqueue([spec(idempotent=True) for _ in range(3)])
    first, second, third = await claim_all(store, worker)
    holding = [second]  # the worker's jobs that may still end (its buffer's in_flight)
    acker = Acker(store, worker, linger=3600.0, in_flight=lambda: len(holding))
    acker.add(outcomes.succeeded(first, None, 1000), idempotent=True)
    assert acker.linger_now() == 3600.0  # another job runs: the batch waits for it

    holding.clear()  # nothing left that could end within a linger
    assert acker.linger_now() == 0.0
    # written with no wait (an hour's base linger would outlast the test's deadline)
    await write_all(acker, store, [third], idempotent=False)
    assert (await store.get_job(first.id)).state == "succeeded"
