"""(h) worker RSS over 1,000,000 jobs: one worker drains a steady stream (enqueued in
chunks of 10,000); /proc/<pid>/status VmRSS sampled every second; the first and last
tenth are those of the jobs done (samples while the first 100,000 had finished, and
after 900,000 had)."""

from __future__ import annotations

from .base import Case, Metric

TARGET_JOBS = 1_000_000

CASES = (
    Case(
        id="rss",
        family="rss",
        title="(h) worker RSS over a long drain",
        script_scenario="rss",
        subject="taskq",
        peers=(),
        full={"n": TARGET_JOBS, "interval": 1.0, "timeout": 3000},
        quick={"n": 5000, "interval": 0.2, "timeout": 120},
        metrics=(
            Metric("rss_start_mib", "RSS, first tenth", "MiB", False, 1),
            Metric("rss_end_mib", "RSS, last tenth", "MiB", False, 1),
            Metric("rss_max_mib", "RSS, max", "MiB", False, 1),
            Metric("jobs_per_s", "sustained drain while enqueueing", "jobs/s"),
        ),
        timeout=3600,
        full_runs=1,
    ),
)
