"""The queue pages: the overview (every queue, charts over time of the whole store),
``/queues`` (pause, resume, limits) and ``/queues/<name>`` (one queue's charts, its
actors over the last hour).

Each page first lets the store count the minutes that closed since the last count and
samples the backlog's age (``Insight.record_activity``; the backlog-metrics leader does
the same when no dashboard is open), then reads the charts' buckets
(``Insight.activity``: at most a day of minutes, summed in the store).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from ..exceptions import ConfigError, StoreError
from ..insight import QueueDepth, QueueMinute, QueueStatus
from ..registry import check_queue_name
from ..store import Insight
from .charts import DAY, HOUR, backlog, throughput
from .pages import insight_of, render

HOUR_SPAN = timedelta(hours=1)


async def _recorded(insight: Insight) -> list[QueueStatus]:
    """Every queue's status now (its backlog included), after counting the closed
    minutes and sampling the backlog's ages (a dashboard that may not write leaves that
    to the backlog-metrics leader)."""
    statuses = await insight.queue_statuses()
    try:
        await insight.record_activity([q.backlog for q in statuses])
    except StoreError:
        pass  # a read-only role: the leader counts; the charts still read
    return statuses


async def _charts(insight: Insight, now: datetime, queue: str | None) -> dict[str, object]:
    day = await insight.activity(DAY.start(now), bucket=DAY.bucket, queue=queue, now=now)
    hour = await insight.activity(HOUR.start(now), bucket=HOUR.bucket, queue=queue, now=now)
    return {
        "throughput": [
            ("chart-hour", throughput(hour, HOUR, now, "Jobs finished per minute, last hour")),
            ("chart-day", throughput(day, DAY, now, "Jobs finished per 15 minutes, last day")),
        ],
        "backlog": [
            ("age-hour", backlog(hour, HOUR, now, "Oldest due job's wait, last hour")),
            ("age-day", backlog(day, DAY, now, "Oldest due job's wait, last day")),
        ],
        "hour_rows": hour,
    }


def hour_totals(rows: Sequence[QueueMinute], now: datetime) -> dict[str, QueueMinute]:
    """Per queue over the last hour: succeeded, failed runs, dead (summed minutes)."""
    since = now - HOUR_SPAN
    out: dict[str, QueueMinute] = {}
    for r in rows:
        if r.minute < since.replace(second=0, microsecond=0):
            continue
        seen = out.get(r.queue) or QueueMinute(since, r.queue)
        out[r.queue] = QueueMinute(
            since,
            r.queue,
            "",
            seen.succeeded + r.succeeded,
            seen.failed_runs + r.failed_runs,
            seen.dead + r.dead,
        )
    return out


def per_actor(rows: Sequence[QueueMinute]) -> dict[str, list[int]]:
    """``[succeeded, failed runs, dead]`` per actor, summed over ``rows`` (read with
    ``by_actor``)."""
    out: dict[str, list[int]] = {}
    for r in rows:
        if not r.actor:  # a backlog sample (the queue's, no actor's)
            continue
        sums = out.setdefault(r.actor, [0, 0, 0])
        sums[0] += r.succeeded
        sums[1] += r.failed_runs
        sums[2] += r.dead
    return out


def failure_rate(m: QueueMinute | None) -> float | None:
    if m is None:
        return None
    runs = m.succeeded + m.failed_runs
    return m.failed_runs / runs if runs else None


async def overview(request: Request) -> Response:
    insight = insight_of(request)
    statuses = await _recorded(insight)
    depths = {
        q.name: q.backlog
        for q in statuses
        if q.backlog.queued or q.backlog.running or q.backlog.dead
    }
    now = datetime.now(UTC)
    charts = await _charts(insight, now, None)
    hour = hour_totals(charts.pop("hour_rows"), now)  # type: ignore[arg-type]
    paused = {q.name for q in statuses if q.paused}
    names = sorted(set(depths) | set(hour))
    rows = [
        {"name": n, "depth": depths.get(n), "hour": hour.get(n), "rate": failure_rate(hour.get(n))}
        for n in names
    ]
    return render(request, "overview.html", rows=rows, paused=paused, page="overview", **charts)


async def queues(request: Request) -> Response:
    insight = insight_of(request)
    infos = await insight.queue_statuses()
    known = {q.name for q in infos}
    now = datetime.now(UTC)
    recent = await insight.activity(now - HOUR_SPAN, bucket=3600, now=now)
    infos += [  # queues that only finished jobs lately: listed, so they can be paused
        QueueStatus(name, QueueDepth(name)) for name in sorted({r.queue for r in recent} - known)
    ]
    infos.sort(key=lambda q: q.name)
    return render(request, "queues.html", queues=infos, page="queues")


async def queue(request: Request) -> Response:
    name = request.path_params["name"]
    try:
        check_queue_name(name)
    except ConfigError:
        raise HTTPException(404, "not a queue name") from None
    insight = insight_of(request)
    statuses = await _recorded(insight)
    now = datetime.now(UTC)
    charts = await _charts(insight, now, name)
    charts.pop("hour_rows")
    status = next((q for q in statuses if q.name == name), None)
    rows = await insight.activity(now - HOUR_SPAN, bucket=3600, queue=name, by_actor=True)
    by_actor = per_actor(rows)
    return render(
        request,
        "queue.html",
        name=name,
        queue_status=status,
        actors=sorted(by_actor.items()),
        page="queues",
        **charts,
    )
