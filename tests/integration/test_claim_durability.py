"""A Postgres claim of idempotent jobs only commits without waiting for the WAL flush; a
claim holding any non-idempotent job keeps the server's durability (docs/jobs.md,
"Durability of a claim"). The choice is the claim statement's own ``commit_mode``
column: ``set_config`` answers the value it set for the transaction."""

from __future__ import annotations

import psycopg
import pytest

from taskq.ids import uuid7
from taskq.jobs import Limits
from tests.support.helpers import migrated_store
from tests.support.storekit import pg_statements_on_search_path, spec

Q = pg_statements_on_search_path()


@pytest.fixture
async def store(pg_target):
    """Postgres only (the root conftest's ``store`` runs on both stores)."""
    async with migrated_store(pg_target.dsn, pg_target.schema) as s:
        yield s


def claim_modes(pg_target, queue: str, *, limited: bool = False) -> list[str]:
    params = {
        "worker_id": uuid7(),
        "queues": [queue],
        "limit": 10,
        "lease": 10.0,
        "exclude_actors": [],
    }
    with psycopg.connect(pg_target.dsn, autocommit=True) as conn:
        conn.execute(f'SET search_path TO "{pg_target.schema}"')
        if not limited:
            rows = conn.execute(Q["claim"], params).fetchall()
            return [row[-1] for row in rows]
        with conn.transaction():
            conn.execute(Q["limits_lock"], {"key": "durability-test"})
            cur = conn.execute(Q["claim_limited"], params)
            names = [c.name for c in cur.description]
            rows = [dict(zip(names, r, strict=True)) for r in cur.fetchall()]
        return [r["commit_mode"] for r in rows if r["id"] is not None]


def server_setting(pg_target) -> str:
    with psycopg.connect(pg_target.dsn, autocommit=True) as conn:
        row = conn.execute("SHOW synchronous_commit").fetchone()
    assert row is not None
    return str(row[0])


async def test_a_claim_of_idempotent_jobs_only_commits_asynchronously(pg_target, store) -> None:
    await store.enqueue([spec(queue="pure", idempotent=True) for _ in range(3)])
    assert claim_modes(pg_target, "pure") == ["off", "off", "off"]


async def test_one_non_idempotent_job_keeps_the_claim_durable(pg_target, store) -> None:
    assert server_setting(pg_target) != "off"  # else the test could not tell
    await store.enqueue([spec(queue="mixed", idempotent=True), spec(queue="mixed")])
    expected = server_setting(pg_target)
    assert claim_modes(pg_target, "mixed") == [expected, expected]


async def test_the_limited_claim_chooses_the_same_way(pg_target, store) -> None:
    await store.set_limits("queue", "pure", Limits(concurrency=100))
    await store.set_limits("queue", "mixed", Limits(concurrency=100))
    await store.enqueue([spec(queue="pure", idempotent=True) for _ in range(2)])
    await store.enqueue([spec(queue="mixed", idempotent=True), spec(queue="mixed")])
    assert claim_modes(pg_target, "pure", limited=True) == ["off", "off"]
    expected = server_setting(pg_target)
    assert claim_modes(pg_target, "mixed", limited=True) == [expected, expected]
