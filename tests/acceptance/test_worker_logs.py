"""What a user sees of their actors in the worker's log: their own records, with the job
attached, and one line per failed attempt. Real ``taskq worker`` processes, both stores."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from taskq import AsyncClient
from tests.support import log_actors
from tests.support.helpers import wait_until
from tests.support.worker_harness import ROOT, WorkerProcess, wait_for_states

pytestmark = pytest.mark.slow

ACTORS = ("--actors", "tests.support.log_actors:registry", "--queues", "logs", "--cpu-workers", "1")


@pytest.fixture
def spawn(target, tmp_path: Path):
    started: list[WorkerProcess] = []

    def start(*args: str) -> WorkerProcess:
        worker = WorkerProcess(target, *args, log_path=tmp_path / f"worker{len(started)}.log")
        started.append(worker)
        return worker

    yield start
    for worker in started:
        worker.stop()


async def test_actor_log_records_come_out_with_the_job_attached(store, spawn):
    worker = spawn(*ACTORS)
    worker.wait_for_event("worker-started")
    async with AsyncClient(store=store) as client:
        ids = {
            "async": await client.enqueue(log_actors.say_async, "hello-a"),
            "sync": await client.enqueue(log_actors.say_sync, "hello-s"),
            "cpu": await client.enqueue(log_actors.say_cpu, "hello-c"),
        }
    await wait_for_states(store, list(ids.values()), {"succeeded"})

    def said(kind: str) -> list[dict]:
        return [e for e in worker.logs() if e.get("event") == f"{kind} actor says hello-{kind[0]}"]

    for kind, job_id in ids.items():
        (line,) = wait_until(lambda kind=kind: said(kind), what=f"the {kind} actor's line")
        assert line["level"] == "info" and line["logger"] == "myapp.jobs"
        assert line["job"] == str(job_id)
        assert line["actor"] == f"say_{kind}"
        assert line["attempt"] == 1 and line["queue"] == "logs"
    assert not [e for e in worker.logs() if "too quiet" in e.get("event", "")]
    worker.signal(2)
    assert worker.wait() == 0


async def test_each_failed_attempt_is_one_line_with_its_delay(store, spawn):
    worker = spawn(*ACTORS)
    worker.wait_for_event("worker-started")
    async with AsyncClient(store=store) as client:
        job_id = await client.enqueue(log_actors.always_fails)
    await wait_for_states(store, [job_id], {"dead"})
    retries = wait_until(
        lambda: (
            len(worker.events("job-retry-scheduled")) == 2 and worker.events("job-retry-scheduled")
        ),
        what="two retry lines",
    )
    assert [r["attempt"] for r in retries] == [1, 2]
    for line in retries:
        assert line["job"] == str(job_id) and line["actor"] == "always_fails"
        assert line["max_attempts"] == 3 and line["delay"] >= 0
        assert line["error"] == "ValueError: always fails"
    (dead,) = wait_until(lambda: worker.events("job-dead"))
    assert dead["attempt"] == 3
    worker.signal(2)
    assert worker.wait() == 0


@pytest.mark.parametrize(
    ("name", "value", "says"),
    [
        ("TASKQ_LOG_LEVEL", "verbose", "is not a log level"),
        ("TASKQ_LOG_FORMAT", "xml", "is not a log format"),
    ],
)
def test_a_bad_log_setting_is_one_clear_line(
    sqlite_target, tmp_path: Path, name: str, value: str, says: str
) -> None:
    env = {**sqlite_target.env, "PYTHONPATH": str(ROOT), name: value}
    for args in (["jobs", "stats"], ["worker", "--actors", "tests.support.log_actors:registry"]):
        done = subprocess.run(
            [sys.executable, "-m", "taskq", *args],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode != 0
        lines = done.stderr.splitlines()
        assert len(lines) == 1, done.stderr
        assert lines[0].startswith(f"taskq: {name}={value!r} {says}")
