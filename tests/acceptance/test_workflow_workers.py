"""Workflows run by real ``taskq worker`` processes, killed with real signals, both stores.

The fan-in is decided in the statement that acks the last upstream step, so SIGKILLs
of the workers at any moment neither lose the fan-in step nor run it before its
upstream steps, nor (for a step that must not run twice) run it twice. Every run any
process makes is recorded (tests.support.workflow_actors) and checked against the store.
"""

from __future__ import annotations

import random
import signal
import time
from pathlib import Path
from typing import Any

import pytest

import taskq
from tests.support import workflow_actors as wa
from tests.support.helpers import wait_until
from tests.support.worker_harness import WorkerProcess

pytestmark = pytest.mark.slow

ACTORS = ("--actors", "tests.support.workflow_actors:registry", "--max-concurrency", "4")


def _env(target: Any, record: Path) -> dict[str, str]:
    env = target.env
    env["TASKQ_WF_RECORD"] = str(record)
    return env


def _lines(record: Path, wf_id: Any) -> list[dict[str, Any]]:
    return [r for r in wa.runs(record) if r["workflow"] == str(wf_id)]


def _kill_workers_until_done(
    target: Any, record: Path, tmp_path: Path, client: taskq.Client, wf_id: Any, seed: int
) -> tuple[taskq.WorkflowInfo, int]:
    """Two workers; every 0.4-1.2 s one is SIGKILLed and replaced, while the workflow
    runs (at most 12 kills), then they finish it. Returns its end and the kills."""
    rng = random.Random(seed)
    spawned = 0

    def spawn() -> WorkerProcess:
        nonlocal spawned
        spawned += 1
        return WorkerProcess(
            target, *ACTORS, env=_env(target, record), log_path=tmp_path / f"w{spawned}.log"
        )

    workers = [spawn(), spawn()]
    kills = 0
    try:
        while kills < 12 and client.workflow(wf_id).state == "running":
            time.sleep(rng.uniform(0.4, 1.2))
            victim = workers.pop(rng.randrange(len(workers)))
            victim.signal(signal.SIGKILL)
            victim.wait(10)
            kills += 1
            workers.append(spawn())
        info = client.wait_workflow(wf_id, timeout=120)
    finally:
        for w in workers:
            w.stop()
    return info, kills


def test_a_fan_in_under_sigkills_runs_after_every_upstream_step_and_is_never_lost(
    target, store, tmp_path: Path
) -> None:
    record = tmp_path / "record.log"
    wf = taskq.Workflow("chaos")
    group = [wf.add(wa.nap, f"g{i}", 0.3, name=f"g{i}") for i in range(24)]
    wf.add(wa.redo, "fan-in", seconds=0.2, after=group, name="fan-in")
    with taskq.Client(target.dsn, schema=target.schema) as client:
        wf_id = client.enqueue_workflow(wf)
        info, kills = _kill_workers_until_done(target, record, tmp_path, client, wf_id, 22)
        fan_in = client.get(info.step("fan-in").id)
    assert kills >= 1
    assert info.state == "succeeded", [
        (s.name, s.state, s.dead_reason, s.last_error) for s in info.steps if s.state != "succeeded"
    ]
    lines = _lines(record, wf_id)
    last_group_end = max(
        i for i, r in enumerate(lines) if r["step"] != "fan-in" and r["event"] == "end"
    )
    fan_in_starts = [
        i for i, r in enumerate(lines) if r["step"] == "fan-in" and r["event"] == "start"
    ]
    assert fan_in_starts, "the fan-in step never ran"
    assert min(fan_in_starts) > last_group_end, "the fan-in started before its upstream steps ended"
    # every extra run of the fan-in step is one a crash explains: it was made due once
    assert fan_in.attempts == fan_in.crash_count + 1
    assert len(fan_in_starts) <= fan_in.attempts


def test_steps_that_must_not_run_twice_under_sigkills(target, store, tmp_path: Path) -> None:
    """Non-idempotent steps killed mid-run end dead/crashed, never run again, and take
    the steps after them with them; whatever survives still runs in order."""
    record = tmp_path / "record.log"
    wf = taskq.Workflow("once")
    group = [wf.add(wa.work, f"g{i}", seconds=0.3, name=f"g{i}") for i in range(16)]
    wf.add(wa.work, "fan-in", after=group, name="fan-in")
    with taskq.Client(target.dsn, schema=target.schema) as client:
        wf_id = client.enqueue_workflow(wf)
        info, _ = _kill_workers_until_done(target, record, tmp_path, client, wf_id, 7)
    lines = _lines(record, wf_id)
    starts: dict[str, int] = {}
    for r in lines:
        if r["event"] == "start":
            starts[r["step"]] = starts.get(r["step"], 0) + 1
    assert all(n == 1 for n in starts.values()), starts
    states = {s.name: s for s in info.steps}
    crashed = [s for s in info.steps if s.state == "dead"]
    assert all(s.dead_reason == "crashed" for s in crashed)
    if crashed:
        assert states["fan-in"].state == "cancelled" and "fan-in" not in starts
        assert states["fan-in"].cancelled_by == "upstream_failed"
        assert info.state == "failed"
    else:
        assert states["fan-in"].state == "succeeded" and info.state == "succeeded"


def test_cancel_workflow_stops_a_running_step_and_nothing_after_it_runs(
    target, store, tmp_path: Path
) -> None:
    record = tmp_path / "record.log"
    wf = taskq.chain(taskq.step(wa.nap, "long", 60.0), taskq.step(wa.work, "after"))
    with taskq.Client(target.dsn, schema=target.schema) as client:
        wf_id = client.enqueue_workflow(wf)
        worker = WorkerProcess(
            target, *ACTORS, env=_env(target, record), log_path=tmp_path / "w.log"
        )
        try:
            wait_until(
                lambda: any(r["event"] == "start" for r in _lines(record, wf_id)),
                timeout=30,
                what="the first step to start",
            )
            assert client.cancel_workflow(wf_id, by="test") == 2
            info = client.wait_workflow(wf_id, timeout=30)
        finally:
            worker.signal(signal.SIGTERM)
            assert worker.wait(30) == 0
    assert info.state == "cancelled"
    assert [(s.name, s.state) for s in info.steps] == [("nap", "cancelled"), ("work", "cancelled")]
    assert [r["step"] for r in _lines(record, wf_id) if r["event"] == "start"] == ["nap"]
