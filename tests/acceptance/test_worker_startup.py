"""What a worker start loads before its first job: the modules only some workers need
(or no worker at all) stay unloaded. Behaviour, not time: the start-up time itself is
measured by ``benchmarks/startup.py``, never asserted."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from taskq import AsyncClient
from tests import startup_actors
from tests.helpers import wait_until
from tests.worker_harness import ROOT, WorkerProcess

pytestmark = pytest.mark.slow

#: never needed before a first job of this registry (all async, no schedules, no
#: cpu_bound actor, no health port, no tracing, no transactional enqueue)
NOT_AT_START = (
    "taskq.procpool",  # cpu_bound actors only
    "taskq.workgroup",
    "taskq.web",  # the dashboard
    "taskq.demo",
    "opentelemetry",  # tracing middleware only
)
#: a process on SQLite never loads the Postgres driver
POSTGRES_ONLY = ("psycopg", "psycopg_pool", "psycopg_binary")


def loaded(names: set[str], prefixes: tuple[str, ...]) -> list[str]:
    return sorted(n for n in names if any(n == p or n.startswith(p + ".") for p in prefixes))


def modules_at_first_job(target, tmp_path: Path) -> set[str]:
    """Start a real ``taskq worker`` with one job queued; the modules its body saw."""
    record = tmp_path / "modules.txt"

    async def enqueue() -> None:
        async with AsyncClient(target.dsn, schema=target.schema) as client:
            await client.store.migrate()
            await client.enqueue(startup_actors.loaded_modules)

    import asyncio

    asyncio.run(enqueue())
    env = {**target.env, "TASKQ_TEST_MODULES": str(record)}
    worker = WorkerProcess(
        target,
        "--actors",
        "tests.startup_actors:registry",
        env=env,
        log_path=tmp_path / "worker.log",
    )
    try:
        wait_until(record.exists, timeout=60, what="the first job to run")
    finally:
        worker.stop()
    return set(record.read_text().split())


def test_a_worker_start_loads_only_what_its_first_claim_needs(target, tmp_path: Path) -> None:
    names = modules_at_first_job(target, tmp_path)
    assert "taskq.worker.fetcher" in names  # it is the worker's start that was recorded
    assert loaded(names, NOT_AT_START) == []
    if target.kind == "sqlite":
        assert loaded(names, POSTGRES_ONLY) == []
    else:
        assert "psycopg" in names


def test_import_taskq_does_not_load_the_postgres_driver() -> None:
    code = "import sys, taskq; print('\\n'.join(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    assert loaded(set(out.split()), POSTGRES_ONLY + NOT_AT_START) == []
