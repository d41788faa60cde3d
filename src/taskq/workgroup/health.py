"""Database health checks of one child, exactly as the workgroup guide describes.

Every ``check_interval`` seconds, after ``startup_grace``, the supervisor reads the newest
worker row for (its instance, the child's label). The child is healthy when the row
exists, its ``pid`` is the child's and its ``last_seen_at`` is within ``stale_after`` of
the store's clock. A query that fails is tolerated ``consecutive_failure_limit - 1``
times in a row; the next failure declares the child dead. A hung child (SIGSTOPped,
deadlocked, its loop blocked) stops heartbeating and is caught by the staleness rule.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from uuid import UUID

from ..events import WORKGROUP_HEALTH_QUERY_FAILED
from ..logs import get_logger
from ..store import Store
from .config import HealthConfig

log = get_logger(__name__)


async def probe(
    store: Store, instance: UUID, name: str, pid: int, stale_after: float
) -> str | None:
    """None when healthy, else why not."""
    row = await store.find_worker(instance, name)
    if row is None:
        return "no worker row registered for this child"
    if row.pid != pid:
        return f"the newest worker row has pid {row.pid}, the child is pid {pid}"
    if row.last_seen_at is None:
        return "the worker row has never heartbeated"
    age = (await store.now() - row.last_seen_at).total_seconds()
    if age > stale_after:
        return f"heartbeat stale: last seen {age:.1f}s ago (stale_after {stale_after:g}s)"
    return None


async def watch(
    store: Store,
    instance: UUID,
    name: str,
    pid: int,
    health: HealthConfig,
    on_healthy: Callable[[], None],
) -> str:
    """Check until the child looks dead; return the reason. Cancel it when the child exits."""
    await asyncio.sleep(health.startup_grace)
    failures = 0
    while True:
        try:
            reason = await asyncio.wait_for(
                probe(store, instance, name, pid, health.stale_after),
                timeout=max(health.check_interval, 1.0),
            )
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            failures += 1
            error = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            log.event(
                WORKGROUP_HEALTH_QUERY_FAILED,
                worker=name,
                child_pid=pid,
                error=error,
                consecutive_failures=failures,
                limit=health.consecutive_failure_limit,
            )
            if failures >= health.consecutive_failure_limit:
                return f"health query failed {failures} times in a row (last: {error})"
        else:
            failures = 0
            if reason is not None:
                return reason
            on_healthy()
        await asyncio.sleep(health.check_interval)
