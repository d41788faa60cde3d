"""The dashboard's pages (GET only; nothing here changes anything).

Each page renders whole; its live part (``#live``) re-fetches the same URL every few
seconds with htmx and swaps itself in (``hx-select``), so a page stays current without
a reload and without a second set of endpoints.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from .. import redaction
from ..insight import JobFilter, QueueDepth, QueueStatus
from ..jobs import ALL_STATES, Job
from ..store import Insight, Store
from ..validation import text_problem

PAGE_SIZE = 50
#: the longest filter value a page accepts
MAX_PARAM_CHARS = 200
#: a workgroup that has not reported for this long is shown as gone
WORKGROUP_WINDOW = timedelta(minutes=2)


def _store(request: Request) -> Store:
    store: Store = request.app.state.store
    return store


def _insight(request: Request) -> Insight:
    """The operator's views of the dashboard's store."""
    return _store(request).insight


def _render(request: Request, template: str, **context: Any) -> Response:
    return request.app.state.pages.render(request, template, **context)  # type: ignore[no-any-return]


def bad_request(why: str) -> HTTPException:
    return HTTPException(400, why)


def _param(request: Request, name: str) -> str | None:
    """A query parameter as a filter: None when empty; 400 for text no store would take
    (a NUL, a lone surrogate) or longer than ``MAX_PARAM_CHARS``."""
    value = request.query_params.get(name, "").strip()
    if not value:
        return None
    problem = text_problem(value)
    if problem is not None:
        raise bad_request(f"the {name} filter contains {problem}")
    if len(value) > MAX_PARAM_CHARS:
        raise bad_request(f"the {name} filter is longer than {MAX_PARAM_CHARS} characters")
    return value


async def overview(request: Request) -> Response:
    store = _store(request)
    depths = {d.queue: d for d in await store.insight.queue_backlog()}
    hour = {
        a.queue: a
        for a in await store.insight.queue_activity(datetime.now(UTC) - timedelta(hours=1))
    }
    paused = {q.name for q in await store.insight.queue_statuses() if q.paused}
    names = sorted(set(depths) | set(hour))
    rows = [{"name": n, "depth": depths.get(n), "hour": hour.get(n)} for n in names]
    return _render(request, "overview.html", rows=rows, paused=paused, page="overview")


def _filters(request: Request) -> JobFilter:
    state = _param(request, "state")
    if state is not None and state not in ALL_STATES:
        raise bad_request(f"unknown state: use one of {', '.join(ALL_STATES)}")
    return JobFilter(
        state=state,
        queue=_param(request, "queue"),
        actor=_param(request, "actor"),
        tag=_param(request, "tag"),
        error=_param(request, "error"),
    )


def _cursor(request: Request) -> UUID | None:
    before = _param(request, "before")
    if before is None:
        return None
    try:
        return UUID(before)
    except ValueError:
        raise bad_request("before= is not a job id") from None


async def _job_page(request: Request, filters: JobFilter) -> tuple[list[Job], UUID | None]:
    """One page of jobs matching ``filters`` from the request's cursor on, and the cursor
    of the next page (None on the last)."""
    page = await _insight(request).browse_jobs(
        filters, before=_cursor(request), limit=PAGE_SIZE + 1
    )
    more = len(page) > PAGE_SIZE
    page = page[:PAGE_SIZE]
    return page, page[-1].id if more else None


async def jobs(request: Request) -> Response:
    filters = _filters(request)
    page, next_before = await _job_page(request, filters)
    return _render(
        request,
        "jobs.html",
        jobs=page,
        filters=filters,
        states=ALL_STATES,
        next_before=next_before,
        page="jobs",
    )


async def dead(request: Request) -> Response:
    queue = _param(request, "queue")
    page, next_before = await _job_page(request, JobFilter(state="dead", queue=queue))
    total = sum(
        d.dead for d in await _insight(request).queue_backlog() if not queue or d.queue == queue
    )
    return _render(
        request,
        "dead.html",
        jobs=page,
        queue=queue,
        total=total,
        next_before=next_before,
        page="dead",
    )


async def job(request: Request) -> Response:
    try:
        job_id = UUID(request.path_params["job_id"])
    except ValueError:
        raise HTTPException(404, "not a job id") from None
    store = _store(request)
    found = await store.get_job(job_id)
    if found is None:
        return _render(request, "missing.html", job_id=job_id, page="jobs", status=404)
    meta = found.meta
    args, kwargs, hidden = redaction.arguments(found.args, found.kwargs, meta)
    duration = (
        (found.finished_at - found.started_at).total_seconds()
        if found.finished_at and found.started_at
        else None
    )
    return _render(
        request,
        "job.html",
        job=found,
        args=args,
        kwargs=kwargs,
        hidden=hidden,
        result=redaction.result(found.result, meta),
        meta=redaction.value(meta),
        tags=found.tags,
        errors=await store.insight.job_errors(job_id),
        duration=duration,
        page="jobs",
    )


async def workers(request: Request) -> Response:
    store = _store(request)
    rows = await store.insight.list_workers()
    groups = await store.insight.list_workgroups(datetime.now(UTC) - WORKGROUP_WINDOW)
    return _render(request, "workers.html", workers=rows, workgroups=groups, page="workers")


async def queues(request: Request) -> Response:
    store = _store(request)
    infos = await store.insight.queue_statuses()
    known = {q.name for q in infos}
    recent = await store.insight.queue_activity(datetime.now(UTC) - timedelta(hours=1))
    infos += [  # queues that only finished jobs lately: listed, so they can be paused
        QueueStatus(a.queue, QueueDepth(a.queue)) for a in recent if a.queue not in known
    ]
    infos.sort(key=lambda q: q.name)
    return _render(request, "queues.html", queues=infos, page="queues")


#: the most steps a workflow's page lists (a run may hold 10,000)
STEPS_LISTED = 500


async def workflows(request: Request) -> Response:
    from ..workflows.model import WorkflowState

    state = _param(request, "state")
    states = [s.value for s in WorkflowState]
    if state is not None and state not in states:
        raise bad_request(f"unknown state: use one of {', '.join(states)}")
    found = await _insight(request).list_workflows(state=state, limit=PAGE_SIZE)
    return _render(
        request, "workflows.html", workflows=found, states=states, state=state, page="workflows"
    )


async def workflow(request: Request) -> Response:
    from .graph import MAX_DRAWN, draw

    try:
        workflow_id = UUID(request.path_params["workflow_id"])
    except ValueError:
        raise HTTPException(404, "not a workflow id") from None
    found = await _store(request).get_workflow(workflow_id)
    if found is None:
        return _render(
            request,
            "missing.html",
            what="workflow",
            job_id=workflow_id,
            page="workflows",
            status=404,
        )
    return _render(
        request,
        "workflow.html",
        wf=found,
        drawing=draw(found.steps),
        max_drawn=MAX_DRAWN,
        steps=found.steps[:STEPS_LISTED],
        counts=found.counts(),
        page="workflows",
    )
