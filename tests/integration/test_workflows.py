"""Workflows through the clients, run by the worker's own executor (``taskq.testing``'s
drain: claim, run, complete, one job at a time), on both stores.

What a step sees (its upstream results), what a failure does to what follows, a
running step adding steps, a result too large for the steps after it, cancel, and an
enqueue inside the caller's transaction.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import psycopg
import pytest

import taskq
import taskq.testing
from taskq.exceptions import InvalidWorkflow, WorkflowNotFound
from taskq.testing import drain_async
from tests.conftest import WITH_POOLER, target_fixture
from tests.support import workflow_actors as wa

# through PgBouncer too: the trigger functions carry their own search_path
target = target_fixture(*WITH_POOLER)

REG = wa.registry


@pytest.fixture
def record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "record.log"
    monkeypatch.setenv("TASKQ_WF_RECORD", str(path))
    return path


@pytest.fixture
async def client(target):
    async with taskq.AsyncClient(target.dsn, schema=target.schema) as c:
        await c.store.migrate()
        yield c


def starts(record: Path) -> list[str]:
    return [r["step"] for r in wa.runs(record) if r["event"] == "start"]


async def test_a_group_then_a_fan_in_that_reads_every_result(client, record):
    wf = taskq.group(
        taskq.step(wa.work, "a"), taskq.step(wa.work, "b"), then=taskq.step(wa.echo_upstream)
    )
    wf_id = await client.enqueue_workflow(wf)
    info = await client.workflow(wf_id)
    assert info.state == "running" and info.name == "group"
    assert [(s.name, s.state, s.after) for s in info.steps] == [
        ("work", "queued", []),
        ("work-2", "queued", []),
        ("echo_upstream", "waiting", ["work", "work-2"]),
    ]
    await drain_async(client, registry=REG)
    info = await client.workflow(wf_id)
    assert info.state == "succeeded"
    assert info.step("echo_upstream").result == {"work": "a", "work-2": "b"}
    assert starts(record)[-1] == "echo_upstream"
    assert [w.id for w in await client.workflows()] == [wf_id]
    assert [w.id for w in await client.workflows(state="failed")] == []


async def test_a_chain_runs_in_order_and_a_failure_stops_it(client, record):
    wf = taskq.chain(
        taskq.step(wa.work, "one"),
        taskq.step(wa.work, "two", fail=True),
        taskq.step(wa.work, "three"),
        name="pipeline",
    )
    cleanup = wf.add(wa.echo_upstream, after=["work-2"], on_failure="run", name="cleanup")
    wf_id = await client.enqueue_workflow(wf)
    await drain_async(client, registry=REG)
    info = await client.workflow(wf_id)
    assert (info.state, info.name) == ("failed", "pipeline")
    assert {s.name: s.state for s in info.steps} == {
        "work": "succeeded", "work-2": "dead", "work-3": "cancelled", "cleanup": "succeeded",
    }  # fmt: skip
    assert info.step("work-3").cancelled_by == "upstream_failed"
    assert info.step("cleanup").result == {"work-2": None}
    assert starts(record) == ["work", "work-2", cleanup.name]


async def test_a_running_step_adds_steps_and_the_next_step_waits_for_them(client, record):
    wf = taskq.Workflow("fan")
    s = wf.add(wa.split, 3)
    wf.add(wa.echo_upstream, after=[s], name="merge")
    wf_id = await client.enqueue_workflow(wf)
    await drain_async(client, registry=REG)
    info = await client.workflow(wf_id)
    assert info.state == "succeeded" and info.step_count == 5
    names = ["split/work", "split/work-2", "split/work-3"]
    assert info.step("merge").after == ["split", *names]
    assert info.step("merge").result == {
        "split": 3,
        **dict(zip(names, ["p0", "p1", "p2"], strict=True)),
    }
    assert info.step("split/work-3").after == ["split", "split/work"]
    assert starts(record)[-1] == "merge"


async def test_a_step_that_fails_after_adding_steps_added_nothing(client, record):
    wf = taskq.Workflow("fan")
    s = wf.add(wa.split, 2, fail_after_adding=True)
    wf.add(wa.work, "never", after=[s])
    wf_id = await client.enqueue_workflow(wf)
    await drain_async(client, registry=REG)
    info = await client.workflow(wf_id)
    assert (info.state, info.step_count) == ("failed", 2)
    assert starts(record) == ["split"]


async def test_a_result_too_large_for_the_next_step_fails_the_step_naming_the_limit(client, record):
    wf = taskq.Workflow("big")
    h = wf.add(wa.huge, 200_000)
    wf.add(wa.work, "never", after=[h])
    wf_id = await client.enqueue_workflow(wf)
    await drain_async(client, registry=REG)
    info = await client.workflow(wf_id)
    huge = info.step("huge")
    assert (huge.state, huge.dead_reason, huge.attempts) == ("dead", "unstorable_result", 1)
    assert "over the limit of 65536" in huge.last_error
    assert info.step("work").state == "cancelled" and info.state == "failed"


async def test_a_plain_job_with_a_large_result_still_succeeds(client):
    job_id = await client.enqueue(wa.huge, 200_000)
    await drain_async(client, registry=REG)
    job = await client.get(job_id)
    assert (job.state, job.result) == ("succeeded", None)
    assert job.workflow_id is None


async def test_cancel_workflow_cancels_what_has_not_run(client, record):
    wf = taskq.chain(taskq.step(wa.work, "a"), taskq.step(wa.work, "b"))
    wf_id = await client.enqueue_workflow(wf)
    assert await client.cancel_workflow(wf_id, by="tester") == 2
    await drain_async(client, registry=REG)
    info = await client.workflow(wf_id)
    assert (info.state, info.cancelled_by) == ("cancelled", "tester")
    assert starts(record) == []
    with pytest.raises(WorkflowNotFound):
        await client.cancel_workflow("0190a5b5-0000-7000-8000-000000000000")
    with pytest.raises(WorkflowNotFound, match="expected a UUID"):
        await client.workflow("nope")


async def test_a_refused_workflow_writes_nothing(client):
    wf = taskq.Workflow("bad")
    wf.add(wa.work, "a", after=["missing"])
    with pytest.raises(InvalidWorkflow, match="'missing', which is no step"):
        await client.enqueue_workflow(wf)
    assert await client.workflows() == []
    assert sum((await client.stats()).values()) == 0
    with pytest.raises(InvalidWorkflow, match="has no steps"):
        await client.enqueue_workflow(taskq.Workflow("empty"))
    with pytest.raises(taskq.ConfigError, match=r"takes a taskq\.Workflow"):
        await client.enqueue_workflow("nope")  # type: ignore[arg-type]


async def test_each_enqueue_is_a_new_run(client):
    wf = taskq.chain(taskq.step(wa.work, "a"))
    first, second = await client.enqueue_workflow(wf), await client.enqueue_workflow(wf)
    assert first != second
    a, b = await client.workflow(first), await client.workflow(second)
    assert a.steps[0].id != b.steps[0].id


async def test_enqueue_workflow_in_the_callers_transaction(client, target):
    wf = taskq.chain(taskq.step(wa.work, "a"), taskq.step(wa.work, "b"))
    if target.kind == "sqlite":
        conn = sqlite3.connect(target.dsn.removeprefix("sqlite:///"), isolation_level=None)
        conn.execute("BEGIN IMMEDIATE")
        gone = await client.enqueue_workflow(wf, connection=conn)
        conn.execute("ROLLBACK")
        conn.execute("BEGIN IMMEDIATE")
        kept = await client.enqueue_workflow(wf, connection=conn)
        conn.execute("COMMIT")
        conn.close()
    else:
        async with await psycopg.AsyncConnection.connect(target.dsn) as conn:
            gone = await client.enqueue_workflow(wf, connection=conn)
            await conn.rollback()
            kept = await client.enqueue_workflow(wf, connection=conn)
            await conn.commit()
    with pytest.raises(WorkflowNotFound):
        await client.workflow(gone)
    assert len((await client.workflow(kept)).steps) == 2
    await drain_async(client, registry=REG)
    assert (await client.workflow(kept)).state == "succeeded"


def test_the_sync_client_mirrors_it(target, store, record):
    wf = taskq.group(taskq.step(wa.work, "a"), then=taskq.step(wa.echo_upstream))
    with taskq.Client(target.dsn, schema=target.schema) as c:
        c.open()
        wf_id = c.enqueue_workflow(wf)
        assert c.workflow(wf_id).state == "running"
        assert [w.id for w in c.workflows()] == [wf_id]
        taskq.testing.drain(c, registry=REG)
        assert c.wait_workflow(wf_id, timeout=10).state == "succeeded"
        if target.kind == "sqlite":
            conn = sqlite3.connect(target.dsn.removeprefix("sqlite:///"))
            other = c.enqueue_workflow(wf, connection=conn)
            conn.commit()
            conn.close()
        else:
            with psycopg.connect(target.dsn) as conn:
                other = c.enqueue_workflow(wf, connection=conn)
        assert c.cancel_workflow(other) == 2
        assert c.workflow(other).state == "cancelled"


async def test_finished_runs_reach_the_fleet_metric_once_each(client):
    from taskq import metrics
    from taskq.backlog import clear_backlog, export_workflows

    good = taskq.chain(taskq.step(wa.work, "a"))
    bad = taskq.chain(taskq.step(wa.work, "b", fail=True))
    for wf in (good, good, bad):
        await client.enqueue_workflow(wf)
    await drain_async(client, registry=REG)
    clear_backlog()
    try:
        export_workflows(await client.store.insight.workflow_totals())
        export_workflows(await client.store.insight.workflow_totals())  # again: no change

        def value(state: str) -> float | None:
            return metrics.BACKLOG.get_sample_value(
                "taskq_workflows_finished_total", {"state": state}
            )

        assert (value("succeeded"), value("failed"), value("cancelled")) == (2.0, 1.0, 0.0)
    finally:
        clear_backlog()
