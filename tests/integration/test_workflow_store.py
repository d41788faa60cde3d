"""The fan-in, decided in the database: a workflow's steps on both real stores.

Workers are played by hand (claim, then complete, as the acker does), so each test
says exactly which step ends how and when. What is asserted is what the triggers of
migration 0007 decide in the statement that ends a step: which steps become due, which
are cancelled (``upstream_failed``), the workflow's verdict and its count.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from uuid import UUID

import psycopg

from taskq.ids import uuid7
from taskq.jobs import Outcome, OutcomeKind, WorkflowRow
from taskq.store import Store
from taskq.workflows.model import WAITING_RUN_AT
from taskq.workflows.plan import workflow_row
from tests.conftest import WITH_POOLER, target_fixture
from tests.support.helpers import migrated_store
from tests.support.storekit import another_store, spec

# through PgBouncer too: the trigger functions carry their own search_path
target = target_fixture(*WITH_POOLER)


def graph(
    after: Mapping[str, Sequence[str]],
    *,
    run: Sequence[str] = (),
    idempotent: bool = False,
    name: str = "wf",
) -> WorkflowRow:
    """A workflow from ``{step: [steps it runs after]}`` (in insertion order); the steps
    in ``run`` are on_failure='run'. Each step's job is actor ``tests.echo`` with its
    name as argument."""
    names = list(after)
    specs = [spec(args=[n], idempotent=idempotent) for n in names]
    upstream = [[names.index(u) for u in after[n]] for n in names]
    return workflow_row(
        uuid7(), name, specs, names, upstream, ["run" if n in run else "cancel" for n in names]
    )


def ids_of(row: WorkflowRow) -> dict[str, UUID]:
    return {s.name: s.spec.id for s in row.steps}


async def claim_all(store: Store, worker: UUID) -> dict[UUID, int]:
    """Every due job, claimed by ``worker``: {id: attempt}."""
    return {j.id: j.attempt for j in await store.claim(worker, ["default"], 100, 30.0)}


def ok(job_id: UUID, attempt: int = 1, result: str | None = None) -> Outcome:
    return Outcome(job_id, attempt, OutcomeKind.SUCCEEDED, result_json=result)


def dead(job_id: UUID, attempt: int = 1) -> Outcome:
    return Outcome(job_id, attempt, OutcomeKind.DEAD, error="boom", dead_reason="failed")


async def states(store: Store, wf: WorkflowRow) -> dict[str, str]:
    info = await store.get_workflow(wf.id)
    assert info is not None
    return {s.name: s.state for s in info.steps}


async def test_a_diamond_runs_in_order_and_its_fan_in_once(store):
    wf = graph({"a": [], "b": ["a"], "c": ["a"], "d": ["b", "c"]})
    ids = ids_of(wf)
    await store.enqueue_workflow(wf)
    w = uuid7()
    assert await states(store, wf) == {
        "a": "queued",
        "b": "waiting",
        "c": "waiting",
        "d": "waiting",
    }
    waiting = await store.get_job(ids["d"])
    assert waiting.state == "queued" and waiting.run_at == WAITING_RUN_AT
    assert waiting.workflow_id == wf.id and waiting.step == "d"

    (first,) = (await store.claim(w, ["default"], 100, 30.0)).jobs
    assert (first.id, first.upstream_steps) == (ids["a"], 0)
    assert await store.upstream_results(first.id) == {}  # a step that runs after none
    assert await store.complete(w, [ok(ids["a"], result='"A"')]) == 1
    assert set(await claim_all(store, w)) == {ids["b"], ids["c"]}
    assert await store.complete(w, [ok(ids["b"])]) == 1
    assert await claim_all(store, w) == {}  # d still waits for c
    assert (await store.get_workflow(wf.id)).steps_left == 2
    assert await store.complete(w, [ok(ids["c"], result="[1, 2]")]) == 1
    claimed = (await store.claim(w, ["default"], 100, 30.0)).jobs
    assert [j.id for j in claimed] == [ids["d"]]
    assert (claimed[0].workflow_id, claimed[0].step) == (wf.id, "d")
    assert claimed[0].upstream_steps == 2  # b and c: their ids stay in the store
    assert await store.upstream_results(claimed[0].id) == {"b": None, "c": [1, 2]}
    assert (await store.get_workflow(wf.id)).state == "running"
    assert await store.complete(w, [ok(ids["d"])]) == 1

    info = await store.get_workflow(wf.id)
    assert (info.state, info.steps_left, info.failed_steps) == ("succeeded", 0, 0)
    assert info.finished_at is not None
    assert [s.name for s in info.steps] == ["a", "b", "c", "d"]
    assert info.step("d").after == ["b", "c"] and info.step("a").result == "A"
    assert await store.insight.workflow_totals() == {"succeeded": 1}
    assert [w.id for w in await store.insight.list_workflows()] == [wf.id]


async def test_a_dead_step_cancels_what_follows_it_and_fails_the_workflow(store):
    wf = graph({"a": [], "x": [], "b": ["a"], "c": ["b"], "d": ["c", "x"], "y": ["x"]})
    ids = ids_of(wf)
    await store.enqueue_workflow(wf)
    w = uuid7()
    assert set(await claim_all(store, w)) == {ids["a"], ids["x"]}
    assert await store.complete(w, [dead(ids["a"])]) == 1
    got = await states(store, wf)
    assert got == {"a": "dead", "x": "running", "b": "cancelled", "c": "cancelled",
                   "d": "cancelled", "y": "waiting"}  # fmt: skip
    gone = await store.get_job(ids["d"])
    assert gone.cancelled_by == "upstream_failed" and gone.attempts == 0
    info = await store.get_workflow(wf.id)
    assert (info.state, info.steps_left) == ("running", 2)  # x and y have not ended
    assert await store.complete(w, [ok(ids["x"])]) == 1
    assert set(await claim_all(store, w)) == {ids["y"]}  # a failure elsewhere does not stop it
    assert await store.complete(w, [ok(ids["y"])]) == 1
    info = await store.get_workflow(wf.id)
    assert (info.state, info.failed_steps, info.cancelled_steps) == ("failed", 1, 3)
    assert await store.insight.workflow_totals() == {"failed": 1}


async def test_on_failure_run_steps_run_once_every_upstream_step_ended(store):
    wf = graph(
        {"a": [], "b": ["a"], "e": ["b"], "cleanup": ["a", "e"], "after_cleanup": ["cleanup"]},
        run=["cleanup"],
    )
    ids = ids_of(wf)
    await store.enqueue_workflow(wf)
    w = uuid7()
    assert set(await claim_all(store, w)) == {ids["a"]}
    await store.complete(w, [dead(ids["a"])])
    assert set(await claim_all(store, w)) == {ids["cleanup"]}
    assert await states(store, wf) == {
        "a": "dead", "b": "cancelled", "e": "cancelled", "cleanup": "running",
        "after_cleanup": "waiting",
    }  # fmt: skip
    await store.complete(w, [ok(ids["cleanup"])])
    assert set(await claim_all(store, w)) == {ids["after_cleanup"]}
    await store.complete(w, [ok(ids["after_cleanup"])])
    assert (await store.get_workflow(wf.id)).state == "failed"


async def test_on_failure_run_steps_also_run_when_all_went_well(store):
    wf = graph({"a": [], "cleanup": ["a"]}, run=["cleanup"])
    ids = ids_of(wf)
    await store.enqueue_workflow(wf)
    w = uuid7()
    await claim_all(store, w)
    await store.complete(w, [ok(ids["a"])])
    assert set(await claim_all(store, w)) == {ids["cleanup"]}
    await store.complete(w, [ok(ids["cleanup"])])
    assert (await store.get_workflow(wf.id)).state == "succeeded"


async def test_the_last_two_upstream_steps_acked_at_once_release_the_fan_in_once(store, target):
    """Two stores (two connections, as two workers) ack the two upstream steps of a
    fan-in step at the same moment, many times over: it becomes due exactly once."""
    async with another_store(target) as other:
        for _ in range(25):
            wf = graph({"a": [], "b": [], "d": ["a", "b"]})
            ids = ids_of(wf)
            await store.enqueue_workflow(wf)
            w1, w2 = uuid7(), uuid7()
            (a,) = await store.claim(w1, ["default"], 1, 30.0)
            (b,) = await other.claim(w2, ["default"], 1, 30.0)
            assert {a.id, b.id} == {ids["a"], ids["b"]}
            done = await asyncio.gather(
                store.complete(w1, [ok(a.id)]), other.complete(w2, [ok(b.id)])
            )
            assert done == [1, 1]
            assert [j.id for j in await store.claim(w1, ["default"], 10, 30.0)] == [ids["d"]]
            assert (await other.claim(w2, ["default"], 10, 30.0)).jobs == []
            await store.complete(w1, [ok(ids["d"])])
        assert await store.insight.workflow_totals() == {"succeeded": 25}


async def test_a_fenced_out_ack_releases_nothing(store):
    wf = graph({"a": [], "d": ["a"]})
    ids = ids_of(wf)
    await store.enqueue_workflow(wf)
    w = uuid7()
    await claim_all(store, w)
    assert await store.complete(uuid7(), [ok(ids["a"])]) == 0  # not the run's worker
    assert await store.complete(w, [ok(ids["a"], attempt=2)]) == 0  # not the run's attempt
    assert await claim_all(store, w) == {}
    assert (await store.get_job(ids["d"])).run_at == WAITING_RUN_AT


async def test_crash_rules_apply_to_steps_and_a_crashed_step_fails_its_workflow(store):
    wf = graph({"a": [], "b": ["a"]})
    ids = ids_of(wf)
    await store.enqueue_workflow(wf)
    w = uuid7()
    await claim_all(store, w)
    rescued = await store.rescue_worker(w, "worker died: SIGKILL")
    assert [(r.id, r.state, r.dead_reason) for r in rescued] == [(ids["a"], "dead", "crashed")]
    assert await states(store, wf) == {"a": "dead", "b": "cancelled"}
    assert (await store.get_workflow(wf.id)).state == "failed"


async def test_an_idempotent_step_whose_worker_died_runs_again_and_releases_once(store):
    wf = graph({"a": [], "b": ["a"]}, idempotent=True)
    ids = ids_of(wf)
    await store.enqueue_workflow(wf)
    w1 = uuid7()
    await claim_all(store, w1)
    rescued = await store.rescue_worker(w1, "worker died: SIGKILL")
    assert [(r.state, r.crash_count) for r in rescued] == [("queued", 1)]
    w2 = uuid7()
    assert await claim_all(store, w2) == {ids["a"]: 2}
    assert await store.complete(w1, [ok(ids["a"])]) == 0  # the dead run's late ack: fenced
    assert await store.complete(w2, [ok(ids["a"], attempt=2)]) == 1
    assert set(await claim_all(store, w2)) == {ids["b"]}


async def test_poison_fails_the_workflow(store):
    wf = graph({"a": [], "b": ["a"]}, idempotent=True)
    ids = ids_of(wf)
    await store.enqueue_workflow(wf)
    for _ in range(2):
        w = uuid7()
        assert set(await claim_all(store, w)) == {ids["a"]}
        await store.rescue_worker(w, "worker died: SIGSEGV", blamed=True)
    assert (await store.get_job(ids["a"])).dead_reason == "poison"
    assert await states(store, wf) == {"a": "dead", "b": "cancelled"}


async def test_cancel_workflow_cancels_queued_steps_and_asks_running_ones_to_stop(store):
    wf = graph({"a": [], "x": [], "b": ["a"], "c": ["b"]})
    ids = ids_of(wf)
    await store.enqueue_workflow(wf)
    w = uuid7()
    (first,) = await store.claim(w, ["default"], 1, 30.0)
    assert first.id == ids["a"]
    assert await store.cancel_workflow(wf.id, by="alice") == 4
    assert await store.cancel_requested(w) == [ids["a"]]
    assert await states(store, wf) == {"a": "running", "x": "cancelled", "b": "cancelled",
                                       "c": "cancelled"}  # fmt: skip
    assert (await store.get_workflow(wf.id)).state == "running"  # a has not ended
    # the running step ends cancelled whatever its outcome: nothing after it runs
    await store.complete(w, [ok(ids["a"])])
    info = await store.get_workflow(wf.id)
    assert (info.state, info.cancelled_by, info.steps_left) == ("cancelled", "alice", 0)
    assert (await store.get_job(ids["b"])).cancelled_by == "alice"
    assert await store.cancel_workflow(uuid7()) is None


async def test_a_running_step_adds_steps_and_the_steps_after_it_wait_for_them(store):
    wf = graph({"split": [], "merge": ["split"]})
    ids = ids_of(wf)
    await store.enqueue_workflow(wf)
    w = uuid7()
    await claim_all(store, w)
    added = graph({"p1": [], "p2": [], "p3": ["p1"]})  # its own graph: p3 after p1
    rows = [type(s)(s.spec, s.name, (ids["split"], *s.upstream), s.downstream) for s in added.steps]
    assert await store.complete_fanout(w, ok(ids["split"]), rows) == 1
    p = {s.name: s.spec.id for s in added.steps}
    assert set(await claim_all(store, w)) == {p["p1"], p["p2"]}
    info = await store.get_workflow(wf.id)
    assert (info.step_count, info.steps_left) == (5, 4)
    assert info.step("merge").after == ["split", "p1", "p2", "p3"]
    await store.complete(w, [ok(p["p1"]), ok(p["p2"])])
    assert set(await claim_all(store, w)) == {p["p3"]}
    await store.complete(w, [ok(p["p3"])])
    assert set(await claim_all(store, w)) == {ids["merge"]}
    await store.complete(w, [ok(ids["merge"])])
    assert (await store.get_workflow(wf.id)).state == "succeeded"


async def test_steps_a_running_step_adds_carry_its_meta_as_claimed(store):
    """An enqueue's meta (a trace context, a request id) is on every step of the run;
    the steps a step adds get the adding step's meta too, not what its run changed."""
    meta = {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "r": 7}
    wf = replace(graph({"split": [], "merge": ["split"]}), meta_json=json.dumps(meta))
    ids = ids_of(wf)
    await store.enqueue_workflow(wf)
    w = uuid7()
    await claim_all(store, w)
    added = graph({"p1": [], "p2": ["p1"]}).steps
    rows = [type(s)(s.spec, s.name, (ids["split"], *s.upstream), s.downstream) for s in added]
    changed = replace(ok(ids["split"]), meta_json=json.dumps({**meta, "progress": 100}))
    assert await store.complete_fanout(w, changed, rows) == 1
    assert [(await store.get_job(s.spec.id)).meta for s in added] == [meta, meta]
    assert (await store.get_job(ids["split"])).meta == {**meta, "progress": 100}


async def test_a_fanout_from_a_run_no_longer_held_adds_nothing(store):
    wf = graph({"split": [], "merge": ["split"]})
    ids = ids_of(wf)
    await store.enqueue_workflow(wf)
    w = uuid7()
    await claim_all(store, w)
    extra = graph({"p": []}).steps[0]
    row = type(extra)(extra.spec, "p", (ids["split"],), ())
    assert await store.complete_fanout(uuid7(), ok(ids["split"]), [row]) == 0
    assert await store.get_job(extra.spec.id) is None
    assert (await store.get_workflow(wf.id)).step_count == 2


async def test_steps_are_not_retried_alone_nor_scheduled_early(store):
    wf = graph({"a": [], "b": ["a"]})
    ids = ids_of(wf)
    await store.enqueue_workflow(wf)
    assert await store.advance_next_scheduled(["default"]) == []  # b waits, it is not late
    w = uuid7()
    await claim_all(store, w)
    await store.complete(w, [dead(ids["a"])])
    assert await store.retry_jobs([ids["a"], ids["b"]]) == []
    assert await store.retry_all_dead() == 0
    assert await states(store, wf) == {"a": "dead", "b": "cancelled"}


async def test_the_fan_in_trigger_plans_its_statements_generically(pg_target):
    """0010: the trigger that advances workflows (once per ack that ends steps) takes
    generic plans from its first run instead of five custom ones (its one parameter is an
    array of ids found by primary key; a custom plan bought nothing and cost 1 - 2 ms a
    batch)."""
    async with migrated_store(pg_target.dsn, pg_target.schema, None):
        with psycopg.connect(pg_target.dsn) as conn:
            row = conn.execute(
                "SELECT p.proconfig FROM pg_proc p "
                "JOIN pg_namespace n ON n.oid = p.pronamespace "
                "WHERE n.nspname = %s AND p.proname = 'workflow_steps_advance'",
                [pg_target.schema],
            ).fetchone()
    assert row is not None
    assert "plan_cache_mode=force_generic_plan" in row[0]
