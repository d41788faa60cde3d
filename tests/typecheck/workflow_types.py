"""Typed workflows: checked by mypy in ``make lint`` (and by pyright), never run.

As in enqueue_types.py: every line marked ``# type: ignore`` MUST be a type error (an
unused ignore fails ``make lint``), the unmarked lines must type-check. ``taskq.step``
is checked against the actor's function like ``enqueue``; so is ``wf.add(actor, ...)``
when it is given no ``after``, ``name`` or ``on_failure`` (with those, the arguments are
checked when ``add`` runs: a type cannot add keywords to a function's own).
"""

from __future__ import annotations

from typing import Any, assert_type
from uuid import UUID

import taskq

registry = taskq.Registry()


@registry.actor
async def fetch(url: str) -> dict[str, Any]:
    return {"url": url}


@registry.actor
def resize(width: int, *, keep_ratio: bool = True) -> int:
    return width


@registry.actor
def report() -> None:
    return None


def build(client: taskq.Client) -> None:
    wf = taskq.Workflow("archive-account")
    a = wf.add(fetch, "https://x")
    assert_type(a, taskq.StepRef)
    b = wf.add(resize, width=64, after=[a])
    c = wf.add(taskq.step(resize, 32, keep_ratio=False), after=[a], name="resize-32")
    wf.add(report, after=[b, c], on_failure="run")
    wf.add("by.name", 1, "anything", after=["fetch"])  # by name: not checked
    assert_type(client.enqueue_workflow(wf), UUID)
    info = client.workflow(client.enqueue_workflow(wf))
    assert_type(info.state, str)
    client.cancel_workflow(info.id)

    wf.add(fetch)  # type: ignore  # url missing
    wf.add(fetch, 3)  # type: ignore  # url is a str
    wf.add(resize, width="64")  # type: ignore  # width is an int
    taskq.step(resize, "64")  # type: ignore  # width is an int
    taskq.step(report, 1)  # type: ignore  # report takes nothing
    wf.add(taskq.step(fetch, "u"), after=[a], on_failure="sometimes")  # type: ignore  # a Literal

    taskq.chain(taskq.step(fetch, "u"), taskq.step(resize, 1), taskq.step(report))
    taskq.group(taskq.step(fetch, "u"), taskq.step(fetch, "v"), then=taskq.step(report))
    taskq.group(fetch)  # type: ignore  # steps, not actors


async def build_async(client: taskq.AsyncClient) -> None:
    wf = taskq.chain(taskq.step(fetch, "u"), taskq.step(report))
    assert_type(await client.enqueue_workflow(wf), UUID)
    assert_type(await client.workflow("id"), taskq.WorkflowInfo)


def inside_a_step() -> None:
    job = taskq.current_job()
    assert_type(job.upstream["fetch"], Any)
    job.fan_out.add(resize, 3)
    job.fan_out.add(resize, "3")  # type: ignore  # width is an int
