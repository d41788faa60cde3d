"""The pool's circuit breaker, with an injected clock: open -> half-open -> closed.

The breaker's clock is fake (cooldowns pass when the test says so); the processes, their
deaths and the replacements are real.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from taskq.exceptions import BreakerOpen, JobCancelled, ProcessDied
from taskq.procpool import BreakerState, ProcessPool
from taskq.procpool.breaker import Admission, Breaker
from tests.support import procpool_actors
from tests.support.helpers import FakeClock
from tests.support.procpool_support import (
    assert_no_process_left,
    capture_taskq_logs,
    events,
    gauge,
    make_pool,
    running_pid,
    started,
    until,
)

THRESHOLD, WINDOW, COOLDOWN = 2, 60.0, 30.0
CPU_ACTORS = [actor.name for actor in procpool_actors.registry if actor.cpu_bound]


def breaker_pool(tmp_path: Path, clock: FakeClock, **options: object) -> ProcessPool:
    return make_pool(
        tmp_path,
        size=1,
        breaker_threshold=THRESHOLD,
        breaker_window=WINDOW,
        breaker_cooldown=COOLDOWN,
        clock=clock,
        **options,
    )


async def crash(pool: ProcessPool) -> ProcessDied:
    with pytest.raises(ProcessDied) as died:
        await pool.submit("fail_in_job", '["segfault"]', "{}")
    return died.value


# -- the state machine alone ----------------------------------------------------------


def test_more_than_threshold_breaks_in_the_window_open_it_not_one_before() -> None:
    clock = FakeClock(500.0)
    breaker = Breaker(threshold=3, window=10.0, cooldown=5.0, clock=clock)
    assert [breaker.record_break() for _ in range(3)] == [False, False, False]
    assert breaker.state is BreakerState.CLOSED
    assert breaker.record_break() is True
    assert breaker.state is BreakerState.OPEN and breaker.refusing


def test_breaks_older_than_the_window_do_not_count() -> None:
    clock = FakeClock(500.0)
    breaker = Breaker(threshold=1, window=10.0, cooldown=5.0, clock=clock)
    breaker.record_break()
    clock.advance(10.5)
    assert breaker.record_break() is False
    assert breaker.state is BreakerState.CLOSED


def test_half_open_admits_exactly_one_probe() -> None:
    clock = FakeClock(500.0)
    breaker = Breaker(threshold=0, window=10.0, cooldown=5.0, clock=clock)
    breaker.record_break()
    assert breaker.admit() is Admission.REFUSED
    clock.advance(5.0)
    assert breaker.state is BreakerState.HALF_OPEN and not breaker.refusing
    assert breaker.admit() is Admission.PROBE
    assert breaker.refusing
    assert [breaker.admit() for _ in range(3)] == [Admission.REFUSED] * 3
    breaker.probe_abandoned()  # no verdict: the next caller may probe
    assert breaker.admit() is Admission.PROBE
    breaker.probe_succeeded()
    assert breaker.state is BreakerState.CLOSED and breaker.admit() is Admission.RUN


def test_a_break_during_the_probe_reopens_for_a_fresh_cooldown() -> None:
    clock = FakeClock(500.0)
    breaker = Breaker(threshold=0, window=10.0, cooldown=5.0, clock=clock)
    breaker.record_break()
    clock.advance(6.0)
    assert breaker.admit() is Admission.PROBE
    assert breaker.record_break() is True
    assert breaker.state is BreakerState.OPEN
    clock.advance(4.9)
    assert breaker.state is BreakerState.OPEN
    clock.advance(0.1)
    assert breaker.state is BreakerState.HALF_OPEN


# -- the pool's breaker, real processes -----------------------------------------------


async def test_breaker_opens_then_half_opens_then_closes_on_a_good_probe(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    capture_taskq_logs(caplog)
    clock = FakeClock(500.0)
    gauge_before = gauge("taskq_process_pool_breaker_open")
    pool = breaker_pool(tmp_path, clock)
    running = await started(pool)
    try:
        for _ in range(THRESHOLD):
            await crash(pool)
        assert not pool.breaker_open and pool.paused_actors == []
        await crash(pool)  # threshold + 1 breaks within the window
        assert pool.breaker_open and pool.breaker_state is BreakerState.OPEN
        assert gauge("taskq_process_pool_breaker_open") == gauge_before + 1
        [opened] = events(caplog, "process-pool-breaker-open")
        assert opened["level"] == "CRITICAL" and opened["breaks"] == THRESHOLD + 1
        assert sorted(pool.paused_actors) == sorted(CPU_ACTORS)
        generation = pool.generation
        with pytest.raises(BreakerOpen):
            await pool.submit("add", "[1, 2]", "{}")
        assert pool.generation == generation  # nothing was started to refuse it

        clock.advance(COOLDOWN)
        assert pool.breaker_state is BreakerState.HALF_OPEN and not pool.breaker_open
        release = tmp_path / "release"
        probe = asyncio.create_task(
            pool.submit("hold", json.dumps([str(release)]), "{}", job_id="probe")
        )
        await running_pid(pool, "probe")
        assert pool.breaker_open  # the probe is out: everything else still waits
        with pytest.raises(BreakerOpen):
            await pool.submit("add", "[1, 2]", "{}")
        release.touch()
        await probe
        assert pool.breaker_state is BreakerState.CLOSED and not pool.breaker_open
        assert pool.paused_actors == []
        assert gauge("taskq_process_pool_breaker_open") == gauge_before
        assert await pool.submit("add", "[1, 2]", "{}") == "3"
    finally:
        await running.stop()
    assert_no_process_left()


async def test_a_failed_probe_reopens_the_breaker(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    capture_taskq_logs(caplog)
    clock = FakeClock(500.0)
    pool = breaker_pool(tmp_path, clock)
    running = await started(pool)
    try:
        for _ in range(THRESHOLD + 1):
            await crash(pool)
        assert pool.breaker_state is BreakerState.OPEN
        clock.advance(COOLDOWN)
        await crash(pool)  # the probe breaks
        assert pool.breaker_state is BreakerState.OPEN and pool.breaker_open
        assert len(events(caplog, "process-pool-breaker-open")) == 2
        clock.advance(COOLDOWN - 1)
        with pytest.raises(BreakerOpen):  # a fresh cooldown
            await pool.submit("add", "[1, 2]", "{}")
        clock.advance(1)
        assert await pool.submit("add", "[1, 2]", "{}") == "3"  # the next probe succeeds
        assert pool.breaker_state is BreakerState.CLOSED
    finally:
        await running.stop()


async def test_a_failing_initializer_trips_the_breaker_instead_of_spinning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    capture_taskq_logs(caplog)
    (tmp_path / "init-always-raise").touch()
    clock = FakeClock(500.0)
    pool = breaker_pool(tmp_path, clock)
    running = await started(pool)  # returns: it does not wait for a process that cannot start
    try:
        waiting = asyncio.create_task(pool.submit("add", "[1, 2]", "{}"))
        with pytest.raises(BreakerOpen):  # a job waiting for a process is given back
            await waiting
        assert pool.breaker_open and sorted(pool.paused_actors) == sorted(CPU_ACTORS)
        assert pool.generation == THRESHOLD + 1  # exactly one process per counted break
        failures = events(caplog, "process-pool-initializer-failed")
        assert len(failures) == THRESHOLD + 1
        for failure in failures:  # each one logged with its traceback
            assert failure["level"] == "ERROR"
            assert "RuntimeError: this initializer always fails" in failure["traceback"]
        await until(lambda: pool.processes_alive == 0, what="the last process to be reaped")

        # half-open: exactly one new process tries; it fails; open again
        clock.advance(COOLDOWN)
        await until(
            lambda: pool.breaker_state is BreakerState.OPEN and pool.generation == 4,
            what="the half-open attempt to fail",
        )
        assert len(events(caplog, "process-pool-breaker-open")) == 2
        # while open nothing else starts: observe the slot across several breaker re-checks
        for _ in range(12):
            await asyncio.sleep(0.05)
            assert pool.generation == 4 and pool.processes_alive == 0

        # the cause is fixed; the next half-open start succeeds and a probe closes it
        (tmp_path / "init-always-raise").unlink()
        clock.advance(COOLDOWN)
        assert await pool.submit("add", "[1, 2]", "{}") == "3"
        assert pool.breaker_state is BreakerState.CLOSED
    finally:
        await running.stop()
    assert_no_process_left()


async def test_a_cancelled_probe_leaves_the_breaker_half_open_for_the_next_probe(
    tmp_path: Path,
) -> None:
    """A cancel is no verdict on the pool: the probe is abandoned, not failed."""
    clock = FakeClock(500.0)
    pool = breaker_pool(tmp_path, clock)
    running = await started(pool)
    try:
        for _ in range(THRESHOLD + 1):
            await crash(pool)
        assert pool.breaker_state is BreakerState.OPEN
        clock.advance(COOLDOWN)
        probe = asyncio.create_task(
            pool.submit("hold", json.dumps([str(tmp_path / "never")]), "{}", job_id="probe")
        )
        await running_pid(pool, "probe")
        assert pool.breaker_open  # the probe is out
        assert await pool.cancel("probe") is True
        with pytest.raises(JobCancelled):
            await probe
        assert pool.breaker_state is BreakerState.HALF_OPEN and not pool.breaker_open
        assert await pool.submit("add", "[1, 2]", "{}") == "3"  # the next probe closes it
        assert pool.breaker_state is BreakerState.CLOSED
    finally:
        await running.stop()
    assert_no_process_left()
