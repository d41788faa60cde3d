"""The task supervisor inside a worker: consumer deaths are loud, repaired and bounded.

The tests named ``test_verify_*`` are the "Verify" lines of seed 000 (task supervisor).
"""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest

from taskq import AsyncClient, metrics
from taskq.exceptions import CrashLoop
from taskq.restart import RestartPolicy
from taskq.worker.supervisor import TaskSupervisor
from tests.support import worker_actors as actors
from tests.support.helpers import async_wait_until
from tests.support.worker_harness import http_get, metric_value, running_worker, wait_for_states
from tests.support.worker_logs import captured_logs


def restarts_total() -> float:
    return metrics.WORKER.get_sample_value("taskq_pool_worker_restarts_total") or 0.0


async def test_verify_raise_inside_a_worker_error_is_logged_immediately(target, store, runs_file):
    """Seed 000 step 1: a consumer that raises is reported at once, with its exception;
    the job it held is given back uncharged and runs."""
    with captured_logs() as logs:
        async with AsyncClient(store=store) as client:
            job_id = await client.enqueue(actors.consumer_fault_once, "f")
            async with running_worker(
                target, middleware=[actors.FaultMiddleware()], queues=("faulty",)
            ) as worker:
                died = await async_wait_until(
                    lambda: _async(logs.events("worker died")), what="a 'worker died' line"
                )
                assert worker.supervisor is not None  # still running: not at GC time
                (job,) = await wait_for_states(store, [job_id], {"succeeded"})
    assert "ConsumerFault" in died[0]["error"]
    assert died[0]["level"] == "error"
    assert job.attempts == 1  # the fault was the consumer's, not the job's: not charged
    assert actors.runs(runs_file) == ["f"]


async def test_verify_cancelled_worker_is_replaced_and_restart_counter_increments(target, store):
    """Seed 000 step 2: kill a consumer with task.cancel() from outside; a replacement
    appears (first restart delay at most 0.1 s) and the restart counter goes up."""
    with captured_logs() as logs:
        async with running_worker(target, max_concurrency=3) as worker:
            sup = worker.supervisor
            before = restarts_total()
            victim = next(iter(sup.members))
            victim.cancel()
            await async_wait_until(
                lambda: _async(sup.restarts == 1 and sup.alive == 3),
                what="the replacement consumer",
            )
            assert victim not in sup.members
    (scheduled,) = logs.events("consumer-restart-scheduled")
    assert scheduled["delay"] <= 0.1
    assert restarts_total() == before + 1
    assert "cancelled from outside" in logs.events("worker died")[0]["error"]


class _Broken:
    """A consumer that fails the moment it starts."""

    def __init__(self, index: int) -> None:
        self.index = index
        self.busy = False

    async def run(self) -> None:
        raise RuntimeError("missing environment variable")


async def test_verify_broken_worker_backs_off_to_10s_then_crash_loop_guard_stops_it():
    """Seed 000 step 3: a consumer that raises immediately is restarted with delays that
    double to a 10 s ceiling, and the 11th death within 60 s trips the guard (critical
    line, no more restarts). A fake clock: no sleeping."""
    now = [0.0]
    delays: list[float] = []

    async def fake_sleep(delay: float) -> None:
        delays.append(delay)
        now[0] += delay
        await asyncio.sleep(0)

    policy = RestartPolicy(
        initial=0.1,
        factor=2.0,
        maximum=10.0,
        burst_limit=10,
        burst_window=60.0,
        clock=lambda: now[0],
        rng=lambda: 1.0,
    )
    sup = TaskSupervisor(1, lambda i, _ok: _Broken(i), policy=lambda: policy, sleep=fake_sleep)
    with captured_logs() as logs, pytest.raises(CrashLoop):
        await sup.start()
        await asyncio.wait_for(sup.run(), 10)
    assert delays[:5] == pytest.approx([0.1, 0.2, 0.4, 0.8, 1.6])
    assert max(delays) == 10.0  # bounded
    assert delays[-2:] == [10.0, 10.0]
    # 10 restarts (t = 0 .. 42.7 s on the fake clock); the 11th death within 60 s trips it
    assert len(delays) == 10
    assert len(logs.events("worker died")) == 11
    (critical,) = logs.events("crash-loop-guard-tripped")
    assert critical["level"] == "critical"
    assert sup.alive == 0


class _Healthy:
    """A consumer that runs until cancelled."""

    def __init__(self, index: int) -> None:
        self.index = index
        self.busy = False

    async def run(self) -> None:
        await asyncio.Event().wait()


def _frozen_clock_policy() -> RestartPolicy:
    """The production limits on a clock that never moves: every death is in the window."""
    return RestartPolicy(clock=lambda: 0.0, rng=lambda: 1.0)


async def _no_sleep(delay: float) -> None:
    await asyncio.sleep(0)


async def test_one_crash_looping_consumer_gives_up_alone_and_its_siblings_run_on():
    """One policy per consumer: a consumer that keeps dying gives up by itself (left
    down, logged); the crash-loop guard does not trip while others are alive."""
    sup = TaskSupervisor(
        3,
        lambda i, _ok: _Broken(i) if i == 0 else _Healthy(i),
        policy=_frozen_clock_policy,
        sleep=_no_sleep,
    )
    with captured_logs() as logs:
        await sup.start()
        run = asyncio.create_task(sup.run())
        await async_wait_until(lambda: _async(0 in sup.gave_up), what="consumer 0 to give up")
        assert not run.done()
        assert sup.alive == 2
        sup.stop()
        await asyncio.wait_for(run, 10)  # a clean stop: no CrashLoop
    (gave_up,) = logs.events("consumer-gave-up")
    assert gave_up["consumer"] == 0 and gave_up["level"] == "error"
    assert len(logs.events("worker died")) == 11
    assert logs.events("crash-loop-guard-tripped") == []


async def test_the_crash_loop_guard_trips_when_every_consumer_gives_up():
    sup = TaskSupervisor(3, lambda i, _ok: _Broken(i), policy=_frozen_clock_policy, sleep=_no_sleep)
    with captured_logs() as logs, pytest.raises(CrashLoop):
        await sup.start()
        await asyncio.wait_for(sup.run(), 10)
    assert sorted(e["consumer"] for e in logs.events("consumer-gave-up")) == [0, 1, 2]
    assert len(logs.events("worker died")) == 33
    (critical,) = logs.events("crash-loop-guard-tripped")
    assert critical["level"] == "critical"
    assert sup.alive == 0


async def test_verify_always_raising_handler_is_dead_lettered_after_three_attempts(
    target, store, runs_file
):
    """Seed 000 step 4: the item lands in the dead-letter state after three attempts and
    the queue still drains (nothing left queued or running)."""

    def dead_lettered() -> float:
        return (
            metrics.WORKER.get_sample_value(
                "taskq_pool_items_dead_lettered_total",
                {"queue": "default", "actor": "always_fails", "reason": "failed"},
            )
            or 0.0
        )

    before = dead_lettered()
    async with AsyncClient(store=store) as client:
        ids = await client.enqueue_many(actors.always_fails, [((f"a{i}",), {}) for i in range(5)])
        async with running_worker(target):
            jobs = await wait_for_states(store, ids, {"dead"})
    assert all(j.attempts == 3 and j.dead_reason == "failed" for j in jobs)
    assert Counter(actors.runs(runs_file)) == {f"a{i}": 3 for i in range(5)}
    stats = await store.stats()
    assert stats["queued"] == stats["running"] == 0
    assert dead_lettered() == before + 5


async def test_verify_killed_workers_move_both_signals_and_they_recover(target, store, tmp_path):
    """Seed 000 step 5 and "a killed worker is replaced": kill consumers deliberately; on
    /metrics the alive gauge dips below the configured size and recovers, the restart
    counter rises, and each death has a logged reason."""
    sock = str(tmp_path / "health.sock")

    def slow_restart() -> RestartPolicy:
        return RestartPolicy(initial=3.0, maximum=3.0, rng=lambda: 1.0)

    with captured_logs() as logs:
        async with running_worker(target, max_concurrency=4, health_socket_path=sock) as worker:
            sup = worker.supervisor
            _, text = await http_get("/metrics", socket_path=sock)
            assert metric_value(text, "taskq_pool_workers_alive") == 4
            assert metric_value(text, "taskq_pool_workers_configured") == 4
            before = metric_value(text, "taskq_pool_worker_restarts_total")
            for index in sup.policies:
                sup.policies[index] = slow_restart()
            for task in list(sup.members)[:2]:
                task.cancel()

            async def scraped(predicate):
                _, body = await http_get("/metrics", socket_path=sock)
                return predicate(body)

            await async_wait_until(
                lambda: scraped(lambda b: metric_value(b, "taskq_pool_workers_alive") == 2),
                what="the alive gauge to dip",
            )
            await async_wait_until(
                lambda: scraped(
                    lambda b: (
                        metric_value(b, "taskq_pool_workers_alive") == 4
                        and metric_value(b, "taskq_pool_worker_restarts_total") == before + 2
                    )
                ),
                what="the alive gauge to recover and restarts to count 2",
            )
    assert len(logs.events("worker died")) == 2
    assert all(e["error"] for e in logs.events("worker died"))


async def test_verify_no_work_is_lost_with_handlers_failing_randomly(target, store, runs_file):
    """Seed 000 verification: with handlers failing at random, the queue drains completely;
    every job is succeeded or dead/failed after its attempts, none twice succeeded."""
    keys = [f"r{i}" for i in range(120)]
    async with AsyncClient(store=store) as client:
        ids = await client.enqueue_many(actors.flaky, [((k,), {}) for k in keys])
        async with running_worker(target, max_concurrency=6):
            jobs = await wait_for_states(store, ids, {"succeeded", "dead"})
    runs = Counter(actors.runs(runs_file))
    for job in jobs:
        key = job.args[0]
        if job.state == "dead":
            assert job.dead_reason == "failed" and job.attempts == 2 and runs[key] == 2
        else:
            assert job.attempts == runs[key]
    assert set(runs) == set(keys)
    stats = await store.stats()
    assert stats["queued"] == stats["running"] == 0


async def test_loop_lag_warning_names_the_blocking_actor(target, store):
    with captured_logs() as logs:
        async with AsyncClient(store=store) as client:
            job_id = await client.enqueue(actors.blocks_the_loop, 1.6)
            async with running_worker(target):
                await wait_for_states(store, [job_id], {"succeeded"})
    (warning, *_) = logs.events("event-loop-blocked")
    assert warning["running_actors"] == ["blocks_the_loop"]
    assert warning["blocked_for"] > 1.0  # logged while the loop was still stuck


async def _async(value):
    return value
