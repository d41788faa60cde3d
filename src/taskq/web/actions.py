"""The dashboard's actions (POST only, ``--allow-actions``): retry, discard and cancel
jobs (one or many), pause and resume queues, set their limits.

Every action needs actions enabled, an authenticated caller (``security.who``) and the
CSRF token; each is logged as ``dashboard-action`` with who did it, from where, and
what it touched. A form's ``next`` (a path on this site) is where the browser goes back
to, with the outcome in ``done``.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlencode
from uuid import UUID

from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response

from ..events import DASHBOARD_ACTION, DASHBOARD_ACTION_REFUSED
from ..exceptions import ConfigError, TaskqError
from ..insight import JobFilter
from ..jobs import ALL_STATES, CancelResult
from ..logs import get_logger
from ..store import Store
from ..validation import check_text
from . import csrf

log = get_logger(__name__)

#: how many dead jobs one round of "discard all" deletes
DISCARD_BATCH = 500


def _refuse(status: int, why: str) -> Response:
    return PlainTextResponse(why + "\n", status_code=status)


async def _checked(request: Request) -> tuple[FormData, str] | Response:
    """The form and who sent it, or the refusal."""
    if not request.app.state.settings.allow_actions:
        return _refuse(403, "actions are disabled: start the dashboard with --allow-actions")
    caller = getattr(request.state, "who", None)
    if caller is None or caller == "anonymous":
        return _refuse(401, "actions need TASKQ_DASHBOARD_TOKEN")
    why = csrf.same_origin(request)
    if why is not None:
        _refused(request, caller, why)
        return _refuse(403, f"refused: {why}; act from the dashboard's own pages")
    form = await request.form()
    submitted = form.get(csrf.CSRF_FIELD) or request.headers.get(csrf.CSRF_HEADER)
    if not csrf.token_ok(
        request.app.state.secret,
        csrf.session_of(request),
        caller,
        submitted if isinstance(submitted, str) else None,
    ):
        _refused(request, caller, "a CSRF token not minted for this session and user")
        return _refuse(403, "CSRF check failed: reload the page and try again")
    return form, caller


def _refused(request: Request, caller: str, why: str) -> None:
    origin = request.headers.get("origin") or request.headers.get("referer")
    log.event(
        DASHBOARD_ACTION_REFUSED,
        client=request.client.host if request.client else None,
        who=caller,
        origin=origin[:200] if origin else None,
        why=why,
    )


_NEXT = re.compile(r"^/(?![/\\])[^\s\\]*$")


def _back(form: FormData, done: str) -> Response:
    """Back to the form's ``next``: a path on this site (never ``//host`` or ``/\\host``,
    which a browser takes for another site), else the overview."""
    target = form.get("next")
    path = target if isinstance(target, str) and _NEXT.match(target) else "/"
    sep = "&" if "?" in path else "?"
    return RedirectResponse(f"{path}{sep}{urlencode({'done': done})}", status_code=303)


def _ids(form: FormData) -> list[UUID]:
    out = []
    for value in form.getlist("id"):
        try:
            out.append(UUID(str(value)))
        except ValueError:
            continue
    return out


def _log(request: Request, caller: str, action: str, **fields: Any) -> None:
    client = request.client.host if request.client else None
    log.event(DASHBOARD_ACTION, action=action, who=caller, client=client, **fields)


async def _discard_all_dead(store: Store, queue: str | None) -> int:
    total = 0
    while True:
        page = await store.insight.browse_jobs(
            JobFilter(state="dead", queue=queue), limit=DISCARD_BATCH
        )
        if not page:
            return total
        total += len(await store.insight.discard_jobs([j.id for j in page]))


#: the most jobs one bulk action touches (what /jobs counts up to and offers to confirm)
BULK_CAP = 10_000
#: jobs a bulk action reads and acts on at a time
BULK_BATCH = 500


def _bulk_filter(form: FormData) -> JobFilter:
    """The /jobs filter a bulk form carries (its search by arguments or meta never)."""
    values: dict[str, str | None] = {}
    for field in ("state", "queue", "actor", "tag", "error", "id_prefix"):
        raw = form.get(field)
        text = raw.strip() if isinstance(raw, str) else ""
        values[field] = check_text(text, field) if text else None
    if values["state"] is not None and values["state"] not in ALL_STATES:
        raise ConfigError(f"unknown state {values['state']!r:.40}")
    return JobFilter(**values)


async def _bulk(store: Store, filters: JobFilter, action: str, by: str) -> tuple[int, int]:
    """Retry (dead or cancelled) or cancel (queued or running) every job ``filters``
    keep, ``BULK_CAP`` at most, newest first, a page at a time: (looked at, changed)."""
    seen = changed = 0
    before = None
    while seen < BULK_CAP:
        page = await store.insight.browse_jobs(
            filters, before=before, limit=min(BULK_BATCH, BULK_CAP - seen)
        )
        if not page:
            break
        ids = [j.id for j in page]
        seen += len(ids)
        before = ids[-1]
        if action == "retry":
            changed += len(await store.retry_jobs(ids))
        else:
            results = await store.request_cancel(ids, by=by)
            changed += sum(r is not CancelResult.FINISHED for r, _ in results.values())
    return seen, changed


async def act(request: Request) -> Response:
    checked = await _checked(request)
    if isinstance(checked, Response):
        return checked
    form, caller = checked
    store: Store = request.app.state.store
    action = request.path_params["action"]
    if action in ("bulk-retry", "bulk-cancel"):
        try:
            filters = _bulk_filter(form)
        except TaskqError as exc:
            return _refuse(400, f"{action}: {exc}")
        kind = action.removeprefix("bulk-")
        seen, count = await _bulk(store, filters, kind, f"dashboard:{caller}")
        _log(request, caller, action, filter=str(filters), requested=seen, count=count)
        verb = "re-queued" if kind == "retry" else "cancelled or being stopped"
        return _back(form, f"{count} of {seen} matching job(s) {verb}")
    ids = _ids(form)
    every = form.get("all") == "dead"
    queue = form.get("queue") or None
    queue = check_text(queue, "queue") if isinstance(queue, str) else None
    if action == "retry":
        if every:
            count = await store.retry_all_dead()
        else:
            count = len(await store.retry_jobs(ids))
        done = f"{count} job(s) re-queued"
    elif action == "discard":
        if every:
            count = await _discard_all_dead(store, queue)
        else:
            count = len(await store.insight.discard_jobs(ids))
        done = f"{count} job(s) discarded"
    elif action == "cancel":  # queued: cancelled now; running: its worker stops it
        results = await store.request_cancel(ids, by=f"dashboard:{caller}")
        count = sum(result is not CancelResult.FINISHED for result, _ in results.values())
        done = f"{count} job(s) cancelled or being stopped"
    elif action == "cancel-workflow":  # its queued steps now, its running ones asked to stop
        try:
            workflow_id = UUID(str(form.get("workflow", "")))
        except ValueError:
            return _refuse(400, "no workflow id")
        moved = await store.cancel_workflow(workflow_id, by=f"dashboard:{caller}")
        if moved is None:
            return _refuse(404, f"no workflow {workflow_id}")
        count = moved
        ids = [workflow_id]
        done = f"workflow cancelled: {count} step(s) cancelled or being stopped"
    else:
        return _refuse(404, f"no action {action!r}")
    _log(
        request,
        caller,
        action,
        jobs=[str(i) for i in ids[:100]],
        requested=len(ids),
        all_dead=every,
        queue=queue,
        count=count,
    )
    return _back(form, done)


async def queue_act(request: Request) -> Response:
    checked = await _checked(request)
    if isinstance(checked, Response):
        return checked
    form, caller = checked
    client = request.app.state.client
    name, action = request.path_params["name"], request.path_params["action"]
    try:
        if action == "pause":
            await client.pause_queue(name, by=f"{caller} (dashboard)")
            done = f"queue {name} paused"
        elif action == "resume":
            await client.resume_queue(name)
            done = f"queue {name} resumed"
        elif action == "limits":
            concurrency = str(form.get("concurrency") or "").strip()
            rate = str(form.get("rate") or "").strip()
            await client.set_queue_limits(
                name, concurrency=int(concurrency) if concurrency else None, rate=rate or None
            )
            done = f"queue {name} limits set"
        else:
            return _refuse(404, f"no queue action {action!r}")
    except (TaskqError, ValueError) as exc:
        return _refuse(400, f"{action} {name}: {exc}")
    _log(
        request,
        caller,
        f"queue_{action}",
        queue=name,
        form={k: str(v) for k, v in form.items() if k != "csrf"},
    )
    return _back(form, done)
