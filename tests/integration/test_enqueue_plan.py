"""One enqueue plan for both clients: the middleware's ``before_enqueue`` and
``after_enqueue`` run around every write path (the calling thread, the loop, unique
keys, the caller's connection), see the plan and can add meta or refuse it; and an
``Actor``'s arguments are checked against its function's signature before anything is
written (by name they cannot be)."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

import taskq
from taskq.plan import EnqueuePlan

registry = taskq.Registry()


@registry.actor(name="tests.plan.resize", queue="plan")
def resize(path: str, width: int = 0, *, mode: str = "fit") -> None: ...


@registry.actor(name="tests.plan.spread")
def spread(*paths: str, **options: int) -> None: ...


class Recorder(taskq.Middleware):
    """Records every hook call; adds ``by`` to the meta."""

    def __init__(self, name: str, calls: list[tuple[Any, ...]]) -> None:
        self.name, self.calls = name, calls

    def before_enqueue(self, plan: EnqueuePlan) -> None:
        self.calls.append((self.name, "before", plan.actor, plan.queue, list(plan.ids)))
        plan.add_meta("by", self.name)

    def after_enqueue(self, plan: EnqueuePlan, error: BaseException | None) -> None:
        self.calls.append((self.name, "after", type(error).__name__ if error else None))


class Refuse(taskq.Middleware):
    def before_enqueue(self, plan: EnqueuePlan) -> None:
        if plan.queue == "forbidden":
            raise PermissionError("no jobs on queue forbidden")


class BrokenAfter(taskq.Middleware):
    def after_enqueue(self, plan: EnqueuePlan, error: BaseException | None) -> None:
        raise RuntimeError("after hook bug")


def caller_connection(target) -> Any:
    if target.kind == "sqlite":
        return sqlite3.connect(target.dsn.removeprefix("sqlite:///"), isolation_level=None)
    conn = psycopg.connect(target.dsn, autocommit=True)
    conn.execute(f'SET search_path TO "{target.schema}"')
    return conn


@pytest.fixture
def calls() -> list[tuple[Any, ...]]:
    return []


@pytest.fixture
def client(target, store, calls) -> Iterator[taskq.Client]:
    del store  # migrated
    middleware = [Recorder("first", calls), Refuse(), Recorder("second", calls)]
    with taskq.Client(target.dsn, schema=target.schema, middleware=middleware) as c:
        yield c


def test_every_write_path_runs_the_hooks_in_order(client, target, calls) -> None:
    here = client.enqueue(resize, "a.png", 64)  # plain: the calling thread
    keyed = client.enqueue_with(resize, ["b.png"], unique_key="b")  # unique: the loop
    many = client.enqueue_many(resize, [["c.png"], ["d.png"]], meta={"batch": 1})
    conn = caller_connection(target)
    try:
        theirs = client.enqueue_with(resize, ["e.png"], connection=conn)  # the caller's
    finally:
        conn.close()
    per_call = [calls[i : i + 4] for i in range(0, len(calls), 4)]
    assert len(per_call) == 4
    for call, ids in zip(per_call, [[here], [keyed], many, [theirs]], strict=True):
        assert call == [
            ("first", "before", "tests.plan.resize", "plan", ids),
            ("second", "before", "tests.plan.resize", "plan", ids),
            ("second", "after", None),
            ("first", "after", None),
        ]
    for job_id in [here, keyed, *many, theirs]:
        assert client.get(job_id).meta.get("by") == "first"  # the first hook's word kept
    assert client.get(many[1]).meta == {"batch": 1, "by": "first"}


def test_a_refusing_hook_writes_nothing_and_the_hooks_before_it_hear_why(client, calls) -> None:
    with pytest.raises(PermissionError, match="queue forbidden"):
        client.enqueue_with(resize, ["a.png"], queue="forbidden")
    with pytest.raises(PermissionError):
        client.enqueue_many(resize, [["a.png"]] * 3, queue="forbidden")
    assert calls[:2] == [
        ("first", "before", "tests.plan.resize", "forbidden", calls[0][4]),
        ("first", "after", "PermissionError"),
    ]
    assert sum(client.stats().values()) == 0


async def test_the_async_client_runs_the_same_hooks(target, store, calls) -> None:
    del store
    async with taskq.AsyncClient(
        target.dsn, schema=target.schema, middleware=[Recorder("only", calls), BrokenAfter()]
    ) as client:
        job_id = await client.enqueue(resize, "a.png")  # the broken after hook is logged
        ids = await client.enqueue_many(resize, [["b.png"]], unique_keys=["k"])
        assert (await client.get(job_id)).meta == {"by": "only"}
        assert (await client.get(ids[0])).meta == {"by": "only"}
    assert [c[:2] for c in calls] == [("only", "before"), ("only", "after")] * 2


def test_a_failed_write_reaches_after_enqueue(pg_target, calls) -> None:
    # a schema never migrated: the write fails, the hooks hear it
    with taskq.Client(
        pg_target.dsn, schema=pg_target.schema, middleware=[Recorder("r", calls)]
    ) as client:
        with pytest.raises(taskq.SchemaNotMigrated):
            client.enqueue(resize, "a.png")
    assert calls[-1] == ("r", "after", "SchemaNotMigrated")


@pytest.mark.parametrize(
    ("args", "kwargs", "why"),
    [
        (
            ["a.png"],
            {"widht": 3},
            r"unexpected keyword argument 'widht' \(did you mean 'width'\?\)",
        ),
        ([], {"width": 3}, "missing a required argument: 'path'"),
        (["a.png", 1, 2], {}, "too many positional arguments: 3 given, at most 2"),
        (["a.png"], {"path": "b.png"}, "multiple values for argument 'path'"),
        (["a.png", 1, "fill"], {}, "too many positional arguments"),  # mode is keyword-only
    ],
)
def test_arguments_that_do_not_fit_are_refused_at_enqueue(client, args, kwargs, why) -> None:
    shown = r"resize\(path, width=0, \*, mode='fit'\)"
    with pytest.raises(taskq.ArgumentsMismatch, match=rf"actor 'tests.plan.resize', {shown}: "):
        client.enqueue(resize, *args, **kwargs)
    with pytest.raises(taskq.ArgumentsMismatch, match=why):
        client.enqueue_with(resize, args, kwargs, unique_key="k")
    with pytest.raises(taskq.ArgumentsMismatch, match=why):
        client.enqueue_many(resize, [(["ok.png"], {}), (args, kwargs)])
    assert sum(client.stats().values()) == 0


def test_arguments_that_fit_are_taken_and_a_name_is_not_checked(client) -> None:
    client.enqueue(resize, "a.png", 3, mode="crop")
    client.enqueue(resize, path="a.png")
    client.enqueue(spread)
    client.enqueue(spread, "a", "b", quality=3)
    client.enqueue_many(spread, [((), {}), (["x"] * 50, {"y": 1})])
    # by name there is no function to check against (it may not be importable here)
    client.enqueue_with("tests.plan.resize", ["a.png"], {"widht": 3}, queue="plan")
    assert client.stats()["queued"] == 7


async def test_the_async_client_checks_them_too(target, store) -> None:
    del store
    async with taskq.AsyncClient(target.dsn, schema=target.schema) as client:
        with pytest.raises(taskq.ArgumentsMismatch, match="'widht'"):
            await client.enqueue(resize, "a.png", widht=3)
        with pytest.raises(taskq.ArgumentsMismatch, match="'path'"):
            await client.enqueue_many(resize, [((), {})])
        assert sum((await client.stats()).values()) == 0


def test_threads_share_one_client_and_its_hooks(client, calls) -> None:
    async def nothing() -> None: ...

    def produce(n: int) -> list[taskq.JobId]:
        return [client.enqueue(resize, f"{n}-{i}") for i in range(20)]

    async def all_at_once() -> list[list[taskq.JobId]]:
        await nothing()
        return await asyncio.gather(*(asyncio.to_thread(produce, n) for n in range(4)))

    ids = [i for chunk in asyncio.run(all_at_once()) for i in chunk]
    assert len(set(ids)) == 80
    assert len([c for c in calls if c[1] == "after" and c[2] is None]) == 160  # 2 hooks each
    assert client.stats()["queued"] == 80
