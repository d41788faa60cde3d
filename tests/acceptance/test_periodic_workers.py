"""Periodic jobs in real worker processes: two ``taskq worker`` processes run the same
every-second schedule, one is SIGKILLed mid-way, and every tick from the first to the
last is enqueued exactly once -- none twice, none missed. Then ``taskq schedules``
lists the schedule with its next run."""

from __future__ import annotations

import asyncio
import itertools
import json
import signal
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from taskq.store import create_store
from tests.conftest import StoreTarget
from tests.support.helpers import wait_until
from tests.support.worker_harness import WorkerProcess

ACTORS = "tests.support.periodic_actors:registry"

pytestmark = pytest.mark.slow


def beat_ticks(target: StoreTarget) -> list[datetime]:
    """The tick of every job the schedule made (from its meta: a job rescued from the
    killed worker is re-queued with a new run_at)."""

    async def read() -> list[datetime]:
        store = create_store(target.dsn, target.schema)
        await store.open()
        try:
            jobs = await store.list_jobs(limit=10_000)
        finally:
            await store.close()
        return sorted(datetime.fromisoformat(j.meta["tick"]) for j in jobs if j.actor == "beat")

    return asyncio.run(read())


def taskq_cli(target: StoreTarget, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "taskq", *args],
        env=target.env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )


def test_two_workers_one_killed_every_tick_once(target: StoreTarget, tmp_path: Path) -> None:
    taskq_cli(target, "migrate")
    env = {**target.env, "TASKQ_TEST_RUNS": str(tmp_path / "runs.log")}
    workers = [
        WorkerProcess(target, "--actors", ACTORS, env=env, log_path=tmp_path / f"w{i}.log")
        for i in range(2)
    ]
    try:
        for w in workers:
            w.wait_for_event("scheduler-started")
        wait_until(lambda: len(beat_ticks(target)) >= 3, what="three ticks with both workers")
        workers[0].signal(signal.SIGKILL)
        assert workers[0].wait(10) == -signal.SIGKILL
        after_kill = len(beat_ticks(target))
        wait_until(
            lambda: len(beat_ticks(target)) >= after_kill + 4,
            what="four more ticks with one worker",
        )
        workers[1].signal(signal.SIGTERM)
        assert workers[1].wait(30) == 0
    finally:
        for w in workers:
            w.stop()

    ticks = beat_ticks(target)
    assert len(ticks) == len(set(ticks)), "a tick was enqueued twice"
    gaps = [b - a for a, b in itertools.pairwise(ticks)]
    assert all(g == timedelta(seconds=1) for g in gaps), f"a tick was missed: {ticks}"

    # whichever worker looked first at a tick enqueued it (the other found it enqueued
    # or already recorded): exactly one enqueue per tick made a job
    won: dict[str, int] = {}
    for w in workers:
        for event in w.events("periodic-enqueued"):
            if not event["duplicate"]:
                won[event["tick"]] = won.get(event["tick"], 0) + 1
    assert set(won.values()) == {1}, "two enqueues of one tick both made a job"
    unlogged = {t.isoformat() for t in ticks} - set(won)
    # the killed worker may have committed a tick's job and died before logging it
    assert len(unlogged) <= 1, unlogged
    assert set(won) <= {t.isoformat() for t in ticks}

    listed = json.loads(taskq_cli(target, "schedules", "--json").stdout)
    assert [(s["name"], s["actor"], s["cron"], s["timezone"]) for s in listed] == [
        ("beat", "beat", "* * * * * *", "UTC")
    ]
    assert datetime.fromisoformat(listed[0]["last_tick"]) == ticks[-1]
    assert datetime.fromisoformat(listed[0]["next_run"]) > ticks[-1]
    table = taskq_cli(target, "schedules").stdout
    assert "beat" in table and "* * * * * *" in table


def test_schedules_on_a_store_no_worker_recorded_any(target: StoreTarget) -> None:
    taskq_cli(target, "migrate")
    assert "no schedules recorded" in taskq_cli(target, "schedules").stdout
    assert json.loads(taskq_cli(target, "schedules", "--json").stdout) == []


def test_no_tick_is_enqueued_once_shutdown_began(target: StoreTarget, tmp_path: Path) -> None:
    """A worker held in its shutdown grace by a running job for three ticks of an
    every-second schedule enqueues none of them (they are owed to the next worker)."""
    taskq_cli(target, "migrate")
    runs, release = tmp_path / "runs.log", tmp_path / "release"
    env = {**target.env, "TASKQ_TEST_RUNS": str(runs)}
    worker = WorkerProcess(
        target,
        "--actors",
        ACTORS,
        "--queues",
        "periodic,held",
        "--shutdown-grace",
        "60",
        env=env,
        log_path=tmp_path / "w.log",
    )
    try:
        worker.wait_for_event("scheduler-started")
        taskq_cli(target, "enqueue", "hold", "--args", json.dumps([str(release)]))
        wait_until(lambda: runs.exists() and "hold start" in runs.read_text(), what="hold runs")
        wait_until(lambda: len(beat_ticks(target)) >= 2, what="two ticks before the stop")
        worker.signal(signal.SIGTERM)
        stopping = datetime.fromisoformat(worker.wait_for_event("worker-stopping")["timestamp"])
        # three ticks of the schedule fall in the shutdown grace
        wait_until(
            lambda: datetime.now(stopping.tzinfo) > stopping + timedelta(seconds=3.5),
            what="three ticks into the shutdown grace",
        )
        assert worker.proc.poll() is None  # still in its grace, held by the job
        release.touch()
        assert worker.wait(30) == 0
    finally:
        worker.stop()
    ticks = beat_ticks(target)
    assert len(ticks) >= 2 and all(t <= stopping for t in ticks), (stopping, ticks)
    logged = [datetime.fromisoformat(e["tick"]) for e in worker.events("periodic-enqueued")]
    assert logged and all(t <= stopping for t in logged)
