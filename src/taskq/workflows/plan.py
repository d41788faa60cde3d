"""A checked workflow -> the rows the store inserts. No I/O.

Each run of a workflow gets a new workflow id and new step ids (UUIDv7, in the order the
steps were added: the store lists steps in id order). A step's job is built exactly as
``enqueue`` builds one (``specs.JobBuilder``: the actor's options, the payload checks);
its place in the graph is its upstream and downstream step ids.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING
from uuid import UUID

from ..ids import uuid7, uuid7_many
from ..jobs import ActorConfig, JobSpec, StepRow, WorkflowRow
from ..plan import NO_OPTIONS

if TYPE_CHECKING:
    from ..registry import AnyActor
    from ..specs import JobBuilder
    from .graph import Workflow


def workflow_row(
    workflow_id: UUID,
    name: str,
    specs: Sequence[JobSpec],
    names: Sequence[str],
    upstream: Sequence[Sequence[int]],
    on_failure: Sequence[str],
) -> WorkflowRow:
    """Steps given by index: step ``i`` is ``specs[i]`` named ``names[i]``, after the
    steps ``upstream[i]`` (indexes)."""
    downstream: list[list[UUID]] = [[] for _ in specs]
    for i, ups in enumerate(upstream):
        for u in ups:
            downstream[u].append(specs[i].id)
    steps = [
        StepRow(
            spec=spec,
            name=names[i],
            upstream=tuple(specs[u].id for u in upstream[i]),
            downstream=tuple(downstream[i]),
            on_failure=on_failure[i],
        )
        for i, spec in enumerate(specs)
    ]
    return WorkflowRow(workflow_id, name, steps)


def step_specs(
    wf: Workflow,
    builder: JobBuilder,
    known: Mapping[str, ActorConfig],
    actors: Mapping[str, AnyActor] | None = None,
) -> tuple[list[list[int]], list[JobSpec]]:
    """``wf`` checked (``Workflow.resolved``: each step's upstream steps by index) and
    every step's job built, with a new id each. ``known``: the recorded configurations
    of actors given by name; ``actors``: actor objects to use for names (a worker's)."""
    upstream = wf.resolved()
    specs = []
    for ref, job_id in zip(wf.steps, uuid7_many(len(wf)), strict=True):
        actor = ref.step.actor
        if isinstance(actor, str) and actors is not None:
            actor = actors.get(actor, actor)
        template = builder.template(actor, NO_OPTIONS, known)
        specs.append(builder.spec(template, ref.step.args, ref.step.kwargs, job_id))
    return upstream, specs


def plan(wf: Workflow, builder: JobBuilder, known: Mapping[str, ActorConfig]) -> WorkflowRow:
    """One run of ``wf``, with a new workflow id and new step ids."""
    upstream, specs = step_specs(wf, builder, known)
    return workflow_row(
        uuid7(),
        wf.name,
        specs,
        [r.name for r in wf.steps],
        upstream,
        [str(r.on_failure) for r in wf.steps],
    )
