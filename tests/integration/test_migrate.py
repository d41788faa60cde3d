"""Migrations: from zero to the current schema, idempotent, safe when two run at once."""

from __future__ import annotations

import difflib
import json
import sqlite3
import subprocess
import sys
import textwrap

import psycopg

from taskq.store import create_store
from taskq.store.sqlfile import load_migrations
from tests.support.helpers import wait_until
from tests.support.schema_dump import REGENERATE, pg_dump, snapshot_path, sqlite_dump


def migrated_schema(target) -> str:
    if target.kind == "postgres":
        return pg_dump(target.dsn, target.schema)
    return sqlite_dump(target.dsn.removeprefix("sqlite:///"))


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
    snapshot = snapshot_path(target.kind)
    expected = snapshot.read_text(encoding="utf-8") if snapshot.exists() else ""
    actual = migrated_schema(target)
    diff = "".join(
        difflib.unified_diff(
            expected.splitlines(keepends=True),
            actual.splitlines(keepends=True),
            fromfile=str(snapshot.relative_to(snapshot.parents[4])),
            tofile="migrated from zero",
        )
    )
    assert actual == expected, (
        f"the {target.kind} migrations no longer build the schema in the snapshot; if the "
        f"change is intended, regenerate it with `{REGENERATE}` and review the diff:\n{diff}"
    )


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
