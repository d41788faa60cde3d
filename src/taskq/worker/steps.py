"""What a worker does around the run of a workflow's step (docs/workflows.md).

Before the run: read the results of its upstream steps (one query, only for a step
that has upstream steps) into ``current_job().upstream``. After a successful run: the
steps it added to its workflow (``current_job().fan_out``) become rows that go with its
outcome (``Outcome.added``; the acker writes both in one transaction). A job outside a
workflow never reaches this module (the executor checks ``job.workflow_id``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from typing import Any
from uuid import UUID

from ..context import JobContext, StepRun
from ..events import STEP_UPSTREAM_UNREADABLE, STEPS_ADDED
from ..exceptions import StoreError, TaskqError
from ..jobs import ClaimedJob, DeadReason, Outcome, OutcomeKind
from ..logs import get_logger
from ..registry import AnyActor
from . import outcomes

log = get_logger(__name__)

UpstreamReader = Callable[[UUID], Awaitable[dict[str, Any]]]


class Steps:
    """``upstream``: the store's ``upstream_results``; ``actors``: the worker's actors
    by name (an added step given by name is the worker's actor of that name)."""

    def __init__(self, upstream: UpstreamReader | None, actors: Mapping[str, AnyActor]) -> None:
        self._upstream = upstream
        self._actors = actors

    async def join(self, job: ClaimedJob, ctx: JobContext) -> bool:
        """Tell ``ctx`` it is a step (and its upstream results); False when those could
        not be read (the job is then given back)."""
        assert job.workflow_id is not None and job.step is not None
        results: dict[str, Any] = {}
        if job.upstream_steps and self._upstream is not None:
            try:
                results = await self._upstream(job.id)
            except StoreError as exc:
                log.event(
                    STEP_UPSTREAM_UNREADABLE,
                    job=str(job.id),
                    actor=job.actor,
                    step=job.step,
                    error=str(exc),
                )
                return False
        ctx.join_workflow(StepRun(job.workflow_id, job.step, results))
        return True

    def finish(self, job: ClaimedJob, ctx: JobContext, outcome: Outcome) -> Outcome:
        """``outcome`` with the steps the run added, if it succeeded and added any. Steps
        that cannot be made (an actor no worker knows, a payload over the limit) fail
        the step: it ran, and what it asked for cannot happen."""
        added = ctx.added_steps
        if added is None or outcome.kind != OutcomeKind.SUCCEEDED:
            return outcome
        from ..workflows.fanout import rows

        try:
            made = rows(job, added, self._actors)
        except TaskqError as exc:
            return outcomes.dead(
                job, DeadReason.FAILED, f"{type(exc).__name__}: the steps it added: {exc}"
            )
        log.event(STEPS_ADDED, job=str(job.id), actor=job.actor, step=job.step, count=len(made))
        return replace(outcome, added=made)
