"""The jobs table's upkeep on a real Postgres: a worker says once when autovacuum never
reaches the table, and with ``vacuum_after_prune`` VACUUMs it itself, never waiting for
another vacuum and never failing the worker when its role may not. SQLite has nothing to
vacuum.

Whether the test server runs autovacuum is its own business: the tests that need "off"
turn it off for their own schema's table (``autovacuum_enabled = false``)."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest

from taskq import AsyncClient
from taskq.insight import VacuumOutcome
from taskq.store import create_store
from tests.conftest import StoreTarget
from tests.support import worker_actors as actors
from tests.support.helpers import async_wait_until, migrated_store
from tests.support.worker_harness import WorkerProcess, running_worker
from tests.support.worker_logs import captured_logs


def _sql(target: StoreTarget, statement: str) -> list[tuple]:
    with psycopg.connect(target.dsn, autocommit=True) as conn:
        conn.execute(f'SET search_path TO "{target.schema}"')
        cur = conn.execute(statement)
        return cur.fetchall() if cur.description else []


def _autovacuum_off_for_the_table(target: StoreTarget) -> None:
    _sql(target, "ALTER TABLE jobs SET (autovacuum_enabled = false)")


def _vacuum_count(target: StoreTarget) -> int:
    (row,) = _sql(
        target, "SELECT vacuum_count FROM pg_stat_user_tables WHERE relid = 'jobs'::regclass"
    )
    return int(row[0])


@pytest.fixture
def outsider(pg_target: StoreTarget) -> Iterator[str]:
    """A DSN for a role that may read and write taskq's tables but does not own them."""
    role = f"taskq_t_outsider_{secrets.token_hex(4)}"
    url = urlsplit(pg_target.dsn)
    dsn = urlunsplit(url._replace(netloc=f"{role}@{url.hostname}:{url.port or 5432}"))
    _sql(pg_target, f'CREATE ROLE "{role}" LOGIN')
    try:
        yield dsn
    finally:
        with psycopg.connect(pg_target.dsn, autocommit=True) as conn:
            conn.execute(f'DROP OWNED BY "{role}"')
            conn.execute(f'DROP ROLE "{role}"')


def _grant_use(target: StoreTarget, dsn: str) -> None:
    role = urlsplit(dsn).username
    schema = f'"{target.schema}"'
    for statement in (
        f'GRANT USAGE ON SCHEMA {schema} TO "{role}"',
        f'GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA {schema} TO "{role}"',
        f'GRANT USAGE ON ALL SEQUENCES IN SCHEMA {schema} TO "{role}"',
        f'GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA {schema} TO "{role}"',
    ):
        _sql(target, statement)


async def test_the_store_reports_the_server_s_and_the_table_s_autovacuum(pg_target) -> None:
    ((server, track_counts, role),) = _sql(
        pg_target,
        "SELECT current_setting('autovacuum') = 'on', current_setting('track_counts') = 'on', "
        "current_user",
    )
    async with migrated_store(pg_target.dsn, pg_target.schema) as store:
        state = await store.autovacuum()
        assert state is not None
        assert (state.server, state.track_counts, state.table_enabled) == (
            server,
            track_counts,
            None,
        )
        assert (state.table, state.role, state.can_vacuum) == (
            f"{pg_target.schema}.jobs",
            role,
            True,
        )
        assert (state.problem is None) == (server and track_counts)
        _autovacuum_off_for_the_table(pg_target)
        off = await store.autovacuum()
        assert off is not None and off.table_enabled is False and off.problem is not None


async def test_vacuum_reclaims_the_dead_rows_unless_the_table_was_just_vacuumed(
    pg_target,
) -> None:
    async with migrated_store(pg_target.dsn, pg_target.schema) as store:
        async with AsyncClient(store=store) as client:
            await client.enqueue_many(actors.noop, [((), {}) for _ in range(200)])
        _sql(pg_target, "DELETE FROM jobs")
        before = _vacuum_count(pg_target)
        vacuums = 0

        async def reclaimed() -> bool:
            # On a server other sessions use, an older snapshot of theirs can keep the
            # deleted rows "recently dead" through one pass: vacuum until they are gone.
            nonlocal vacuums
            done = await store.vacuum_jobs(unless_vacuumed_within=0.0)
            assert done.outcome is VacuumOutcome.VACUUMED
            vacuums += 1
            await async_wait_until(
                lambda: _async(_vacuum_count(pg_target) == before + vacuums),
                what="the vacuum counted",
            )
            ((dead,),) = _sql(
                pg_target,
                "SELECT n_dead_tup FROM pg_stat_user_tables WHERE relid = 'jobs'::regclass",
            )
            return dead == 0

        assert await async_wait_until(reclaimed, timeout=60.0, what="the dead rows reclaimed")
        again = await store.vacuum_jobs(unless_vacuumed_within=3600.0)
        assert again.outcome is VacuumOutcome.RECENT
        assert _vacuum_count(pg_target) == before + vacuums


async def _async(value: bool) -> bool:
    return value


async def test_vacuum_never_waits_for_another_vacuum(pg_target) -> None:
    async with migrated_store(pg_target.dsn, pg_target.schema) as store:
        with psycopg.connect(pg_target.dsn) as holder:  # a transaction holds the lock
            holder.execute(f'LOCK TABLE "{pg_target.schema}".jobs IN SHARE UPDATE EXCLUSIVE MODE')
            result = await asyncio.wait_for(store.vacuum_jobs(unless_vacuumed_within=0.0), 60)
        assert result.outcome is VacuumOutcome.BUSY
        assert "lock not available" in result.message


async def test_a_role_that_does_not_own_the_table_may_not_vacuum_it(pg_target, outsider) -> None:
    async with migrated_store(pg_target.dsn, pg_target.schema):
        _grant_use(pg_target, outsider)
    store = create_store(outsider, pg_target.schema)
    await store.open()
    try:
        state = await store.autovacuum()
        assert state is not None and state.can_vacuum is False
        assert state.role == urlsplit(outsider).username
        result = await store.vacuum_jobs(unless_vacuumed_within=0.0)
        assert result.outcome is VacuumOutcome.REFUSED and "jobs" in result.message
    finally:
        await store.close()


async def test_sqlite_has_nothing_to_vacuum(sqlite_target) -> None:
    async with migrated_store(sqlite_target.dsn, sqlite_target.schema) as store:
        assert await store.autovacuum() is None
        result = await store.vacuum_jobs(unless_vacuumed_within=0.0)
        assert result.outcome is VacuumOutcome.UNSUPPORTED


async def _pruned(store, ids) -> bool:
    return all([await store.get_job(i) is None for i in ids])


async def _prune_pass_seen(store) -> None:
    """Enqueue jobs a worker with retention 0 runs and prunes: proof a prune pass ran."""
    async with AsyncClient(store=store) as client:
        ids = await client.enqueue_many(actors.noop, [((), {}) for _ in range(5)])
    await async_wait_until(lambda: _pruned(store, ids), timeout=30, what="a prune pass")


PRUNING = {"keep_succeeded": 0.0, "prune_interval": 0.2, "rescue_interval": 0.2}


async def test_a_worker_warns_once_when_autovacuum_never_reaches_the_table(
    pg_target, runs_file
) -> None:
    async with migrated_store(pg_target.dsn, pg_target.schema) as store:
        _autovacuum_off_for_the_table(pg_target)
        before = _vacuum_count(pg_target)
        with captured_logs() as logs:
            async with running_worker(pg_target, **PRUNING):
                await _prune_pass_seen(store)
                await _prune_pass_seen(store)
        (warning,) = logs.events("autovacuum-off")
        assert warning["level"] == "warning" and warning["table"] == f"{pg_target.schema}.jobs"
        assert "grows without bound" in warning["problem"]
        assert "VACUUM" in warning["fix"] and "--vacuum-after-prune" in warning["fix"]
        assert logs.events("jobs-vacuumed") == []  # off by default
        assert _vacuum_count(pg_target) == before


async def test_a_worker_with_vacuum_after_prune_vacuums_the_table(pg_target, runs_file) -> None:
    async with migrated_store(pg_target.dsn, pg_target.schema) as store:
        _autovacuum_off_for_the_table(pg_target)
        before = _vacuum_count(pg_target)
        with captured_logs() as logs:
            async with running_worker(pg_target, vacuum_after_prune=True, **PRUNING):
                await async_wait_until(
                    lambda: _async(_vacuum_count(pg_target) > before),
                    timeout=30,
                    what="a VACUUM by the worker",
                )
                await _prune_pass_seen(store)  # the worker works on
        (note,) = logs.events("autovacuum-off-vacuuming")
        assert (
            logs.events("autovacuum-off") == []
            and note["level"] == "info"
            and "--vacuum-after-prune" in note["handling"]
        )
        assert logs.events("jobs-vacuumed") and logs.events("jobs-vacuum-failed") == []


async def test_a_worker_whose_role_may_not_vacuum_warns_and_works_on(
    pg_target, outsider, runs_file
) -> None:
    async with migrated_store(pg_target.dsn, pg_target.schema) as store:
        _autovacuum_off_for_the_table(pg_target)
        _grant_use(pg_target, outsider)
        with captured_logs() as logs:
            async with running_worker(
                pg_target, dsn=outsider, vacuum_after_prune=True, **PRUNING
            ) as worker:
                await _prune_pass_seen(store)
                await _prune_pass_seen(store)
                assert worker.exit_code == 0 and not worker.shutting_down
        (warning,) = logs.events("autovacuum-off")
        assert warning["level"] == "warning"
        assert "may not VACUUM" in warning["vacuum_after_prune"]
        assert logs.events("jobs-vacuumed") == [] and logs.events("jobs-vacuum-failed") == []


async def test_taskq_worker_vacuum_after_prune_flag(pg_target, tmp_path: Path) -> None:
    async with migrated_store(pg_target.dsn, pg_target.schema):
        _autovacuum_off_for_the_table(pg_target)
    worker = WorkerProcess(
        pg_target,
        "--vacuum-after-prune",
        "--prune-interval",
        "0.3",
        log_path=tmp_path / "worker.log",
    )
    try:
        assert worker.wait_for_event("autovacuum-off-vacuuming")["level"] == "info"
        worker.wait_for_event("jobs-vacuumed", timeout=30)
    finally:
        worker.stop()
