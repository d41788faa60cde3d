"""The Postgres hot-path statements keep index-friendly plans once they are prepared.

psycopg prepares a statement after a few executions, and Postgres may then switch to a
*generic* plan. For ``complete`` and ``give_back`` a generic plan that drives the update
through ``jobs_running_idx`` (the worker's running rows) costs batch size x running rows;
the SQL fences by ``(...) IS TRUE`` so rows are found by primary key. These tests force
the generic plan and read it with EXPLAIN: no timing involved.
"""

from __future__ import annotations

import re

import psycopg
import pytest

from taskq.jobs import Limits
from taskq.store.postgres.claims import CLAIM_PLANNER
from tests.conftest import StoreTarget
from tests.support.storekit import pg_statements_on_search_path

Q = pg_statements_on_search_path()


def _positional(sql: str) -> tuple[str, list[str]]:
    names: list[str] = []

    def number(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in names:
            names.append(name)
        return f"${names.index(name) + 1}"

    return re.sub(r"%\((\w+)\)s", number, sql), names


TYPES = {
    "ids": "uuid[]",
    "attempts": "int[]",
    "kinds": "text[]",
    "results": "text[]",
    "errors": "text[]",
    "delays": "float8[]",
    "reasons": "text[]",
    "metas": "text[]",
    "blames": "bool[]",
    "worker_id": "uuid",
    "channel": "text",
}
ARGS = {
    "ids": "ARRAY[gen_random_uuid()]",
    "attempts": "ARRAY[1]",
    "kinds": "ARRAY['succeeded']",
    "results": "ARRAY[NULL::text]",
    "errors": "ARRAY[NULL::text]",
    "delays": "ARRAY[0.0]",
    "reasons": "ARRAY[NULL::text]",
    "metas": "ARRAY[NULL::text]",
    "blames": "ARRAY[false]",
    "worker_id": "gen_random_uuid()",
    "channel": "'c'",
}


@pytest.mark.parametrize("analyzed", [True, False], ids=["analyzed", "no-statistics"])
@pytest.mark.parametrize("statement", ["complete", "give_back"])
async def test_generic_plan_finds_rows_by_primary_key(
    pg_target: StoreTarget, store, statement: str, analyzed: bool
) -> None:
    """Analyzed, and before any ANALYZE (a new or bulk-loaded table, autovacuum off): a
    plan without statistics hash-joined the batch against a sequential scan of every job
    (3 - 5 ms an acknowledgement at 3,000 jobs, growing with the table)."""
    del store  # migrated by the fixture (pg_target's schema)
    sql, names = _positional(Q[statement])
    with psycopg.connect(pg_target.dsn, autocommit=True) as conn:
        conn.execute(f'SET search_path TO "{pg_target.schema}"')
        # a realistic table: many jobs, a few thousand of them running on one worker
        conn.execute(
            """
            INSERT INTO jobs (id, actor, queue, args, kwargs, priority, state, attempt,
                              max_attempts, crash_count, max_crashes, idempotent, run_at,
                              created_at, worker_id, lease_expires_at)
            SELECT gen_random_uuid(), 'a', 'default', '[]', '{}', 0,
                   CASE WHEN g %% 10 = 0 THEN 'running' ELSE 'succeeded' END, 1, 3, 0, 2,
                   false, now(), now(),
                   CASE WHEN g %% 10 = 0 THEN '00000000-0000-7000-8000-000000000001'::uuid END,
                   CASE WHEN g %% 10 = 0 THEN now() + interval '1 minute' END
            FROM generate_series(1, %s) AS g""",
            [30000 if analyzed else 3000],
        )
        if analyzed:
            conn.execute("ANALYZE jobs")
        conn.execute("SET plan_cache_mode = force_generic_plan")
        conn.execute(f"PREPARE s ({', '.join(TYPES[n] for n in names)}) AS {sql}")
        plan = "\n".join(
            row[0]
            for row in conn.execute(f"EXPLAIN EXECUTE s ({', '.join(ARGS[n] for n in names)})")
        )
    assert "jobs_running_idx" not in plan, plan
    assert "Seq Scan on jobs" not in plan, plan
    assert "jobs_pkey" in plan, plan


@pytest.fixture
def target(pg_target: StoreTarget) -> StoreTarget:
    """Postgres only: these are Postgres plans."""
    return pg_target


CLAIM_TYPES = {
    "queues": "text[]",
    "exclude_actors": "text[]",
    "limit": "int",
    "worker_id": "uuid",
    "lease": "float8",
}
CLAIM_ARGS = {
    "queues": "ARRAY['default']",
    "exclude_actors": "ARRAY[]::text[]",
    "limit": "10",
    "worker_id": "gen_random_uuid()",
    "lease": "30.0",
}


async def test_claim_reads_the_claim_index_in_order(pg_target: StoreTarget, store) -> None:
    """The claim runs on the store's claim connection, whose settings (CLAIM_PLANNER)
    keep one generic plan for it. With statistics on queues of many due jobs, that plan
    still reads jobs_claim_idx in order and stops at its limit: without ``enable_sort =
    off`` a generic plan (which cannot know the LIMIT) seq-scans and sorts the whole
    queue, 127 ms a claim at 100,000 queued instead of under 1 ms."""
    del store
    sql, names = _positional(Q["claim"])
    with psycopg.connect(pg_target.dsn, autocommit=True) as conn:
        conn.execute(f'SET search_path TO "{pg_target.schema}"')
        conn.execute("""
            INSERT INTO jobs (id, actor, queue, args, kwargs, max_attempts, max_crashes,
                              idempotent, run_at)
            SELECT gen_random_uuid(), 'a', CASE WHEN g % 2 = 0 THEN 'default' ELSE 'other' END,
                   '[]', '{}', 3, 2, false, now() - interval '1 minute'
            FROM generate_series(1, 50000) AS g""")
        conn.execute("ANALYZE jobs")
        for setting in CLAIM_PLANNER:
            name, value = setting.split("=")
            conn.execute("SELECT set_config(%s, %s, false)", [name, value])
        conn.execute(f"PREPARE s ({', '.join(CLAIM_TYPES[n] for n in names)}) AS {sql}")
        plan = "\n".join(
            row[0]
            for row in conn.execute(
                f"EXPLAIN EXECUTE s ({', '.join(CLAIM_ARGS[n] for n in names)})"
            )
        )
    assert "jobs_claim_idx" in plan, plan
    assert "Seq Scan on jobs" not in plan, plan
    assert "JIT" not in plan, plan


async def test_limited_claim_generic_plan_reads_the_claim_index(
    pg_target: StoreTarget, store
) -> None:
    """The limited claim runs one generic plan (limits_lock's settings), which cannot
    know its LIMIT: with statistics on a queue of many due jobs it still reads
    jobs_claim_idx in order instead of sorting the whole queue."""
    await store.set_limits("queue", "default", Limits(concurrency=1000))
    sql, names = _positional(Q["claim_limited"])
    with psycopg.connect(pg_target.dsn, autocommit=True) as conn:
        conn.execute(f'SET search_path TO "{pg_target.schema}"')
        conn.execute("""
            INSERT INTO jobs (id, actor, queue, args, kwargs, max_attempts, max_crashes,
                              idempotent, run_at)
            SELECT gen_random_uuid(), 'a', 'default', '[]', '{}', 3, 2, false,
                   now() - interval '1 minute'
            FROM generate_series(1, 50000)""")
        conn.execute("ANALYZE")
        with conn.transaction():
            conn.execute(Q["limits_lock"], {"key": "plan-test"})
            conn.execute(f"PREPARE s ({', '.join(CLAIM_TYPES[n] for n in names)}) AS {sql}")
            plan = "\n".join(
                row[0]
                for row in conn.execute(
                    f"EXPLAIN EXECUTE s ({', '.join(CLAIM_ARGS[n] for n in names)})"
                )
            )
    assert "jobs_claim_idx" in plan, plan
    assert "Seq Scan on jobs" not in plan, plan
