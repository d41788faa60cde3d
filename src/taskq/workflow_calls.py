"""The clients' workflow calls: enqueue a run of a workflow, read one, list, cancel.

``AsyncClient`` and ``Client`` (client.py) each have one-line methods that land here. A run is
checked and built with no I/O (``plan``) but for the recorded configurations of
actors given by name, as a ``WorkflowPlan``; the client's ``Enqueuer`` writes it as it
writes any plan, the middleware's enqueue hooks (and taskq's enqueue tracing: one span
a run) around it, in one transaction: the store's own connection, or the caller's
(``connection=``, the same resolution and checks as ``enqueue_with``, ``taskq.txn``).
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any, Protocol
from uuid import UUID

from .exceptions import ConfigError, WorkflowNotFound
from .inputs import parse_workflow_id
from .plan import WorkflowPlan
from .workflows.graph import Workflow
from .workflows.model import WorkflowInfo, WorkflowState
from .workflows.plan import plan

if TYPE_CHECKING:
    from .enqueuer import Enqueuer
    from .store import Store


class AsyncClient(Protocol):
    """What these calls use of a ``taskq.AsyncClient`` (client.py, which calls them)."""

    @property
    def store(self) -> Store: ...

    @property
    def enqueuer(self) -> Enqueuer: ...

    async def open(self) -> None: ...


async def prepare(client: AsyncClient, wf: Workflow) -> WorkflowPlan:
    """One run of ``wf``, checked and built (nothing written)."""
    if not isinstance(wf, Workflow):
        raise ConfigError(f"enqueue_workflow takes a taskq.Workflow, got {type(wf).__name__}")
    await client.open()
    enqueuer = client.enqueuer  # the client's builder and its actor configurations
    known = enqueuer.known(ref.step.actor for ref in wf.steps)
    if known is None:
        known = await enqueuer.relearn()
    return WorkflowPlan(plan(wf, enqueuer.builder, known))


async def enqueue(client: AsyncClient, wf: Workflow, connection: Any) -> UUID:
    planned = await prepare(client, wf)
    await client.enqueuer.write_workflow(planned, connection)
    return planned.workflow_id


async def get(client: AsyncClient, workflow_id: UUID | str) -> WorkflowInfo:
    wanted = parse_workflow_id(workflow_id)
    await client.open()
    info = await client.store.get_workflow(wanted)
    if info is None:
        raise WorkflowNotFound(f"no workflow with id {workflow_id}")
    return info


async def cancel(client: AsyncClient, workflow_id: UUID | str, by: str) -> int:
    wanted = parse_workflow_id(workflow_id)
    await client.open()
    moved = await client.store.cancel_workflow(wanted, by=by)
    if moved is None:
        raise WorkflowNotFound(f"no workflow with id {workflow_id}")
    return moved


async def listing(client: AsyncClient, state: str | None, limit: int) -> list[WorkflowInfo]:
    if state is not None and state not in WorkflowState.__members__.values():
        raise ConfigError(
            f"unknown workflow state {state!r}: expected one of "
            f"{', '.join(s.value for s in WorkflowState)}"
        )
    if limit < 1:
        raise ConfigError("limit must be >= 1")
    await client.open()
    return await client.store.insight.list_workflows(state=state, limit=limit)


async def wait(
    client: AsyncClient, workflow_id: UUID | str, timeout: float, interval: float
) -> WorkflowInfo:
    deadline = time.monotonic() + timeout
    while True:
        info = await get(client, workflow_id)
        if info.state != WorkflowState.RUNNING:
            return info
        if time.monotonic() > deadline:
            raise TimeoutError(
                f"workflow {info.id} still running after {timeout}s ({info.steps_left} of "
                f"{info.step_count} steps not ended)"
            )
        await asyncio.sleep(interval)
