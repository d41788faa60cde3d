"""``Store.enqueue_columns`` (the batch enqueue's path: jobs as columns, no ``JobSpec``
each) against ``Store.enqueue`` of the same jobs as specs, on both engines: the same
rows, the same ids, the same all-or-nothing, the same run_at and the same wake-up; and
``AsyncClient.enqueue_many`` on it (ids in order, errors as before, nothing written)."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

import taskq
from taskq.exceptions import StoreError
from taskq.ids import uuid7, uuid7_ints
from taskq.jobs import Job, JobColumns, JobId, new_job_ids
from tests.support.storekit import another_store

#: text that COPY's text format and JSON each treat specially
TRICKY = ["tab\there", "new\nline", "cr\rhere", "back\\slash", "\\N", '"quoted"', "é😀", ""]
#: fields that differ between two inserts of the same job (ids, and the clock's times)
OWN = {"id", "run_at", "created_at"}


def columns(n: int, **shared: Any) -> JobColumns:
    """``n`` jobs with distinct arguments (the tricky texts among them)."""
    return JobColumns(
        ids=new_job_ids(uuid7_ints(n)),
        args_json=[json.dumps([TRICKY[i % len(TRICKY)], i], ensure_ascii=False) for i in range(n)],
        kwargs_json=["{}" if i % 3 else json.dumps({"k\t": TRICKY}) for i in range(n)],
        **{"actor": "tests.echo", "queue": "default", **shared},
    )


def fields(job: Job) -> dict[str, Any]:
    return {k: v for k, v in job.to_dict().items() if k not in OWN}


async def same_as_specs(store, jobs: JobColumns) -> list[Job]:
    """Insert ``jobs`` by columns and (under new ids) as specs; assert the rows agree."""
    await store.enqueue_columns(jobs)
    twins = [replace(s, id=uuid7()) for s in jobs.specs()]
    assert await store.enqueue(twins) == [s.id for s in twins]
    got = []
    for job_id, twin in zip(jobs.ids, twins, strict=True):
        job, other = await store.get_job(job_id), await store.get_job(twin.id)
        assert job is not None and other is not None
        assert fields(job) == fields(other)
        got.append(job)
    return got


@pytest.mark.parametrize("n", [1, 7, 99, 100, 601])  # < 100: one INSERT on Postgres, else COPY
async def test_columns_give_the_rows_specs_give(store, n):
    jobs = await same_as_specs(
        store, columns(n, priority=-3, max_attempts=7, max_crashes=4, idempotent=True)
    )
    assert [j.args for j in jobs] == [json.loads(a) for a in columns(n).args_json]
    assert {(j.state, j.priority, j.max_attempts, j.max_crashes, j.idempotent) for j in jobs} == {
        ("queued", -3, 7, 4, True)
    }


@pytest.mark.parametrize("n", [3, 150])
async def test_meta_tags_and_tricky_names_are_kept(store, n):
    meta = {"who": 'a "b" \\ c\td', "n": 1}
    tags = ("t1", 'quo"te', "back\\slash", "comma,brace}")
    jobs = await same_as_specs(
        store,
        columns(n, actor="tests.tab\tactor", queue="q\\1", meta_json=json.dumps(meta), tags=tags),
    )
    assert all(j.meta == meta and j.tags == list(tags) for j in jobs)
    assert {(j.actor, j.queue) for j in jobs} == {("tests.tab\tactor", "q\\1")}
    assert [j.id for j in await store.list_jobs(tag="back\\slash", limit=1000)][:1] != []


@pytest.mark.parametrize("n", [2, 120])
async def test_json_from_elsewhere_with_raw_whitespace(store, n):
    """Arguments are JSON text; one holding raw newlines and tabs (indented, say) is
    stored as it is."""
    jobs = columns(n)
    jobs = replace(
        jobs,
        args_json=[json.dumps([i, {"x": "\\"}], indent="\t") for i in range(n)],
        kwargs_json=['{\r\n "a": 1}'] * n,
    )
    stored = await same_as_specs(store, jobs)
    assert stored[-1].args == [n - 1, {"x": "\\"}] and stored[-1].kwargs == {"a": 1}


@pytest.mark.parametrize("n", [5, 200])
async def test_run_at_semantics(store, n):
    """No run_at: due now, by the store's clock (claimable at once); a run_at: kept."""
    later = (datetime.now(UTC) + timedelta(hours=1)).replace(microsecond=0)
    now_jobs, later_jobs = columns(n), columns(n, run_at=later)
    before = await store.now()
    await store.enqueue_columns(now_jobs)
    await store.enqueue_columns(later_jobs)
    due = await store.get_job(now_jobs.ids[-1])
    assert before - timedelta(seconds=5) <= due.run_at <= await store.now()
    assert due.run_at == due.created_at
    assert (await store.get_job(later_jobs.ids[0])).run_at == later
    claimed = (await store.claim(uuid7(), ["default"], 10 * n, 30.0)).jobs
    assert {c.id for c in claimed} == set(now_jobs.ids)


@pytest.mark.parametrize("n", [4, 300])
async def test_all_or_nothing(store, n):
    first = columns(1)
    await store.enqueue_columns(first)
    batch = columns(n)
    clash = replace(batch, ids=[*batch.ids[:-1], first.ids[0]])  # a duplicate id: all fail
    with pytest.raises(StoreError):
        await store.enqueue_columns(clash)
    assert (await store.stats())["queued"] == 1
    assert await store.get_job(batch.ids[0]) is None
    await store.enqueue_columns(columns(0))  # an empty batch writes nothing, asks nothing
    assert (await store.stats())["queued"] == 1


@pytest.mark.parametrize("n", [3, 150])
async def test_a_batch_wakes_a_waiting_worker(store, target, n):
    assert (await store.claim(uuid7(), ["default"], 10, 30.0)).jobs == []
    await store.wait_for_jobs(["default"], timeout=0.0)  # listening from here on
    async with another_store(target) as producer:
        waiter = asyncio.create_task(store.wait_for_jobs(["default"], timeout=20.0))
        await producer.enqueue_columns(columns(n))
        assert await asyncio.wait_for(waiter, timeout=25.0) is True


# -- through AsyncClient.enqueue_many --------------------------------------------------
registry = taskq.Registry()


@registry.actor(name="tests.cols", queue="cols", max_attempts=4, idempotent=True, priority=2)
async def cols(text: str, n: int = 0) -> None:
    del text, n


@registry.actor(name="tests.cols_unique", queue="cols", unique=taskq.Unique())
async def cols_unique(text: str) -> None:
    del text


@pytest.fixture
async def client(store, target):
    del store  # migrated
    async with taskq.AsyncClient(target.dsn, schema=target.schema) as c:
        yield c


@pytest.mark.parametrize("n", [1, 50, 1000])
async def test_enqueue_many_ids_in_order_and_rows(client, n):
    items = [((TRICKY[i % len(TRICKY)],), {}) for i in range(n)]
    items[-1] = ((TRICKY[0],), {"n": n})  # kwargs on one of them
    ids = await client.enqueue_many(cols, items, tags=["x"], meta={"m": 1})
    assert len(ids) == n and all(type(i) is JobId and not i.duplicate for i in ids)
    assert ids == sorted(ids)  # time-ordered, in the items' order
    jobs = [await client.get(i) for i in (ids[0], ids[-1])]
    assert jobs[0].args == [TRICKY[0]] and jobs[0].kwargs == ({} if n > 1 else {"n": n})
    assert jobs[1].kwargs == {"n": n}
    assert {(j.queue, j.priority, j.max_attempts, j.idempotent) for j in jobs} == {
        ("cols", 2, 4, True)
    }
    assert all(j.tags == ["x"] and j.meta == {"m": 1} for j in jobs)
    listed = await client.list(queue="cols", limit=n)
    assert [j.id for j in reversed(listed)] == ids


async def test_enqueue_many_shapes_and_delay(client):
    ids = await client.enqueue_many(
        cols, [["a"], ("b", 1), (["c"], {"n": 2}), ((), {"text": "d"})], delay=60
    )
    jobs = [await client.get(i) for i in ids]
    assert [(j.args, j.kwargs) for j in jobs] == [
        (["a"], {}),
        (["b", 1], {}),
        (["c"], {"n": 2}),
        ([], {"text": "d"}),
    ]
    assert all(j.run_at - j.created_at >= timedelta(seconds=59) for j in jobs)
    assert await client.enqueue_many(cols, []) == []
    assert await client.enqueue_many(cols, iter([("d",)])) != []


async def test_enqueue_many_refuses_bad_items_and_writes_nothing(client):
    cases = [
        ([(("ok",), {}), ((b"bytes",), {})], taskq.NotJSONSerializable, "not JSON-serialisable"),
        ([(("ok",), {}), ((float("nan"),), {})], taskq.NotJSONSerializable, "Out of range"),
        ([(("x" * (1024 * 1024),), {})], taskq.PayloadTooLarge, "over the limit of 1048576"),
        ([(("ok",), {1: 2})], taskq.NotJSONSerializable, "names of 'tests.cols' must be strings"),
        (["ok", 3], taskq.ConfigError, "must be \\(args, kwargs\\) pairs, got str"),
    ]
    circular: list[Any] = []
    circular.append(circular)
    cases.append(([((circular,), {})], taskq.NotJSONSerializable, "Circular reference"))
    for items, error, message in cases:
        with pytest.raises(error, match=message):
            await client.enqueue_many(cols, items)
        with pytest.raises(error, match=message):  # the same as the spec path says it
            await client.enqueue_many(cols, items, unique_keys=[None] * len(items))
    assert sum((await client.stats()).values()) == 0


async def test_enqueue_many_with_unique_keys_still_finds_duplicates(client):
    first = await client.enqueue_many(cols_unique, [("a",), ("b",)])
    again = await client.enqueue_many(cols_unique, [("a",), ("c",)])
    assert again[0] == first[0] and again[0].duplicate and not again[1].duplicate
    keyed = await client.enqueue_many(cols, [("a",), ("b",)], unique_keys=["k", "k"])
    assert keyed[1] == keyed[0] and keyed[1].duplicate
