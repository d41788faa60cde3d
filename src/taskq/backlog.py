"""The fleet's backlog metrics, computed once per fleet.

``taskq_queue_jobs{queue,state}``, ``taskq_queue_oldest_age_seconds{queue}`` and
``taskq_queue_paused{queue}`` (and ``taskq_workflows_finished_total{state}``, the
store's own count of finished workflow runs) describe the whole store, so exactly one
process exports them: the holder of the ``backlog-metrics`` lease (a row in ``leaders``,
renewed at each report, taken over by another process once it lapses). Any process that
serves metrics for the fleet competes for it the same way -- a workgroup supervisor
(``workgroup/reporter.py``) and a worker outside a workgroup (``worker/backlog.py``; a
workgroup's children leave it to their supervisor) -- so a fleet of plain workers, of
workgroups, or of both reports its backlog exactly once. The holder runs one
``queue_backlog`` query (partial-index scans only) per report; ``taskq_backlog_leader``
is 1 on it and 0 on every other. The holder also counts the finished jobs of every
minute that closed for the dashboard's charts and samples the backlog's age into them
(``Insight.record_activity``), so they are counted whether or not a dashboard is open.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable

from . import metrics
from .exceptions import TaskqError
from .insight import QueueDepth
from .store import Store

LEASE_NAME = "backlog-metrics"
#: seconds between two reports of every process that competes for the lease (a
#: supervisor's and a worker's alike; the lease is held for three)
REPORT_INTERVAL = 5.0
#: the states ``taskq_queue_jobs`` reports (finished states grow without bound: their
#: rate is ``taskq_jobs_finished_total``)
BACKLOG_STATES = ("queued", "running", "dead")
#: how long giving the lease back at the end may take
LEAVE_TIMEOUT = 5.0


def export_backlog(depths: Iterable[QueueDepth], known_queues: Iterable[str]) -> None:
    """Replace the backlog gauges with ``depths``; a known queue without jobs reads 0."""
    by_queue = {d.queue: d for d in depths}
    for queue in known_queues:
        by_queue.setdefault(queue, QueueDepth(queue))
    metrics.queue_jobs.clear()
    metrics.queue_oldest_age.clear()
    for queue, depth in sorted(by_queue.items()):
        for state in BACKLOG_STATES:
            metrics.queue_jobs.labels(queue=queue, state=state).set(getattr(depth, state))
        metrics.queue_oldest_age.labels(queue=queue).set(depth.oldest_due_age)


def export_paused(paused: Iterable[str]) -> None:
    """``taskq_queue_paused{queue}``: 1 for each paused queue (a resumed one disappears)."""
    metrics.queue_paused.clear()
    for queue in paused:
        metrics.queue_paused.labels(queue=queue).set(1)


#: the end states of a workflow run (taskq_workflows_finished_total's ``state``)
WORKFLOW_ENDS = ("succeeded", "failed", "cancelled")


def export_workflows(totals: dict[str, int]) -> None:
    """``taskq_workflows_finished_total{state}``: the store's counts (they never go back;
    the counter follows them up from what this process exported before)."""
    for state in WORKFLOW_ENDS:
        child = metrics.workflows_finished.labels(state=state)
        grew = totals.get(state, 0) - child.value
        if grew > 0:
            child.inc(grew)


def clear_backlog() -> None:
    metrics.queue_jobs.clear()
    metrics.queue_oldest_age.clear()
    metrics.queue_paused.clear()
    metrics.workflows_finished.clear()


class BacklogLease:
    """One process's part in the lease: ``report`` takes or renews it and, while held,
    exports the backlog; ``lead(False)`` when the store cannot be reached; ``leave`` at
    the end. ``on_change(leading)`` is called when this process gains or loses it."""

    def __init__(
        self,
        holder: str,
        queues: Iterable[str],
        *,
        seconds: float,
        on_change: Callable[[bool], None],
    ) -> None:
        self._holder = holder
        self._queues = tuple(sorted(set(queues)))
        self._seconds = seconds
        self._on_change = on_change
        self.leading = False

    async def report(self, store: Store) -> None:
        """Take or renew the lease; while held, export the fleet's backlog."""
        leading = await store.try_lead(LEASE_NAME, self._holder, self._seconds)
        if leading:
            backlog = await store.insight.queue_backlog()
            export_backlog(backlog, self._queues)
            export_paused(await store.paused_queues())
            export_workflows(await store.insight.workflow_totals())
            # the dashboard's charts: the minutes closed since, and the backlog's age now
            await store.insight.record_activity(backlog)
        self.lead(leading)

    def lead(self, leading: bool) -> None:
        if leading != self.leading:
            self._on_change(leading)
        self.leading = leading
        metrics.backlog_leader.set(float(leading))
        if not leading:
            clear_backlog()

    async def leave(self, store: Store | None) -> None:
        """Stop exporting and give the lease back (if the store answers: else it lapses)."""
        self.lead(False)
        if store is None:
            return
        try:
            await asyncio.wait_for(store.release_lead(LEASE_NAME, self._holder), LEAVE_TIMEOUT)
        except (TaskqError, OSError, TimeoutError):
            pass  # the lease lapses on its own
