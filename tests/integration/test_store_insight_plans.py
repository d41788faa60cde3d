"""The operator's queries stay on indexes at a million jobs (Postgres plans, read with
EXPLAIN: no timing involved).

``queue_backlog`` runs every few seconds on one process of the fleet: each of its three
parts must scan a partial index of its state (queued, running, dead) and never the
table. The dashboard's job pages walk the primary key backwards from the keyset cursor
and stop at the page size.
"""

from __future__ import annotations

import asyncio
import secrets

import psycopg
import pytest

from tests.support.helpers import migrate
from tests.support.storekit import pg_statements_on_search_path

from .test_store_plans import _positional

Q = pg_statements_on_search_path()

pytestmark = pytest.mark.slow

ROWS = 1_000_000


@pytest.fixture(scope="module")
def million(pg_dsn: str):
    """A migrated schema with a million jobs (built once for the module): 1% queued (a
    third of them due later), 0.1% dead, 0.01% running, the rest succeeded, 5 queues."""
    schema = f"taskq_t_{secrets.token_hex(6)}"
    asyncio.run(migrate(pg_dsn, schema))
    conn = psycopg.connect(pg_dsn, autocommit=True)
    conn.execute(f'SET search_path TO "{schema}"')
    conn.execute(f"""
        INSERT INTO jobs (id, actor, queue, args, kwargs, state, attempt, max_attempts,
                          max_crashes, idempotent, run_at, finished_at, worker_id,
                          dead_reason, last_error)
        SELECT gen_random_uuid(), 'a' || (g % 7), 'q' || (g % 5), '[]', '{{}}',
               s.state, 1, 3, 2, false,
               now() + CASE WHEN g % 300 = 0 THEN interval '1 hour' ELSE interval '0' END
                     - (g % 1000) * interval '1 second',
               CASE WHEN s.state IN ('succeeded', 'dead') THEN now() END,
               CASE WHEN s.state = 'running' THEN gen_random_uuid() END,
               CASE WHEN s.state = 'dead' THEN 'failed' END,
               CASE WHEN s.state = 'dead' THEN 'ValueError: nope' END
        FROM generate_series(1, {ROWS}) AS g,
             LATERAL (SELECT CASE WHEN g % 10000 = 0 THEN 'running'
                                  WHEN g % 1000 = 1 THEN 'dead'
                                  WHEN g % 100 = 2 THEN 'queued'
                                  ELSE 'succeeded' END AS state) AS s""")
    conn.execute("VACUUM ANALYZE jobs")
    try:
        yield conn
    finally:
        conn.execute(f'DROP SCHEMA "{schema}" CASCADE')
        conn.close()


def explain(conn: psycopg.Connection, name: str, values: dict[str, str]) -> str:
    sql, names = _positional(Q[name])
    if not names:
        return "\n".join(r[0] for r in conn.execute(f"EXPLAIN {sql}"))
    conn.execute("DEALLOCATE ALL")
    conn.execute(f"PREPARE s AS {sql}")
    args = ", ".join(values[n] for n in names)
    return "\n".join(r[0] for r in conn.execute(f"EXPLAIN EXECUTE s ({args})"))


def test_queue_backlog_scans_partial_indexes_only(million) -> None:
    plan = explain(million, "queue_backlog", {})
    assert "Seq Scan" not in plan, plan
    # each state through its partial index (an index or bitmap scan: rows of that
    # state only, however many finished rows the table holds)
    assert "jobs_claim_idx" in plan, plan
    assert "jobs_running_idx" in plan, plan
    assert "jobs_dead_idx" in plan or "jobs_dead_finished_idx" in plan, plan  # both partial
    rows = million.execute(Q["queue_backlog"]).fetchall()
    queued = sum(n for _, state, n, _ in rows if state == "queued")
    assert queued == ROWS // 100


@pytest.mark.parametrize(
    "values",
    [
        {"state": "NULL", "queue": "NULL", "actor": "NULL", "error": "NULL", "tag": "NULL"},
        {"state": "'succeeded'", "queue": "'q1'", "actor": "NULL", "error": "NULL", "tag": "'x'"},
        {"state": "'dead'", "queue": "NULL", "actor": "'a3'", "error": "'nope'", "tag": "NULL"},
    ],
    ids=["all", "state+queue", "dead+actor+error"],
)
def test_a_page_of_jobs_walks_the_primary_key(million, values) -> None:
    # the store never prepares browse_jobs: each page is planned with its values
    million.execute("SET plan_cache_mode = force_custom_plan")
    (cursor,) = million.execute(
        "SELECT id FROM jobs WHERE state = 'queued' ORDER BY id DESC OFFSET 500 LIMIT 1"
    ).fetchone()
    bounds = {"before": f"'{cursor}'::uuid", "id_low": "'00000000-0000-0000-0000-000000000000'"}
    plan = explain(million, "browse_jobs", {**values, **bounds, "limit": "50"})
    assert "Seq Scan" not in plan and "Limit" in plan, plan
    if values["tag"] != "NULL":
        # a tag: the jobs carrying it, through the GIN index of tagged rows
        assert "jobs_tags_idx" in plan, plan
    elif values["state"] == "'dead'":
        # dead letters: the planner may read them all through their partial index and
        # sort (bounded by the dead rows, not the table) or walk the primary key
        assert (
            "jobs_dead_idx" in plan
            or "jobs_dead_finished_idx" in plan
            or "Index Scan Backward using jobs_pkey" in plan
        ), plan
    else:
        assert "Index Scan Backward using jobs_pkey" in plan and "Sort" not in plan, plan
