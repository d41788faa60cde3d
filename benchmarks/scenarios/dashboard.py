"""(n) the dashboard's pages against 10M finished jobs (issue 23: each page under 100 ms
on Postgres and SQLite): the overview with its charts, a queue's page, queues, jobs, a
filtered job page, dead letters, one job, actors, schedules, workers; the first count of
the charts' minutes and one minute's count; the job search apart (it looks at up to
100,000 jobs). Rows built in one statement (peers/taskq_dashboard.py)."""

from __future__ import annotations

from .base import Case, Metric

#: finished jobs the target names (issue 23)
ROWS = 10_000_000

PAGES = (
    "overview",
    "queue",
    "queues",
    "jobs",
    "jobs_dead_queue",
    "dead",
    "job",
    "actors",
    "schedules",
    "workers",
    "search_id",
    "search_args_match",
    "search_args_none",
)


def _metrics(store: str) -> tuple[Metric, ...]:
    return (
        Metric("worst_p50_ms", f"{store}: slowest page (p50), search aside", "ms", False, 1),
        *(Metric(f"pages.{p}.p50_ms", f"{store}: page {p}, p50", "ms", False, 1) for p in PAGES),
        Metric("first_count_s", f"{store}: first count of a day of minutes", "s", False, 2),
        Metric("minute_count_ms", f"{store}: one more minute counted", "ms", False, 1),
        Metric("build_s", f"{store}: building the rows", "s", False, 0),
    )


def _case(subject: str, suffix: str) -> Case:
    return Case(
        id=f"dashboard{suffix}",
        family="dashboard",
        title=f"(n) dashboard pages at 10M finished jobs{' (SQLite)' if suffix else ''}",
        script_scenario="dashboard",
        subject=subject,
        peers=(),
        full={"n": ROWS, "single": 20},
        quick={"n": 20_000, "single": 3},
        metrics=_metrics("SQLite" if suffix else "Postgres"),
        timeout=3600,
        full_runs=1,
        notes="10M finished jobs over 7 days, 5 queues, 7 actors, 0.1% dead, 10,000 queued; "
        "the real app in process (Starlette TestClient); 20 requests a page after 2.",
    )


CASES = (_case("taskq", ""), _case("taskq-sqlite", "_sqlite"))
