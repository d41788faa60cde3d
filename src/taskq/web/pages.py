"""The dashboard's job pages (GET only; nothing here changes anything): jobs and the
job search, one job, dead letters, workflows; and what every page module shares
(``render``, ``param``, ``store_of``, ``insight_of``). The queue pages are in
``queue_pages.py``, the fleet's (workers, schedules, actors) in ``fleet_pages.py``.

Each page renders whole; its live part (``#live``) re-fetches the same URL every few
seconds with htmx and swaps itself in (``hx-select``), so a page stays current without
a reload and without a second set of endpoints.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from .. import redaction
from ..insight import JobFilter
from ..jobs import ALL_STATES, Job
from ..store import Insight, Store
from ..validation import text_problem
from .actions import BULK_CAP

PAGE_SIZE = 50
#: the longest filter value a page accepts
MAX_PARAM_CHARS = 200


def store_of(request: Request) -> Store:
    store: Store = request.app.state.store
    return store


def insight_of(request: Request) -> Insight:
    """The operator's views of the dashboard's store."""
    return store_of(request).insight


def render(request: Request, template: str, **context: Any) -> Response:
    return request.app.state.pages.render(request, template, **context)  # type: ignore[no-any-return]


def bad_request(why: str) -> HTTPException:
    return HTTPException(400, why)


def param(request: Request, name: str) -> str | None:
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


def filters_of(request: Request) -> JobFilter:
    state = param(request, "state")
    if state is not None and state not in ALL_STATES:
        raise bad_request(f"unknown state: use one of {', '.join(ALL_STATES)}")
    return JobFilter(
        state=state,
        queue=param(request, "queue"),
        actor=param(request, "actor"),
        tag=param(request, "tag"),
        error=param(request, "error"),
        id_prefix=param(request, "id"),
        args=param(request, "args"),
        meta=param(request, "meta"),
    )


def _cursor(request: Request) -> UUID | None:
    before = param(request, "before")
    if before is None:
        return None
    try:
        return UUID(before)
    except ValueError:
        raise bad_request("before= is not a job id") from None


async def _job_page(request: Request, filters: JobFilter) -> tuple[list[Job], UUID | None]:
    """One page of jobs matching ``filters`` from the request's cursor on, and the cursor
    of the next page (None on the last)."""
    page = await insight_of(request).browse_jobs(
        filters, before=_cursor(request), limit=PAGE_SIZE + 1
    )
    more = len(page) > PAGE_SIZE
    page = page[:PAGE_SIZE]
    return page, page[-1].id if more else None


async def jobs(request: Request) -> Response:
    filters = filters_of(request)
    page, next_before = await _job_page(request, filters)
    matching = None
    if request.app.state.settings.allow_actions and not filters.searches:
        matching = await insight_of(request).count_jobs(filters, cap=BULK_CAP + 1)
    return render(
        request,
        "jobs.html",
        jobs=page,
        filters=filters,
        states=ALL_STATES,
        next_before=next_before,
        matching=matching,
        bulk_cap=BULK_CAP,
        page="jobs",
    )


async def dead(request: Request) -> Response:
    queue = param(request, "queue")
    page, next_before = await _job_page(request, JobFilter(state="dead", queue=queue))
    total = sum(
        d.dead for d in await insight_of(request).queue_backlog() if not queue or d.queue == queue
    )
    return render(
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
    store = store_of(request)
    found = await store.get_job(job_id)
    if found is None:
        return render(request, "missing.html", job_id=job_id, page="jobs", status=404)
    meta = found.meta
    args, kwargs, hidden = redaction.arguments(found.args, found.kwargs, meta)
    duration = (
        (found.finished_at - found.started_at).total_seconds()
        if found.finished_at and found.started_at
        else None
    )
    workers = {w.id: w for w in await store.insight.list_workers()}
    return render(
        request,
        "job.html",
        job=found,
        workers=workers,
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


#: the most steps a workflow's page lists (a run may hold 10,000)
STEPS_LISTED = 500


async def workflows(request: Request) -> Response:
    from ..workflows.model import WorkflowState

    state = param(request, "state")
    states = [s.value for s in WorkflowState]
    if state is not None and state not in states:
        raise bad_request(f"unknown state: use one of {', '.join(states)}")
    found = await insight_of(request).list_workflows(state=state, limit=PAGE_SIZE)
    return render(
        request, "workflows.html", workflows=found, states=states, state=state, page="workflows"
    )


async def workflow(request: Request) -> Response:
    from .graph import MAX_DRAWN, draw

    try:
        workflow_id = UUID(request.path_params["workflow_id"])
    except ValueError:
        raise HTTPException(404, "not a workflow id") from None
    found = await store_of(request).get_workflow(workflow_id)
    if found is None:
        return render(
            request,
            "missing.html",
            what="workflow",
            job_id=workflow_id,
            page="workflows",
            status=404,
        )
    return render(
        request,
        "workflow.html",
        wf=found,
        drawing=draw(found.steps),
        max_drawn=MAX_DRAWN,
        steps=found.steps[:STEPS_LISTED],
        counts=found.counts(),
        page="workflows",
    )
