"""The schema a store's migrations build, as normalised DDL text (procrastinate's pattern).

``src/taskq/store/schema/<kind>.sql`` holds this text for a database migrated from zero;
tests/integration/test_migrate.py checks that it still matches. After changing a
migration, regenerate both snapshots and review the diff::

    make schema                       # or:
    .venv/bin/python -m tests.support.schema_dump --pg-dsn postgresql://root@127.0.0.1:5432/test

Postgres is read from its catalog (tables with columns, defaults, constraints and
storage options; indexes; functions; triggers; views), SQLite from ``sqlite_master``.
The throw-away schema's name is removed, so the text does not depend on it.
"""

from __future__ import annotations

import argparse
import asyncio
import secrets
import sqlite3
import sys
import tempfile
from pathlib import Path

import psycopg

from tests.support.helpers import migrate

SNAPSHOTS = Path(__file__).resolve().parents[2] / "src" / "taskq" / "store" / "schema"
REGENERATE = "make schema  (or: .venv/bin/python -m tests.support.schema_dump --pg-dsn DSN)"
HEADER = (
    "-- The {kind} schema that taskq's migrations build from zero: a generated snapshot\n"
    "-- to read, not to apply. Regenerate with `make schema` after changing a migration.\n"
)


def snapshot_path(kind: str) -> Path:
    return SNAPSHOTS / f"{kind}.sql"


def _pg_table(conn: psycopg.Connection, oid: int, name: str, options: list[str] | None) -> str:
    lines = []
    for column, type_, not_null, default in conn.execute(
        "SELECT a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull,"
        "       pg_get_expr(d.adbin, d.adrelid)"
        " FROM pg_attribute a"
        " LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum"
        " WHERE a.attrelid = %s AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum",
        (oid,),
    ):
        text = f"    {column} {type_}"
        text += " NOT NULL" if not_null else ""
        text += f" DEFAULT {default}" if default is not None else ""
        lines.append(text)
    for constraint, definition in conn.execute(
        "SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint"
        " WHERE conrelid = %s ORDER BY conname",
        (oid,),
    ):
        lines.append(f"    CONSTRAINT {constraint} {definition}")
    with_ = f" WITH ({', '.join(sorted(options))})" if options else ""
    return f"CREATE TABLE {name} (\n" + ",\n".join(lines) + f"\n){with_};"


def pg_dump(dsn: str, schema: str) -> str:
    """The schema's objects as DDL, in a stable order."""
    parts: list[str] = []
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("SELECT set_config('search_path', %s, false)", (schema,))
        row = conn.execute("SELECT oid FROM pg_namespace WHERE nspname = %s", (schema,)).fetchone()
        assert row is not None, f"no schema {schema!r}"
        nsp = row[0]
        relations = conn.execute(
            "SELECT oid, relname, relkind, reloptions FROM pg_class"
            " WHERE relnamespace = %s AND relkind IN ('r', 'p', 'v', 'm', 'S')"
            " ORDER BY relkind, relname",
            (nsp,),
        ).fetchall()
        for oid, name, kind, options in relations:
            if kind in ("r", "p"):
                parts.append(_pg_table(conn, oid, name, options))
            elif kind == "S":
                parts.append(f"CREATE SEQUENCE {name};")
            else:
                view = conn.execute("SELECT pg_get_viewdef(%s)", (oid,)).fetchone()
                assert view is not None
                parts.append(f"CREATE VIEW {name} AS\n{view[0].strip().rstrip(';')};")
        for (index,) in conn.execute(
            "SELECT pg_get_indexdef(i.indexrelid) FROM pg_index i"
            " JOIN pg_class c ON c.oid = i.indexrelid"
            " WHERE c.relnamespace = %s"
            "   AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = i.indexrelid)"
            " ORDER BY c.relname",
            (nsp,),
        ):
            parts.append(f"{index};")
        for (function,) in conn.execute(
            "SELECT pg_get_functiondef(oid) FROM pg_proc WHERE pronamespace = %s"
            " ORDER BY proname, oid::regprocedure::text",
            (nsp,),
        ):
            parts.append(function.strip() + ";")
        for (trigger,) in conn.execute(
            "SELECT pg_get_triggerdef(t.oid) FROM pg_trigger t"
            " JOIN pg_class c ON c.oid = t.tgrelid"
            " WHERE c.relnamespace = %s AND NOT t.tgisinternal ORDER BY c.relname, t.tgname",
            (nsp,),
        ):
            parts.append(f"{trigger};")
    text = "\n\n".join(parts).replace(f'"{schema}".', "").replace(f"{schema}.", "")
    text = text.replace(f"search_path TO '{schema}'", "search_path TO '<schema>'")
    return _normalised(HEADER.format(kind="Postgres") + "\n" + text)


def sqlite_dump(path: str) -> str:
    """Every CREATE statement SQLite keeps, tables first, in a stable order."""
    order = {"table": 0, "index": 1, "trigger": 2, "view": 3}
    with sqlite3.connect(path) as conn:
        rows = conn.execute(
            "SELECT type, name, sql FROM sqlite_master"
            " WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%'"
        ).fetchall()
    rows.sort(key=lambda r: (order.get(r[0], 9), r[1]))
    text = "\n\n".join(f"{sql};" for _, _, sql in rows)
    return _normalised(HEADER.format(kind="SQLite") + "\n" + text)


def _normalised(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.strip().splitlines()) + "\n"


def migrated_from_zero(kind: str, pg_dsn: str | None = None) -> str:
    """Migrate a fresh database (a temporary SQLite file or Postgres schema) and dump it."""
    if kind == "sqlite":
        with tempfile.TemporaryDirectory() as folder:
            path = f"{folder}/taskq.sqlite3"
            asyncio.run(migrate(f"sqlite:///{path}", "taskq"))
            return sqlite_dump(path)
    assert pg_dsn is not None
    schema = f"taskq_dump_{secrets.token_hex(6)}"
    try:
        asyncio.run(migrate(pg_dsn, schema))
        return pg_dump(pg_dsn, schema)
    finally:
        with psycopg.connect(pg_dsn, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Regenerate the stores' schema snapshots.")
    parser.add_argument("--pg-dsn", required=True, help="a Postgres server to migrate into")
    ns = parser.parse_args(argv)
    for kind in ("sqlite", "postgres"):
        path = snapshot_path(kind)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(migrated_from_zero(kind, ns.pg_dsn), encoding="utf-8")
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
