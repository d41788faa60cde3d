"""The pytest plugin (entry point ``pytest11``): the ``taskq_client`` fixture.

* ``taskq_client`` -- a ``taskq.Client`` on a fresh, migrated store for this test: a
  SQLite file in ``tmp_path``, or, when ``TASKQ_TESTING_DSN`` (or the ini option
  ``taskq_dsn``) names a Postgres server, a schema of its own there, dropped afterwards.
  For the test's duration ``TASKQ_DSN``/``TASKQ_SCHEMA`` point at that store (so the
  application's own ``taskq.Client()`` enqueues there), and ``taskq.testing.use`` makes
  it and ``taskq_registry`` the defaults of ``drain`` and ``assert_enqueued``.
* ``taskq_registry`` -- the ``Registry`` ``drain`` runs: the ini option ``taskq_actors``
  (``MODULE:ATTR``) or ``TASKQ_TESTING_ACTORS``; override the fixture to give it directly.
* ``taskq_dsn`` -- the store's DSN as above; override it to choose per test.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest

from ..client import Client
from ..registry import Registry, load_registry
from ..settings import dsn_kind
from ..store import Store
from . import use


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(
        "taskq_dsn",
        "taskq.testing: store for taskq_client (a postgresql:// DSN: a schema per test; "
        "default: a SQLite file per test)",
        default="",
    )
    parser.addini(
        "taskq_actors", "taskq.testing: MODULE:ATTR of the Registry drain runs", default=""
    )


@pytest.fixture
def taskq_dsn(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    dsn = os.environ.get("TASKQ_TESTING_DSN") or str(request.config.getini("taskq_dsn"))
    return dsn or f"sqlite:///{tmp_path / 'taskq-test.sqlite3'}"


@pytest.fixture
def taskq_registry(request: pytest.FixtureRequest) -> Registry | None:
    reference = os.environ.get("TASKQ_TESTING_ACTORS") or str(request.config.getini("taskq_actors"))
    return load_registry(reference) if reference else None


@pytest.fixture
def taskq_client(
    taskq_dsn: str, taskq_registry: Registry | None, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Client]:
    postgres = dsn_kind(taskq_dsn) == "postgres"
    schema = f"taskq_test_{secrets.token_hex(6)}" if postgres else "taskq"
    client = Client(taskq_dsn, schema=schema)
    store = client.async_client.store
    opened = False
    try:
        client.open()
        opened = True
        client.run(store.migrate())
        monkeypatch.setenv("TASKQ_DSN", taskq_dsn)
        monkeypatch.setenv("TASKQ_SCHEMA", schema)
        monkeypatch.delenv("TASKQ_DSN_FILE", raising=False)
        with use(client, taskq_registry):
            yield client
    finally:
        try:
            if postgres and opened:
                client.run(_drop_schema(store))
        finally:
            client.close()


async def _drop_schema(store: Store) -> None:
    from ..store.postgres import PostgresStore  # only Postgres test stores have schemas

    if isinstance(store, PostgresStore):
        await store.drop_schema()
