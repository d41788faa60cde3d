"""Fresh databases for each run: ``bench_<system>`` on the server of TASKQ_BENCH_PG_DSN.

The DSN names an existing database (e.g. ``.../test``); it is used only to create and
drop the bench databases, so peers never share tables or schemas."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

import psycopg
from psycopg import sql


def dsn_for(admin_dsn: str, database: str) -> str:
    parts = urlsplit(admin_dsn)
    return urlunsplit(parts._replace(path="/" + database))


def recreate(admin_dsn: str, database: str) -> str:
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(database))
        )
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(database)))
    return dsn_for(admin_dsn, database)


def drop(admin_dsn: str, database: str) -> None:
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(database))
        )


def server_version(admin_dsn: str) -> str:
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        return conn.execute("SHOW server_version").fetchone()[0]


#: the server settings a reader of the results needs to know (queue tables live on them)
SETTINGS = (
    "autovacuum",
    "autovacuum_naptime",
    "fsync",
    "synchronous_commit",
    "shared_buffers",
    "max_wal_size",
)


def settings(admin_dsn: str) -> dict[str, dict[str, object]]:
    """name -> {"value": ..., "default": whether the server runs Postgres's default}."""
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT name, current_setting(name), boot_val = reset_val FROM pg_settings "
            "WHERE name = ANY(%s)",
            [list(SETTINGS)],
        ).fetchall()
    found = {name: {"value": value, "default": default} for name, value, default in rows}
    return {name: found[name] for name in SETTINGS if name in found}
