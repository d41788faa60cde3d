"""Readiness tells the truth (docs/operating.md, "Kubernetes probes"): real ``taskq worker``
and ``taskq workgroup start`` processes, held in their start by a gate file.

A worker's ``/ready`` is 503 until its consumers claim; a workgroup's is 503 while any
child is starting, in backoff or latched, and its body names the child and why, with no
password in it.
"""

from __future__ import annotations

import signal
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from taskq import AsyncClient, exit_codes
from tests.support.helpers import wait_until
from tests.support.readiness_actors import crunch
from tests.support.worker_harness import (
    WorkerProcess,
    http_get_sync,
    wait_for_states,
    worker_processes,
)
from tests.support.workgroup_harness import Workgroup, workgroup_processes, write_config

pytestmark = pytest.mark.slow

ACTORS = "tests.support.readiness_actors:registry"
STARTING = "starting: the consumers do not claim yet"


@pytest.fixture
def gate(tmp_path: Path) -> Path:
    return tmp_path / "gate"


@pytest.fixture
def spawn(target, gate: Path, tmp_path: Path) -> Iterator[Callable[..., WorkerProcess]]:
    env = {**target.env, "TASKQ_TEST_GATE": str(gate)}
    with worker_processes(target, tmp_path, "--actors", ACTORS, env=env) as start:
        yield start


async def test_a_worker_is_ready_only_once_its_consumers_claim(store, spawn, gate: Path):
    worker = spawn("--queues", "cpu", "--health-port", "0")
    port = worker.wait_for_event("health-server-started")["port"]
    # the pool's processes wait for the gate: the worker serves /live, not /ready
    assert http_get_sync("/ready", port=port) == (503, STARTING + "\n")
    assert http_get_sync("/live", port=port) == (200, "ok\n")
    assert not worker.events("worker-started")
    gate.touch()
    worker.wait_for_event("worker-started")
    assert http_get_sync("/ready", port=port) == (200, "ready\n")
    worker.signal(signal.SIGTERM)
    assert worker.wait() == exit_codes.OK


async def test_a_worker_starts_a_pool_only_for_the_queues_it_consumes(store, spawn, gate: Path):
    """Consuming only ``io`` (no cpu_bound actor there): no pool at start; a cpu_bound
    job enqueued onto ``io`` anyway starts it then, and runs."""
    gate.touch()
    worker = spawn("--queues", "io")
    worker.wait_for_event("worker-started")
    assert not worker.events("process-pool-started")
    async with AsyncClient(store=store) as client:
        job_id = await client.enqueue_with(crunch, (7,), {}, queue="io")
    (job,) = await wait_for_states(store, [job_id], {"succeeded", "dead"})
    assert job.state == "succeeded" and job.attempts == 1
    (started,) = worker.events("process-pool-started")
    assert started["late"] is True
    worker.signal(signal.SIGTERM)
    assert worker.wait() == exit_codes.OK


@pytest.fixture
def workgroups() -> Iterator[Callable[[Path, dict[str, str]], Workgroup]]:
    with workgroup_processes() as start:
        yield start


async def test_a_workgroup_is_ready_once_every_child_claims(
    target, store, gate: Path, tmp_path: Path, workgroups
):
    """Child ``cpu`` is held in its start by its pool; child ``io`` runs no pool. The
    workgroup's /ready names ``cpu`` until it claims, then answers 200."""
    config = write_config(
        tmp_path / "wg.toml",
        "[supervisor]\nhttp_port = 0\nshutdown_grace = 20\n"
        '[[workers]]\nname = "cpu"\nqueues = ["cpu"]\n'
        '[[workers]]\nname = "io"\nqueues = ["io"]\n',
        actors=ACTORS,
    )
    wg = workgroups(config, {**target.env, "TASKQ_TEST_GATE": str(gate)})
    wg.wait_event("worker-started", worker="io")

    def answer() -> tuple[int, str]:
        return wg.get("/ready")

    expected = (503, f"not ready: cpu: {STARTING}\n")
    assert wait_until(lambda: answer() == expected, what="/ready naming child cpu")
    assert wg.status()["ready"] is True  # the supervisor's own view: both processes run
    gate.touch()
    wait_until(lambda: answer() == (200, "ready\n"), what="/ready 200")
    wg.wait_event("worker-started", worker="cpu")
    assert len(wg.events("process-pool-started")) == 1
    assert wg.events("process-pool-started")[0]["worker"] == "cpu"
    assert wg.stop() == 0


def test_a_workgroup_child_in_backoff_is_not_ready_and_says_why_without_secrets(
    tmp_path: Path, workgroups
):
    """A child that cannot start: /ready 503 with its reason, the password masked."""
    config = write_config(
        tmp_path / "wg.toml",
        "[supervisor]\nhttp_port = 0\nbackoff_initial = 60\nbackoff_max = 60\n"
        '[[workers]]\nname = "api"\nqueues = ["io"]\n',
        actors=ACTORS,
    )
    dsn = "postgresql://taskq:hunter2@127.0.0.1:1/nowhere"
    wg = workgroups(config, {"TASKQ_DSN": dsn, "TASKQ_SCHEMA": "taskq"})

    # the child's pid changes with each restart: poll until an answer falls in a backoff
    def in_backoff() -> tuple[int, str] | None:
        answer = wg.get("/ready")
        return answer if "in backoff" in answer[1] else None

    code, body = wait_until(in_backoff, what="/ready during the child's backoff")
    assert code == 503
    assert body.startswith("not ready: api in backoff after it exited with code 1: cannot connect")
    assert "postgresql://taskq:***@127.0.0.1:1/nowhere" in body
    for text in (body, wg.get("/status")[1]):
        assert "hunter2" not in text
    assert wg.get("/live")[0] == 200
    assert wg.stop() == 0
