"""A workflow's enqueue goes through the client's one enqueue (issue 22, issue 25 item 2):
the middleware's ``before_enqueue`` / ``after_enqueue`` run once around it, see one
``WorkflowPlan`` with every step's job, may add meta (on every step's job, on every
write path: the unnest insert, the COPY of a large run on Postgres, the caller's
connection) or refuse it (nothing written: no workflow, no step); on both stores and
through PgBouncer, for both clients."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import taskq
from taskq.plan import EnqueuePlan, WorkflowPlan
from taskq.store.postgres.workflows import COPY_THRESHOLD
from tests.conftest import WITH_POOLER, target_fixture
from tests.integration.test_enqueue_plan import caller_connection, calls

__all__ = ["calls"]  # a fixture, shared

target = target_fixture(*WITH_POOLER)

registry = taskq.Registry()


@registry.actor(name="tests.wfhooks.fetch", queue="fetch")
def fetch(url: str) -> str: ...


@registry.actor(name="tests.wfhooks.merge", queue="merge")
def merge() -> None: ...


class Recorder(taskq.Middleware):
    """Records what each hook saw; adds ``by`` to the meta."""

    def __init__(self, name: str, calls: list[tuple[Any, ...]]) -> None:
        self.name, self.calls = name, calls

    def before_enqueue(self, plan: EnqueuePlan) -> None:
        assert isinstance(plan, WorkflowPlan)
        self.calls.append(
            (
                self.name,
                "before",
                plan.workflow_id,
                plan.workflow_name,
                list(plan.ids),
                list(plan.actors),
                list(plan.queues),
                plan.actor,
                plan.queue,
                len(plan),
            )
        )
        plan.add_meta("by", self.name)

    def after_enqueue(self, plan: EnqueuePlan, error: BaseException | None) -> None:
        self.calls.append((self.name, "after", type(error).__name__ if error else None))


class Refuse(taskq.Middleware):
    def before_enqueue(self, plan: EnqueuePlan) -> None:
        if isinstance(plan, WorkflowPlan) and plan.workflow_name == "forbidden":
            raise PermissionError("no workflow named forbidden")


class BrokenAfter(taskq.Middleware):
    def after_enqueue(self, plan: EnqueuePlan, error: BaseException | None) -> None:
        raise RuntimeError("after hook bug")


def fan(n: int, name: str = "crawl") -> taskq.Workflow:
    """``n`` fetch steps side by side, then one merge step after all of them."""
    return taskq.group(
        *(taskq.step(fetch, f"https://example.com/{i}") for i in range(n)),
        then=taskq.step(merge),
        name=name,
    )


@pytest.fixture
def client(target, store, calls) -> Iterator[taskq.Client]:
    """A ``Client`` whose hooks are two recorders with a refusing hook between them."""
    del store  # migrated
    hooks = [Recorder("first", calls), Refuse(), Recorder("second", calls)]
    client = taskq.Client(target.dsn, schema=target.schema, middleware=hooks)
    with client:
        yield client


def assert_one_plan_of_every_step(client, wf_id, n: int, calls) -> None:
    info = client.workflow(wf_id)
    step_ids = [s.id for s in info.steps]
    assert len(step_ids) == n + 1
    seen = (
        wf_id,
        "crawl",
        step_ids,
        [fetch.name] * n + [merge.name],
        ["fetch"] * n + ["merge"],
        "*",  # several actors
        "*",  # on several queues
        n + 1,
    )
    assert calls == [
        ("first", "before", *seen),
        ("second", "before", *seen),
        ("second", "after", None),
        ("first", "after", None),
    ]
    for step_id in step_ids:  # the first hook's word kept, on every step's job
        assert client.get(step_id).meta == {"by": "first"}


@pytest.mark.parametrize("n", [3, COPY_THRESHOLD + 20], ids=["insert", "copy"])
def test_the_hooks_see_every_step_of_a_workflow_as_one_plan(client, calls, n) -> None:
    wf_id = client.enqueue_workflow(fan(n))
    assert_one_plan_of_every_step(client, wf_id, n, calls)
    assert client.workflow(wf_id).state == "running"


def test_on_the_callers_connection_too(client, target, calls) -> None:
    conn = caller_connection(target)
    try:
        wf_id = client.enqueue_workflow(fan(4), connection=conn)
    finally:
        conn.close()
    assert_one_plan_of_every_step(client, wf_id, 4, calls)


def test_a_refusing_hook_writes_no_workflow_and_no_step(client, target, calls) -> None:
    with pytest.raises(PermissionError, match="no workflow named forbidden"):
        client.enqueue_workflow(fan(3, name="forbidden"))
    conn = caller_connection(target)
    try:
        with pytest.raises(PermissionError):
            client.enqueue_workflow(fan(3, name="forbidden"), connection=conn)
    finally:
        conn.close()
    assert [c[:2] + c[-1:] for c in calls] == [
        ("first", "before", 4),
        ("first", "after", "PermissionError"),
    ] * 2
    assert client.workflows() == []
    assert sum(client.stats().values()) == 0


async def test_the_async_client_runs_them_once_a_workflow(target, store, calls) -> None:
    del store
    middleware = [Recorder("only", calls), BrokenAfter()]
    async with taskq.AsyncClient(target.dsn, schema=target.schema, middleware=middleware) as client:
        wf_id = await client.enqueue_workflow(fan(2))  # the broken after hook is logged
        info = await client.workflow(wf_id)
        assert [c[:3] for c in calls] == [("only", "before", wf_id), ("only", "after", None)]
        assert calls[0][4] == [s.id for s in info.steps]
        for s in info.steps:
            assert (await client.get(s.id)).meta == {"by": "only"}


def test_a_workflow_without_middleware_is_written_without_meta(target, store) -> None:
    del store
    with taskq.Client(target.dsn, schema=target.schema) as client:
        wf_id = client.enqueue_workflow(fan(2))
        assert [client.get(s.id).meta for s in client.workflow(wf_id).steps] == [{}] * 3
