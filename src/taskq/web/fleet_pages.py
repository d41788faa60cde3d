"""The fleet's pages: workers (alive or stale by the rule of ``taskq workers``, their
labels and workgroups, every workgroup supervisor's children), schedules (each periodic
job, its next and last tick, its missed-tick policy, as ``taskq schedules``) and actors
(their recorded options and limits, their jobs over the last hour and failure rate)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from ..jobs import Limits
from ..periodic import listing
from ..store.queues import ACTOR
from ..worker.config import STALE_AFTER
from .pages import insight_of, param, render, store_of
from .queue_pages import HOUR_SPAN, per_actor

#: a workgroup that has not reported for this long is shown as gone
WORKGROUP_WINDOW = timedelta(minutes=2)


async def workers(request: Request) -> Response:
    store = store_of(request)
    raw = param(request, "stale_after")
    try:
        stale_after = float(raw) if raw is not None else STALE_AFTER
    except ValueError:
        raise HTTPException(400, "stale_after is a number of seconds") from None
    if not 0 < stale_after < 10**9:
        raise HTTPException(400, "stale_after is a number of seconds > 0")
    now = await store.now()
    rows = [(w, *w.status(now, stale_after)) for w in await store.insight.list_workers()]
    groups = await store.insight.list_workgroups(datetime.now(UTC) - WORKGROUP_WINDOW)
    return render(
        request,
        "workers.html",
        workers=rows,
        workgroups=groups,
        stale_after=stale_after,
        page="workers",
    )


async def schedules(request: Request) -> Response:
    store = store_of(request)
    now = await store.now()
    rows = [listing(info, now) for info in await store.list_schedules()]
    return render(request, "schedules.html", schedules=rows, page="schedules")


async def actors(request: Request) -> Response:
    store = store_of(request)
    configs = await store.actor_configs()
    limits = {name: v for (kind, name), v in (await store.get_limits()).items() if kind == ACTOR}
    now = datetime.now(UTC)
    activity = await insight_of(request).activity(
        now - HOUR_SPAN, bucket=3600, by_actor=True, now=now
    )
    hour = per_actor(activity)
    rows = []
    for name in sorted(set(configs) | set(limits) | set(hour)):
        succeeded, failed, dead = hour.get(name, [0, 0, 0])
        runs = succeeded + failed
        rows.append(
            {
                "name": name,
                "config": configs.get(name),
                "limits": limits.get(name, Limits()),
                "succeeded": succeeded,
                "failed_runs": failed,
                "dead": dead,
                "failure_rate": failed / runs if runs else None,
            }
        )
    return render(request, "actors.html", actors=rows, page="actors")
