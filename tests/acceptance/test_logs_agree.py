"""What is logged is what is stored (issue 20 item 6), with real worker processes.

Five jobs fail (dead at their first failure) while the test keeps the store from taking
their outcomes (a held SQLite write lock; row locks on Postgres), then the worker dies:
a sync actor calls ``os._exit``, or the test SIGKILLs it. A second worker's sweeper then
applies the crash rules to what the first left running. Every verdict either worker
logged about a job (``job-dead``, ``job-retry-scheduled``, ``job-rescued``) must be what
the store holds for it, and every job must have one: a worker that logged ``job-dead
reason=failed`` for an outcome it never wrote (the store then says ``dead/crashed``)
fails this test.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from taskq import AsyncClient
from tests.support import agreement_actors as actors
from tests.support.helpers import wait_until
from tests.support.worker_actors import runs
from tests.support.worker_harness import WorkerProcess, wait_for_states

pytestmark = pytest.mark.slow

ACTORS = "tests.support.agreement_actors:registry"
VERDICTS = ("job-dead", "job-retry-scheduled", "job-rescued")


@contextlib.contextmanager
def writes_blocked(target, job_ids: list[str], application_name: str) -> Iterator[None]:
    """No outcome of these jobs can be written while the block lasts. On Postgres, the
    dead worker's backends (still waiting on the row locks) are ended before the locks
    go, as the server would once it noticed the client gone."""
    if target.kind == "sqlite":
        conn = sqlite3.connect(target.dsn.removeprefix("sqlite:///"), isolation_level=None)
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        finally:
            conn.rollback()
            conn.close()
        return
    with psycopg.connect(target.dsn) as conn:
        conn.execute("SELECT set_config('search_path', %s, true)", (target.schema,))
        conn.execute("SELECT id FROM jobs WHERE id = ANY(%s::uuid[]) FOR UPDATE", (job_ids,))
        try:
            yield
        finally:
            with psycopg.connect(target.dsn, autocommit=True) as admin:

                def ended() -> bool:  # each backend is gone, not only told to go
                    admin.execute(
                        "SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity"
                        " WHERE application_name = %s",
                        (application_name,),
                    )
                    row = admin.execute(
                        "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s",
                        (application_name,),
                    ).fetchone()
                    return row is not None and row[0] == 0

                wait_until(ended, what="the dead worker's backends to end")
            conn.rollback()


def verdicts(workers: list[WorkerProcess]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for worker in workers:
        for line in worker.logs():
            if line.get("event") in VERDICTS:
                out.setdefault(line["job"], []).append(line)
    return out


def says(line: dict[str, Any]) -> tuple[str, str | None]:
    """The (state, dead_reason) a verdict line claims for its job."""
    if line["event"] == "job-dead":
        return "dead", line["reason"]
    if line["event"] == "job-retry-scheduled":
        return "queued", None
    return line["state"], line["dead_reason"]


@pytest.mark.parametrize("death", ["os._exit", "SIGKILL"])
async def test_a_worker_dying_mid_batch_leaves_logs_and_store_agreeing(
    target, store, tmp_path: Path, death: str
):
    go, exit_gate = str(tmp_path / "go"), str(tmp_path / "exit")
    runs_file = tmp_path / "runs.log"
    app = f"taskq-agree-{secrets.token_hex(4)}"
    env = {**target.env, "TASKQ_TEST_RUNS": str(runs_file)}
    async with AsyncClient(store=store) as client:
        ids = await client.enqueue_many(actors.fail_after, [((go, f"k{i}"), {}) for i in range(5)])
        if death == "os._exit":
            ids.append(await client.enqueue(actors.exit_after, exit_gate))
    first_env = dict(env)
    if target.kind == "postgres":
        first_env["TASKQ_DSN"] = f"{target.dsn}?application_name={app}"
    first = WorkerProcess(
        target,
        "--actors",
        ACTORS,
        "--max-concurrency",
        "8",
        env=first_env,
        log_path=tmp_path / "first.log",
    )
    second: WorkerProcess | None = None
    try:
        await wait_for_states(store, ids, {"running"})
        with writes_blocked(target, [str(i) for i in ids], app):
            (tmp_path / "go").touch()
            wait_until(lambda: len(runs(runs_file, "done")) == 5, what="five failed bodies")
            if death == "os._exit":
                (tmp_path / "exit").touch()
            else:
                os.kill(first.pid, signal.SIGKILL)
            first.wait(30)
        second = WorkerProcess(target, "--actors", ACTORS, env=env, log_path=tmp_path / "2.log")
        jobs = await wait_for_states(store, ids, {"dead", "queued", "succeeded"}, timeout=60)
    finally:
        first.stop()
        if second is not None:
            second.stop()
    logged = verdicts([first, *([second] if second else [])])
    for job in jobs:
        claims = logged.get(str(job.id), [])
        assert claims, f"nothing logged about {job.id} ({job.state}/{job.dead_reason})"
        for line in claims:
            assert says(line) == (job.state, job.dead_reason), (line, job)
    # the five never-written failures: crashed in the store, and so in the logs
    assert {(j.state, j.dead_reason) for j in jobs} == {("dead", "crashed")}
