"""The plain data of workflows, as the store writes and reads it. No I/O.

What is written lives in ``taskq.jobs``: ``StepRow`` (one step to insert: a ``JobSpec``
and its place in the graph), ``WorkflowRow`` (the workflow with all its steps) and
``OnFailure`` (an ``Outcome`` carries steps, an enqueue plan a run). Here: the limits,
``WorkflowState``, and what ``client.workflow(id)`` and ``taskq workflows`` show,
``WorkflowInfo`` and ``StepInfo``.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

from ..jobs import plain_fields

#: the most steps one workflow may hold, run-time additions included
MAX_STEPS = 10_000
#: the most `after` references (edges) one workflow may hold
MAX_EDGES = 100_000
#: the longest step name
MAX_STEP_NAME = 200

#: the run_at of a step that waits for its upstream steps: never due by itself
WAITING_RUN_AT = datetime(9999, 12, 31, tzinfo=UTC)
#: the reason (``cancelled_by``) of a step cancelled because a step before it failed
UPSTREAM_FAILED = "upstream_failed"


class WorkflowState(enum.StrEnum):
    RUNNING = "running"  # some step has not ended
    SUCCEEDED = "succeeded"  # every step succeeded
    FAILED = "failed"  # every step ended, and one of them is dead
    CANCELLED = "cancelled"  # every step ended, and one was cancelled (none dead)


@dataclass(frozen=True, slots=True)
class StepInfo:
    """One step as stored: its job's state and its place in the graph."""

    id: UUID
    name: str
    actor: str
    queue: str
    state: str  # a job state; ``waiting`` for a queued step whose upstream steps run
    after: list[str]  # the names of the steps it runs after
    on_failure: str
    attempts: int
    dead_reason: str | None
    cancelled_by: str | None  # ``upstream_failed``: a step before it failed
    last_error: str | None
    result: Any
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None

    def to_dict(self) -> dict[str, Any]:
        return plain_fields(self)


@dataclass(frozen=True, slots=True)
class WorkflowInfo:
    """A workflow and its steps (``client.workflow(id)``)."""

    id: UUID
    name: str
    state: str  # running | succeeded | failed | cancelled
    step_count: int
    steps_left: int  # steps that have not ended
    failed_steps: int
    cancelled_steps: int
    created_at: datetime
    finished_at: datetime | None
    cancelled_at: datetime | None
    cancelled_by: str | None
    steps: list[StepInfo] = field(default_factory=list)  # in the order they were added

    def step(self, name: str) -> StepInfo:
        """The step of that name (``KeyError`` if none)."""
        for s in self.steps:
            if s.name == name:
                return s
        raise KeyError(name)

    def counts(self) -> dict[str, int]:
        """How many steps are in each state (``waiting`` apart from ``queued``)."""
        out: dict[str, int] = {}
        for s in self.steps:
            out[s.state] = out.get(s.state, 0) + 1
        return out

    def to_dict(self, *, with_steps: bool = True) -> dict[str, Any]:
        out = plain_fields(self)
        out["steps"] = [s.to_dict() for s in self.steps] if with_steps else None
        if not with_steps:
            del out["steps"]
        return out
