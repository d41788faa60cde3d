"""``--max-connections``: what one worker opens on Postgres stays within it, whatever it
is doing, and ``taskq workers`` shows it (issue 19 item 3)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys

import psycopg
import pytest

from taskq import AsyncClient
from taskq.exceptions import ConfigError
from taskq.worker import WorkerConfig
from tests.support import worker_actors as actors
from tests.support.helpers import async_wait_until, migrated_store
from tests.support.worker_harness import ROOT, running_worker, wait_for_states


def server_connections(dsn: str, name: str) -> int:
    """Connections pg_stat_activity shows under this application_name."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", (name,)
        ).fetchone()
        assert row is not None
        return int(row[0])


async def test_a_busy_worker_never_opens_more_than_its_budget(pg_target) -> None:
    """Claims, acks, heartbeats, LISTEN, cancels, rescues and prunes all at once: the
    server never sees more connections of this worker than --max-connections."""
    async with migrated_store(pg_target.dsn, pg_target.schema) as store:
        await _busy_within_budget(pg_target, store)


async def _busy_within_budget(pg_target, store) -> None:
    budget, label = 4, "budgeted"  # the least: heartbeat, claims, LISTEN, a pool of 1
    name = f"taskq worker {label}"
    seen: list[int] = []
    async with running_worker(
        pg_target,
        worker_label=label,
        max_connections=budget,
        max_concurrency=8,
        prune_interval=0.2,
        rescue_interval=0.2,
    ) as worker:
        sampling = True

        async def sample() -> None:
            while sampling:
                seen.append(await asyncio.to_thread(server_connections, pg_target.dsn, name))
                await asyncio.sleep(0.02)

        sampler = asyncio.create_task(sample())
        try:
            async with AsyncClient(store=store) as client:
                for _ in range(5):
                    ids = await client.enqueue_many(
                        actors.remember, [((f"k{i}",), {}) for i in range(100)]
                    )
                    await client.cancel(ids[-1])
                    await wait_for_states(store, ids, {"succeeded", "cancelled"}, timeout=60)
            assert worker.heartbeat is not None

            async def reported() -> int | None:
                (row,) = await store.insight.list_workers()
                return row.connections

            connections = await async_wait_until(reported, what="a heartbeat's count")
            (row,) = await store.insight.list_workers()
        finally:
            sampling = False
            await sampler
    assert max(seen) <= budget, seen
    assert max(seen) >= 3  # claims, heartbeat, LISTEN at least: the count is real
    assert 1 <= connections <= budget
    assert (row.id, row.max_connections) == (worker.id, budget)


async def test_sqlite_workers_have_no_connection_budget_to_show(sqlite_target) -> None:
    async with migrated_store(sqlite_target.dsn, sqlite_target.schema) as store:
        async with running_worker(sqlite_target) as worker:
            await async_wait_until(lambda: _beaten(worker), what="a heartbeat")
            (row,) = await store.insight.list_workers()
    assert (row.id, row.max_connections, row.connections) == (worker.id, None, None)


async def _beaten(worker) -> bool:
    return worker.heartbeat is not None and worker.heartbeat.beats >= 1


def test_a_budget_too_small_for_a_worker_is_one_line() -> None:
    with pytest.raises(ConfigError, match=r"max.connections"):
        WorkerConfig(actors="tests.support.worker_actors:registry", max_connections=3).validate()
    done = subprocess.run(
        [sys.executable, "-m", "taskq", "worker", "--actors", "x:y", "--max-connections", "3"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "max-connections" in lines[0], lines


def test_taskq_workers_json_has_the_connection_fields() -> None:
    from taskq.ids import uuid7
    from taskq.jobs import WorkerInfo

    row = WorkerInfo(uuid7(), 1, "h", ["q"], max_connections=6, connections=4).to_dict()
    assert json.loads(json.dumps(row))["max_connections"] == 6 and row["connections"] == 4
