"""Shared fixtures: every behavioural test runs against both real stores.

* ``store_dsn`` is parametrised over ``sqlite`` (a fresh file per test) and
  ``postgres`` (a fresh schema per test on the server ``make test`` found, named by
  ``TASKQ_TEST_PG_DSN``). The schema is dropped afterwards.
* ``store`` is an opened, migrated ``Store`` for that DSN.
* ``target_fixture(*WITH_POOLER)`` adds ``postgres-pgbouncer``: the same Postgres through
  a real PgBouncer in transaction mode (``pgbouncer_dsn``, one per session).
* ``store_env`` is the environment a subprocess (``taskq worker`` ...) needs to reach
  the same store.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import psycopg
import pytest

from taskq.settings import HEALTH_DSN_ENV
from tests.support import pgbouncer
from tests.support.helpers import migrated_store

PG_DSN = os.environ.get("TASKQ_TEST_PG_DSN", "postgresql://root@127.0.0.1:5432/test")


@pytest.fixture(scope="session")
def pg_dsn() -> str:
    return find_pg_dsn()


def find_pg_dsn() -> str:
    """The test Postgres. ``make test`` always finds or starts one and names it in
    ``TASKQ_TEST_PG_DSN``: then it must answer (a failure, never a skip, so CI never skips
    the Postgres half). A bare ``pytest`` on a machine without one skips the Postgres
    tests with one line instead of failing each."""
    try:
        with psycopg.connect(PG_DSN, connect_timeout=5) as conn:
            conn.execute("SELECT 1")
    except psycopg.Error as exc:
        why = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        if "TASKQ_TEST_PG_DSN" in os.environ:
            pytest.fail(f"Postgres at {PG_DSN} does not answer: {why}", pytrace=False)
        pytest.skip(f"no Postgres at {PG_DSN} ({why}): `make test` finds or starts one")
    return PG_DSN


@pytest.fixture(scope="session")
def pgbouncer_dsn(pg_dsn: str) -> Iterator[str]:
    """A real PgBouncer in transaction mode in front of ``pg_dsn``'s server, for the
    session (tests/support/pgbouncer.py); the DSN through it. Skips where it is not installed."""
    if pgbouncer.installed() is None:
        pytest.skip(f"pgbouncer is not installed ({pgbouncer.INSTALL})")
    bouncer = pgbouncer.PgBouncer(pg_dsn)
    try:
        yield bouncer.start()
    finally:
        bouncer.close()


class StoreTarget:
    """Where a test's store lives: DSN + schema, and the env for subprocesses.
    ``direct_dsn``: past a pooler, the direct DSN (``TASKQ_PG_DSN_DIRECT``)."""

    def __init__(self, kind: str, dsn: str, schema: str, direct_dsn: str | None = None) -> None:
        self.kind, self.dsn, self.schema, self.direct_dsn = kind, dsn, schema, direct_dsn

    @property
    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env["TASKQ_DSN"] = self.dsn
        env["TASKQ_SCHEMA"] = self.schema
        env.pop("TASKQ_DSN_FILE", None)
        env.pop(HEALTH_DSN_ENV, None)
        if self.direct_dsn is not None:
            env[HEALTH_DSN_ENV] = self.direct_dsn
        env["TASKQ_LOG_FORMAT"] = "json"
        return env

    def __repr__(self) -> str:
        return f"StoreTarget({self.kind})"


def store_target(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[StoreTarget]:
    """A fresh store of ``kind`` for one test: ``sqlite`` (a new file), ``postgres`` (a
    new schema, dropped afterwards) or ``postgres-pgbouncer`` (the same, reached through
    a real PgBouncer in transaction mode, LISTEN through ``TASKQ_PG_DSN_DIRECT``)."""
    if kind == "sqlite":
        yield StoreTarget("sqlite", f"sqlite:///{tmp_path / 'taskq.sqlite3'}", "taskq")
        return
    dsn = request.getfixturevalue("pg_dsn")
    schema = f"taskq_t_{secrets.token_hex(6)}"
    if kind == "postgres-pgbouncer":
        # in-process workers and clients find the direct DSN where a deployment puts it
        request.getfixturevalue("monkeypatch").setenv(HEALTH_DSN_ENV, dsn)
        yield StoreTarget("postgres", request.getfixturevalue("pgbouncer_dsn"), schema, dsn)
    else:
        yield StoreTarget("postgres", dsn, schema)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def target_fixture(*kinds: str) -> Callable[..., Iterator[StoreTarget]]:
    """A ``target`` fixture over ``kinds`` (see ``store_target``): a test module that
    must also run through PgBouncer declares ``target = target_fixture(*WITH_POOLER)``."""

    @pytest.fixture(params=kinds)
    def target(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StoreTarget]:
        yield from store_target(request.param, request, tmp_path)

    return target


#: every store, and Postgres through a transaction pooler too
WITH_POOLER = ("sqlite", "postgres", "postgres-pgbouncer")
target = target_fixture("sqlite", "postgres")


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
    async with migrated_store(target.dsn, target.schema, target.direct_dsn) as s:
        yield s
