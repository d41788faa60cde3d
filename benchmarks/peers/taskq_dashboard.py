"""(n) the dashboard's pages against a store of ``--n`` finished jobs (issue 23: 10M).

The jobs table is filled in one statement (Postgres: ``generate_series``; SQLite: a
recursive CTE): ``--n`` finished jobs spread evenly over the last 7 days (the default
retention of succeeded jobs), 5 queues, 7 actors, one in 1,000 dead with its failed run
in ``job_errors``, ids time-ordered as taskq's UUIDv7 are; then 10,000 queued jobs due an
hour ago (a backlog). Then, as in production:

- ``first_count_s``: the first count of the charts' minutes (a day of them: what a
  dashboard or the backlog leader does once when the store has never been counted);
- ``minute_count_ms``: counting one more closed minute (what happens once a minute);
- each page, served by the real Starlette app over this store in process
  (``TestClient``): ``--single`` requests after 2 untimed, ``pages.<page>.p50_ms`` and
  ``p95_ms``, and ``worst_p50_ms`` over the pages of the target (every page but the
  search, which looks at up to 100,000 jobs: ``search_*``, reported apart).
"""

from __future__ import annotations

import statistics
import time
from datetime import UTC, datetime, timedelta
from typing import Any

DAYS = 7
QUEUED = 10_000

PG_FILL = """
INSERT INTO {schema}.jobs (id, actor, queue, args, kwargs, priority, state, attempt,
                           max_attempts, max_crashes, idempotent, run_at, created_at,
                           started_at, finished_at, dead_reason, last_error)
SELECT (substr(ts, 1, 8) || '-' || substr(ts, 9, 4) || '-7' || lpad(to_hex(g %% 4096), 3, '0')
        || '-8000-' || lpad(to_hex(g), 12, '0'))::uuid,
       'actor' || (g %% 7), 'q' || (g %% 5), ('["x", ' || g || ']')::json, '{{}}', 0,
       CASE WHEN g %% 1000 = 0 THEN 'dead' ELSE 'succeeded' END, 1, 3, 2, true,
       t, t, t, t + interval '5 milliseconds',
       CASE WHEN g %% 1000 = 0 THEN 'failed' END,
       CASE WHEN g %% 1000 = 0 THEN 'ValueError: no' END
FROM generate_series(1, %(n)s) AS g,
     LATERAL (SELECT now() - %(days)s * interval '1 day' * (1 - g::float8 / %(n)s) AS t) AS at,
     LATERAL (SELECT lpad(to_hex((extract(epoch FROM t) * 1000)::bigint), 12, '0') AS ts) AS hex
"""
PG_QUEUED = """
INSERT INTO {schema}.jobs (id, actor, queue, args, kwargs, priority, state, attempt,
                           max_attempts, max_crashes, idempotent, run_at, created_at)
SELECT gen_random_uuid(), 'actor' || (g %% 7), 'q' || (g %% 5), '["y"]', '{{}}', 0, 'queued',
       0, 3, 2, true, now() - interval '1 hour', now() - interval '1 hour'
FROM generate_series(1, %(n)s) AS g
"""
PG_ERRORS = """
INSERT INTO {schema}.job_errors (job_id, attempt, at, crash, worker_id, error)
SELECT id, 1, finished_at, false, NULL, last_error FROM {schema}.jobs WHERE state = 'dead'
"""

SQLITE_FILL = """
WITH RECURSIVE g(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM g WHERE x < :n)
INSERT INTO jobs (id, actor, queue, args, kwargs, priority, state, attempt, max_attempts,
                  max_crashes, idempotent, run_at, created_at, started_at, finished_at,
                  dead_reason, last_error)
SELECT printf('%08x-%04x-7%03x-8000-%012x', ms >> 16, ms & 65535, x % 4096, x),
       'actor' || (x % 7), 'q' || (x % 5), '["x", ' || x || ']', '{}', 0,
       CASE WHEN x % 1000 = 0 THEN 'dead' ELSE 'succeeded' END, 1, 3, 2, 1,
       t, t, t, t + 0.005,
       CASE WHEN x % 1000 = 0 THEN 'failed' END,
       CASE WHEN x % 1000 = 0 THEN 'ValueError: no' END
FROM (SELECT x, :now - :days * 86400.0 * (1 - x * 1.0 / :n) AS t,
             CAST((:now - :days * 86400.0 * (1 - x * 1.0 / :n)) * 1000 AS INTEGER) AS ms
      FROM g) WHERE true
"""
SQLITE_QUEUED = """
WITH RECURSIVE g(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM g WHERE x < :n)
INSERT INTO jobs (id, actor, queue, args, kwargs, priority, state, attempt, max_attempts,
                  max_crashes, idempotent, run_at, created_at)
SELECT printf('ffffffff-0000-7000-9000-%012x', x), 'actor' || (x % 7), 'q' || (x % 5),
       '["y"]', '{}', 0, 'queued', 0, 3, 2, 1, :now - 3600, :now - 3600
FROM g WHERE true
"""
SQLITE_ERRORS = """
INSERT INTO job_errors (job_id, attempt, at, crash, worker_id, error)
SELECT id, 1, finished_at, 0, NULL, last_error FROM jobs WHERE state = 'dead'
"""


def fill(dsn: str, schema: str, n: int) -> float:
    """Fill the jobs table (emptied first); seconds it took."""
    started = time.perf_counter()
    if dsn.startswith("sqlite:"):
        import sqlite3

        from taskq.settings import sqlite_path

        with sqlite3.connect(sqlite_path(dsn), isolation_level=None) as db:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("BEGIN IMMEDIATE")
            for table in ("job_errors", "jobs", "queue_minutes", "rollups"):
                db.execute(f"DELETE FROM {table}")
            params = {"n": n, "days": DAYS, "now": time.time()}
            db.execute(SQLITE_FILL, params)
            db.execute(SQLITE_QUEUED, {"n": QUEUED, "now": params["now"]})
            db.execute(SQLITE_ERRORS)
            db.execute("COMMIT")
            db.execute("ANALYZE")
    else:
        import psycopg

        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(
                f"TRUNCATE {schema}.jobs, {schema}.queue_minutes, {schema}.rollups CASCADE"
            )
            conn.execute(PG_FILL.format(schema=schema), {"n": n, "days": DAYS})
            conn.execute(PG_QUEUED.format(schema=schema), {"n": QUEUED})
            conn.execute(PG_ERRORS.format(schema=schema))
            conn.execute(f"VACUUM ANALYZE {schema}.jobs")
            conn.execute(f"VACUUM ANALYZE {schema}.job_errors")
    return time.perf_counter() - started


def _timed(web: Any, path: str, rounds: int) -> list[float]:
    for _ in range(2):
        web.get(path)
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        response = web.get(path)
        times.append((time.perf_counter() - t0) * 1000.0)
        if response.status_code != 200:
            raise RuntimeError(f"GET {path}: {response.status_code} {response.text[:200]}")
    return times


def dashboard(peer: Any, args: Any) -> dict:
    from starlette.testclient import TestClient

    from taskq.web import DashboardSettings, create_app

    store = peer.store
    build_s = fill(peer.dsn, "taskq", args.n)
    insight = store.insight
    runner = peer.runner
    t0 = time.perf_counter()
    runner.run(insight.record_activity())
    first_count_s = time.perf_counter() - t0
    later = datetime.now(UTC) + timedelta(minutes=1)
    t0 = time.perf_counter()
    runner.run(insight.record_activity(now=later))  # one more closed minute
    minute_count_ms = (time.perf_counter() - t0) * 1000.0
    dead = runner.run(store.list_jobs(state="dead", limit=1))[0].id
    pages = {
        "overview": "/",
        "queue": "/queues/q1",
        "queues": "/queues",
        "jobs": "/jobs",
        "jobs_dead_queue": "/jobs?state=dead&queue=q2",
        "dead": "/dead",
        "job": f"/jobs/{dead}",
        "actors": "/actors",
        "schedules": "/schedules",
        "workers": "/workers",
        "search_id": f"/jobs?id={str(dead)[:13]}",
        "search_args_match": '/jobs?args=["x"]',
        "search_args_none": '/jobs?args=["nowhere"]',
    }
    settings = DashboardSettings(dsn=peer.dsn, schema="taskq", allowed_hosts=("testserver",))
    out: dict[str, dict[str, float]] = {}

    with TestClient(create_app(settings)) as web:  # its own store, on its own loop
        for name, path in pages.items():
            times = _timed(web, path, args.single)
            out[name] = {
                "p50_ms": statistics.median(times),
                "p95_ms": sorted(times)[max(0, int(len(times) * 0.95) - 1)],
            }
    target = [v["p50_ms"] for k, v in out.items() if not k.startswith("search_")]
    return {
        "rows": args.n,
        "build_s": build_s,
        "first_count_s": first_count_s,
        "minute_count_ms": minute_count_ms,
        "pages": out,
        "worst_p50_ms": max(target),
    }
