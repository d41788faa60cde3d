"""How many jobs the fetcher may hold (no store needed)."""

from __future__ import annotations

from taskq.worker.buffer import FAST_JOB, JobBuffer
from tests.helpers import claimed_job as job


def test_strict_buffer_claims_only_for_free_consumers():
    buffer = JobBuffer(4, prefetch=0)
    assert buffer.free == 4
    buffer.put_many([job() for _ in range(4)])
    assert buffer.free == 0
    buffer.done(0.0001)
    assert buffer.free == 1  # fast jobs do not change a fixed prefetch


def test_the_default_is_strict_whatever_the_job_durations():
    buffer = JobBuffer(4)
    buffer.put_many([job() for _ in range(4)])
    for _ in range(4):
        buffer.done(FAST_JOB / 10)
    assert buffer.limit == 4 and buffer.free == 4


def test_adaptive_prefetch_opens_only_while_jobs_are_fast():
    buffer = JobBuffer(4, prefetch=None)
    assert buffer.limit == 4  # nothing known yet: strict
    buffer.put_many([job() for _ in range(4)])
    for _ in range(4):
        buffer.done(FAST_JOB / 10)
    assert buffer.limit == 8 and buffer.free == 8
    buffer.put_many([job() for _ in range(8)])
    for _ in range(8):
        buffer.done(1.0)  # slow jobs: back to claiming only for free consumers
    assert buffer.limit == 4


def test_drain_takes_the_unstarted_jobs_and_frees_their_slots():
    buffer = JobBuffer(2, prefetch=2)
    jobs = [job() for _ in range(4)]
    buffer.put_many(jobs)
    assert buffer.free == 0
    assert buffer.drain() == jobs
    assert buffer.free == 4 and buffer.in_flight == 0
