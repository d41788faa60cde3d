"""What a worker start loads before its first job: the modules only some workers need
(or no worker at all) stay unloaded. Behaviour, not time: the start-up time itself is
measured by ``benchmarks/startup.py``, never asserted."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from taskq import AsyncClient
from tests.support import startup_actors
from tests.support.helpers import wait_until
from tests.support.worker_harness import ROOT, WorkerProcess

pytestmark = pytest.mark.slow

#: never needed before a first job of this registry (all async, no schedules, no
#: cpu_bound actor, no health port, no tracing middleware)
NOT_AT_START = (
    "taskq.procpool",  # cpu_bound actors only
    "taskq.worker.scheduler",  # periodic schedules only
    "taskq.periodic",
    "cronsim",
    "taskq.client",  # a worker never enqueues through a client (its scheduler does)
    "taskq.txn",
    "taskq.specs",
    "taskq.tracing",
    "taskq.workgroup",
    "taskq.web",  # the dashboard
    "taskq.demo",
    "opentelemetry",
    "prometheus_client",  # exposition only: loaded by the first /metrics request
)
#: a process on SQLite never loads the Postgres driver
POSTGRES_ONLY = ("psycopg", "psycopg_pool", "psycopg_binary")


#: modules under those prefixes that cost nothing: the pool package's lazy ``__init__`` and
#: its defaults (``WorkerConfig`` declares ``--cpu-*`` options with them)
FREE = {"taskq.procpool", "taskq.procpool.limits"}


def loaded(names: set[str], prefixes: tuple[str, ...]) -> list[str]:
    return sorted(n for n in names - FREE if any(n == p or n.startswith(p + ".") for p in prefixes))


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
        "tests.support.startup_actors:registry",
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


def loaded_by(code: str) -> set[str]:
    """The modules a fresh interpreter has loaded after running ``code``."""
    script = f"{code}\nimport sys\nprint('\\n'.join(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    return set(out.split())


def test_import_taskq_loads_neither_the_postgres_driver_nor_the_clients() -> None:
    assert loaded(loaded_by("import taskq"), POSTGRES_ONLY + NOT_AT_START) == []


def test_the_clients_load_on_first_use() -> None:
    names = loaded_by("import taskq\ntaskq.Client, taskq.AsyncClient")
    assert {"taskq.client", "taskq.txn"} <= names
    assert loaded(names, POSTGRES_ONLY) == []  # a client on SQLite does not need it


def test_a_registry_with_a_schedule_loads_cron_parsing() -> None:
    code = "import taskq\ndef tick(): pass\ntaskq.Registry().periodic('* * * * *')(tick)"
    assert {"taskq.periodic", "cronsim"} <= loaded_by(code)
