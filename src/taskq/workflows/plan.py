"""A checked workflow -> the rows the store inserts. No I/O.

Each run of a workflow gets a new workflow id and new step ids (UUIDv7, in the order the
steps were added: the store lists steps in id order). A step's job is built exactly as
``enqueue`` builds one (``specs.JobBuilder``: the actor's options, the payload checks);
its place in the graph is its upstream and downstream step ids.
"""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID

from ..jobs import JobSpec
from .model import StepRow, WorkflowRow


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
