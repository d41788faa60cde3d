"""Migrations: from zero to the current schema, idempotent, safe when two run at once."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import textwrap

import psycopg

from taskq.store import create_store
from taskq.store.sqlfile import load_migrations

from ..helpers import wait_until

JOB_COLUMNS = [
    "id",
    "actor",
    "queue",
    "args",
    "kwargs",
    "priority",
    "state",
    "attempt",
    "max_attempts",
    "crash_count",
    "max_crashes",
    "idempotent",
    "run_at",
    "created_at",
    "started_at",
    "finished_at",
    "worker_id",
    "lease_expires_at",
    "last_error",
    "dead_reason",
    "result",
]
WORKER_COLUMNS = [
    "id",
    "workgroup_instance",
    "worker_label",
    "pid",
    "hostname",
    "queues",
    "started_at",
    "last_seen_at",
]
ACTOR_COLUMNS = [
    "name",
    "queue",
    "max_attempts",
    "max_crashes",
    "idempotent",
    "cpu_bound",
    "timeout",
    "extra",
    "updated_at",
]
CURRENT = {
    "jobs": JOB_COLUMNS,
    "workers": WORKER_COLUMNS,
    "actors": ACTOR_COLUMNS,
    "schema_migrations": ["version", "applied_at"],
}
INDEXES = {"jobs_claim_idx", "jobs_running_idx", "jobs_prune_idx", "workers_wg_lookup_idx"}


def pg_schema(dsn: str, schema: str) -> tuple[dict[str, list[str]], set[str], dict[str, str]]:
    with psycopg.connect(dsn) as conn:
        columns: dict[str, list[str]] = {}
        types = {}
        for table, column, data_type in conn.execute(
            "SELECT table_name, column_name, data_type FROM information_schema.columns"
            " WHERE table_schema = %s ORDER BY table_name, ordinal_position",
            (schema,),
        ):
            columns.setdefault(table, []).append(column)
            types[f"{table}.{column}"] = data_type
        indexes = {
            r[0]
            for r in conn.execute(
                "SELECT indexname FROM pg_indexes WHERE schemaname = %s AND indexname NOT LIKE"
                " '%%_pkey'",
                (schema,),
            )
        }
    return columns, indexes, types


def sqlite_schema(path: str) -> tuple[dict[str, list[str]], set[str]]:
    with sqlite3.connect(path) as conn:
        tables = [
            r[0]
            for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
            )
        ]
        columns = {t: [r[1] for r in conn.execute(f"PRAGMA table_info({t})")] for t in tables}
        indexes = {
            r[0]
            for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL"
            )
        }
    return columns, indexes


async def test_migrating_from_zero_gives_the_current_schema(target):
    store = create_store(target.dsn, target.schema)
    await store.open()
    try:
        applied = await store.migrate()
        assert applied == [m.version for m in load_migrations(target.kind)]
        assert await store.migrate() == []
        await store.check_schema()
    finally:
        await store.close()
    if target.kind == "postgres":
        columns, indexes, types = pg_schema(target.dsn, target.schema)
        assert types["jobs.args"] == "json" and types["jobs.kwargs"] == "json"
        assert types["jobs.id"] == "uuid" and types["jobs.run_at"].startswith("timestamp")
    else:
        columns, indexes = sqlite_schema(target.dsn.removeprefix("sqlite:///"))
    assert columns == CURRENT
    assert indexes == INDEXES


MIGRATOR = textwrap.dedent("""
    import asyncio, json, sys, time
    from pathlib import Path
    from taskq.store import create_store

    go, ready = Path(sys.argv[1]), Path(sys.argv[2])

    async def main():
        store = create_store()
        await store.open()
        ready.touch()
        deadline = time.monotonic() + 30
        while not go.exists():
            if time.monotonic() > deadline:
                sys.exit("no go signal")
            await asyncio.sleep(0.002)
        try:
            print(json.dumps(await store.migrate()))
        finally:
            await store.close()

    asyncio.run(main())
""")


def applied_versions(target) -> list[str]:
    if target.kind == "postgres":
        with psycopg.connect(target.dsn) as conn:
            return [
                r[0]
                for r in conn.execute(
                    f'SELECT version FROM "{target.schema}".schema_migrations ORDER BY version'
                )
            ]
    with sqlite3.connect(target.dsn.removeprefix("sqlite:///")) as conn:
        return [r[0] for r in conn.execute("SELECT version FROM schema_migrations")]


def test_two_migrate_processes_at_once_apply_the_schema_once(target, tmp_path):
    go = tmp_path / "go"
    ready = [tmp_path / f"ready-{n}" for n in range(2)]
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", MIGRATOR, str(go), str(r)],
            env=target.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for r in ready
    ]
    pairs = list(zip(ready, procs, strict=True))
    wait_until(
        lambda: all(r.exists() or p.poll() is not None for r, p in pairs),
        timeout=60,
        what="both migrators connected",
    )
    go.touch()
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        results.append(json.loads(out))
    everything = [m.version for m in load_migrations(target.kind)]
    assert sorted(results, key=len) == [[], everything]
    assert applied_versions(target) == everything
