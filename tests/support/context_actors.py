"""Actors that report what ``taskq.current_job()`` shows them (the job-context tests)."""

from __future__ import annotations

from typing import Any

import taskq
from taskq import RetryBackoff

registry = taskq.Registry()
FAST = RetryBackoff(initial=0.01, maximum=0.05)


def _report(progress: float) -> dict[str, Any]:
    job = taskq.current_job()
    before = dict(job.meta)
    job.update_meta(progress=progress, seen_by=job.actor)
    return {
        "id": str(job.id),
        "actor": job.actor,
        "queue": job.queue,
        "attempt": job.attempt,
        "crash_count": job.crash_count,
        "cancel_requested": job.cancel_requested,
        "meta_before": before,
    }


@registry.actor(queue="ctx")
async def ctx_async(progress: float) -> dict[str, Any]:
    return _report(progress)


@registry.actor(queue="ctx")
def ctx_sync(progress: float) -> dict[str, Any]:
    return _report(progress)


@registry.actor(queue="ctx", cpu_bound=True)
def ctx_cpu(progress: float) -> dict[str, Any]:
    return _report(progress)


@registry.actor(queue="ctx", max_attempts=3, retry_backoff=FAST)
async def ctx_counts_tries() -> int:
    """Fails twice; each run adds to meta, and the failed runs' meta is kept too."""
    job = taskq.current_job()
    tries = int(job.meta.get("tries", 0)) + 1
    job.update_meta({"tries": tries})
    if tries < 3:
        raise RuntimeError(f"try {tries}")
    return tries


@registry.actor(queue="ctx", cpu_bound=True, max_attempts=2, retry_backoff=FAST)
def ctx_cpu_fails_once() -> int:
    job = taskq.current_job()
    job.update_meta(last_attempt=job.attempt)
    if job.attempt == 1:
        raise RuntimeError("first try")
    return job.attempt


@registry.actor(queue="ctx", max_attempts=1)
async def ctx_meta_too_big() -> None:
    taskq.current_job().update_meta(blob="x" * 100_000)
