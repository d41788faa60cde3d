"""Shared fixtures: every behavioural test runs against both real stores.

* ``store_dsn`` is parametrised over ``sqlite`` (a fresh file per test) and
  ``postgres`` (a fresh schema per test on the server ``make test`` found, named by
  ``TASKQ_TEST_PG_DSN``). The schema is dropped afterwards.
* ``store`` is an opened, migrated ``Store`` for that DSN.
* ``store_env`` is the environment a subprocess (``taskq worker`` ...) needs to reach
  the same store.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import psycopg
import pytest

from tests.helpers import migrated_store

PG_DSN = os.environ.get("TASKQ_TEST_PG_DSN", "postgresql://root@127.0.0.1:5432/test")


@pytest.fixture(scope="session")
def pg_dsn() -> str:
    try:
        with psycopg.connect(PG_DSN, connect_timeout=5) as conn:
            conn.execute("SELECT 1")
    except psycopg.Error as exc:  # make test guarantees one; a bare pytest run fails loudly
        pytest.fail(f"Postgres at {PG_DSN} does not answer ({exc}); run `make test`", pytrace=False)
    return PG_DSN


class StoreTarget:
    """Where a test's store lives: DSN + schema, and the env for subprocesses."""

    def __init__(self, kind: str, dsn: str, schema: str) -> None:
        self.kind, self.dsn, self.schema = kind, dsn, schema

    @property
    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env["TASKQ_DSN"] = self.dsn
        env["TASKQ_SCHEMA"] = self.schema
        env.pop("TASKQ_DSN_FILE", None)
        env["TASKQ_LOG_FORMAT"] = "json"
        return env

    def __repr__(self) -> str:
        return f"StoreTarget({self.kind})"


def store_target(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[StoreTarget]:
    """A fresh store of ``kind`` for one test (SQLite: a new file; Postgres: a new schema,
    dropped afterwards)."""
    if kind == "sqlite":
        yield StoreTarget("sqlite", f"sqlite:///{tmp_path / 'taskq.sqlite3'}", "taskq")
        return
    dsn = request.getfixturevalue("pg_dsn")
    schema = f"taskq_t_{secrets.token_hex(6)}"
    yield StoreTarget("postgres", dsn, schema)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@pytest.fixture(params=["sqlite", "postgres"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StoreTarget]:
    yield from store_target(request.param, request, tmp_path)


@pytest.fixture
def sqlite_target(tmp_path: Path) -> StoreTarget:
    return StoreTarget("sqlite", f"sqlite:///{tmp_path / 'taskq.sqlite3'}", "taskq")


@pytest.fixture
def pg_target(pg_dsn: str) -> Iterator[StoreTarget]:
    schema = f"taskq_t_{secrets.token_hex(6)}"
    yield StoreTarget("postgres", pg_dsn, schema)
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@pytest.fixture
async def store(target: StoreTarget) -> AsyncIterator:
    async with migrated_store(target.dsn, target.schema) as s:
        yield s
