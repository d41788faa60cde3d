"""Small builders shared by the store tests (not a test module)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Any

from taskq.ids import uuid7
from taskq.jobs import JobSpec
from taskq.store import Store, create_store
from taskq.store.sqlfile import load_queries


def pg_statements_on_search_path() -> dict[str, str]:
    """postgres.sql's statements without their ``{schema}.`` prefixes: for a test's own
    connection whose search_path names the schema (plans read with EXPLAIN)."""
    return {n: q.replace("{schema}.", "") for n, q in load_queries("postgres.sql").items()}


def spec(
    actor: str = "tests.echo",
    queue: str = "default",
    *,
    args: list[Any] | None = None,
    kwargs: dict[str, Any] | None = None,
    priority: int = 0,
    run_at: datetime | None = None,
    max_attempts: int = 3,
    max_crashes: int = 2,
    idempotent: bool = False,
) -> JobSpec:
    return JobSpec(
        id=uuid7(),
        actor=actor,
        queue=queue,
        args_json=json.dumps(args if args is not None else [1]),
        kwargs_json=json.dumps(kwargs or {}),
        priority=priority,
        run_at=run_at,
        max_attempts=max_attempts,
        max_crashes=max_crashes,
        idempotent=idempotent,
    )


@asynccontextmanager
async def another_store(target: Any) -> AsyncIterator[Store]:
    """A second, independent store (its own connections) on the same target."""
    store = create_store(target.dsn, target.schema, direct_dsn=target.direct_dsn)
    await store.open()
    try:
        yield store
    finally:
        await store.close()
