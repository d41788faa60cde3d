"""How many jobs the fetcher may hold (no store needed)."""

from __future__ import annotations

import asyncio

from taskq.worker.buffer import (
    CLAIM_AHEAD,
    FAST_JOB,
    ClaimPace,
    CpuShare,
    JobBuffer,
    cpu_refill,
)
from tests.support.helpers import claimed_job as job


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


def test_the_cpu_share_counts_cpu_jobs_in_and_out_and_nudges_at_its_low_mark():
    """Two pool processes, ten consumers: at most six cpu jobs (3 a process); above two
    (one running a process) claims leave the cpu actors out; falling to two nudges the
    fetcher. Jobs of other actors do not count; given-back jobs leave the share too."""
    nudges: list[int] = []
    share = CpuShare(frozenset({"burn"}), processes=2, consumers=10)
    share.on_room = lambda: nudges.append(share.in_flight)
    buffer = JobBuffer(10, cpu=share)
    cpu = [job(actor="burn") for _ in range(6)]
    other = [job(actor="ping") for _ in range(2)]
    assert share.room(10) == 6 and not share.full
    buffer.put_many([*cpu, *other])
    assert share.in_flight == 6 and share.full and share.room(2) == 0
    buffer.done(0.01, other[0])
    assert share.in_flight == 6 and nudges == []
    for finished in cpu[:3]:
        buffer.done(0.01, finished)
    assert share.full and nudges == []  # three: still above the low mark
    buffer.done(0.01, cpu[3])
    assert not share.full and nudges == [2] and share.room(10) == 4

    unstarted = CpuShare(frozenset({"burn"}), processes=2, consumers=10)
    buffer = JobBuffer(10, cpu=unstarted)
    claimed = [job(actor="burn"), job(actor="ping"), job(actor="burn")]
    buffer.put_many(claimed)
    assert unstarted.in_flight == 2
    assert buffer.drain() == claimed  # a stopping fetcher gives them back: they leave too
    assert unstarted.in_flight == 0


def test_the_cpu_share_never_takes_more_than_about_half_the_consumers():
    share = CpuShare(frozenset({"burn"}), processes=8, consumers=10)
    assert share.high == 6 and share.low == 5
    assert CpuShare(frozenset({"burn"}), processes=2, consumers=10).low == 2
    assert CpuShare(frozenset({"burn"}), processes=1, consumers=1).high == 1


async def test_a_worker_of_cpu_actors_only_claims_again_at_its_refill_mark():
    """Two pool processes, ten consumers: no claim while more than four are in hand (two
    running, two piped), then one for the six free consumers."""
    refill_at = cpu_refill(processes=2, limit=10)
    assert refill_at == 4
    buffer = JobBuffer(10, refill_at=refill_at)
    assert buffer.may_claim  # nothing in hand: claim
    buffer.put_many([job(actor="burn") for _ in range(10)])
    for left in range(9, 4, -1):
        buffer.done(0.002)
        assert buffer.in_flight == left and buffer.free > 0 and not buffer.may_claim
    room = asyncio.ensure_future(buffer.wait_for_room())
    await asyncio.sleep(0)
    assert not room.done()
    buffer.done(0.002)
    await asyncio.wait_for(room, 5)  # down to four: the fetcher is woken, for six
    assert buffer.may_claim and buffer.free == 6


def test_cpu_refill_only_where_batches_would_be_of_more_than_one():
    assert cpu_refill(processes=1, limit=10) == 2
    assert cpu_refill(processes=5, limit=10) is None  # 10 would leave none free
    assert cpu_refill(processes=4, limit=9) is None  # batches of one
    assert cpu_refill(processes=4, limit=10) == 8  # of two


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_paced_claim_takes_what_the_pool_finished_in_claim_ahead_within_its_bounds():
    """Until a pace is known the batch is ``low``; then the jobs finished per second since
    the last claim, times CLAIM_AHEAD, never below ``low`` nor above ``high``."""
    clock = _Clock()
    pace = ClaimPace(6, 12, clock)
    assert pace.claiming(0) == 6  # first claim: no pace yet
    clock.now += 0.010
    assert pace.claiming(9) == 12  # 900 jobs/s: 18 in CLAIM_AHEAD, capped at 12
    clock.now += 0.020
    assert pace.claiming(9 + 10) == round(10 / 0.020 * CLAIM_AHEAD) == 10  # 500 jobs/s
    clock.now += 1.0
    assert pace.claiming(19 + 6) == 6  # 6 jobs/s (long jobs): the floor
    clock.now += 5.0
    assert pace.claiming(25) == 6  # none finished (a wait for jobs): unchanged


def test_a_pace_for_a_pool_claims_at_least_its_classic_batch():
    assert (ClaimPace.for_pool(2, 16, 4).low, ClaimPace.for_pool(2, 16, 4).high) == (6, 12)
    assert ClaimPace.for_pool(32, 98, 64).low == ClaimPace.for_pool(32, 98, 64).high == 34
    assert ClaimPace.for_pool(2, 8, 4).low == 4  # never more than the consumers free


def test_a_paced_worker_claims_more_for_short_jobs_and_the_classic_batch_for_long_ones():
    """Two processes, sixteen consumers, refill at four: the first claim takes six (as a
    worker of ten consumers did); at 600 short jobs a second, twelve; at 50 long jobs a
    second, six again, so it does not hold long jobs an idle worker could run."""
    clock = _Clock()
    buffer = JobBuffer(16, refill_at=4, pace=ClaimPace(6, 12, clock))
    assert buffer.claim_size() == 4 + 6
    buffer.put_many([job(actor="burn") for _ in range(10)])
    for _ in range(6):
        buffer.done(0.002)
    assert buffer.may_claim and buffer.in_flight == 4
    clock.now += 6 / 600
    assert buffer.claim_size() == 12
    buffer.put_many([job(actor="burn") for _ in range(12)])
    assert buffer.in_flight == 16 and not buffer.may_claim
    for _ in range(12):
        buffer.done(0.1)
    clock.now += 12 / 50
    assert buffer.claim_size() == 6
    assert buffer.limit == 10


def test_without_a_pace_a_refill_worker_claims_every_free_consumer():
    """An explicit --max-concurrency: no pace, the claim fills the consumers as before."""
    buffer = JobBuffer(16, refill_at=4)
    assert buffer.claim_size() == 16
