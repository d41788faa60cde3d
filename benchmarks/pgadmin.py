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
