"""Real ``taskq worker`` processes through a real PgBouncer in transaction mode (issue 19):
without a direct DSN they poll and say so once; with one they are woken; a direct DSN
to another database stops the start with one line; a graceful stop writes every ack."""

from __future__ import annotations

import secrets
import signal
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from taskq import AsyncClient, exit_codes
from taskq.settings import HEALTH_DSN_ENV
from tests.conftest import StoreTarget
from tests.support import worker_actors as actors
from tests.support.helpers import migrated_store
from tests.support.worker_harness import WorkerProcess, wait_for_states


@pytest.fixture
def pooled(pg_dsn: str, pgbouncer_dsn: str) -> Iterator[StoreTarget]:
    """A schema reached through the pooler, with no TASKQ_PG_DSN_DIRECT."""
    schema = f"taskq_t_{secrets.token_hex(6)}"
    yield StoreTarget("postgres", pgbouncer_dsn, schema)
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def spawn(target: StoreTarget, tmp_path: Path, *args: str, **env: str) -> WorkerProcess:
    full_env = {**target.env, "TASKQ_TEST_RUNS": str(tmp_path / "runs.log"), **env}
    return WorkerProcess(target, *args, env=full_env, log_path=tmp_path / "worker.log")


async def test_without_a_direct_dsn_the_worker_polls_says_so_once_and_stops_clean(
    pooled: StoreTarget, tmp_path: Path
) -> None:
    async with migrated_store(pooled.dsn, pooled.schema) as store:
        worker = spawn(pooled, tmp_path, "--poll-interval", "0.2", "--max-concurrency", "8")
        try:
            worker.wait_for_event("worker-started")
            async with AsyncClient(store=store) as client:
                ids = await client.enqueue_many(
                    actors.remember, [((f"p{i}",), {}) for i in range(200)]
                )
                jobs = await wait_for_states(store, ids, {"succeeded"}, timeout=60)
                more = await client.enqueue(actors.remember, "after-a-quiet-spell")
                await wait_for_states(store, [more], {"succeeded"}, timeout=30)
            worker.signal(signal.SIGTERM)
            assert worker.wait() == exit_codes.OK
        finally:
            worker.stop()
        (told,) = worker.events("listen-unavailable")
        assert told["level"] == "warning" and HEALTH_DSN_ENV in told["fix"]
        assert worker.events("acks-not-written") == []
        assert all(j.attempts == 1 for j in jobs)
        assert (await store.stats())["running"] == 0


async def test_a_direct_dsn_to_another_database_stops_the_start_with_one_line(
    pooled: StoreTarget, pg_dsn: str, tmp_path: Path
) -> None:
    other = pg_dsn.partition("?")[0].rsplit("/", 1)[0] + "/postgres"
    async with migrated_store(pooled.dsn, pooled.schema):
        worker = spawn(pooled, tmp_path, **{HEALTH_DSN_ENV: other})
        try:
            assert worker.wait() == exit_codes.CANNOT_START
        finally:
            worker.stop()
    lines = [
        line
        for line in (tmp_path / "worker.log").read_text().splitlines()
        if line.startswith("taskq: ")
    ]
    assert len(lines) == 1 and HEALTH_DSN_ENV in lines[0] and "'postgres'" in lines[0]
