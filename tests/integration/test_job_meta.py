"""Meta and tags at enqueue, on both stores, for single jobs and large batches."""

from __future__ import annotations

import pytest

import taskq
from taskq import AsyncClient, NotJSONSerializable, PayloadTooLarge

registry = taskq.Registry()


@registry.actor
def report(n: int) -> None: ...


@pytest.fixture
async def client(target):
    async with AsyncClient(target.dsn, schema=target.schema) as c:
        await c.store.migrate()
        yield c


async def test_a_large_batch_keeps_meta_and_tags_and_tag_filters_find_it(client):
    # 150 rows: the COPY-sized path (a staging table on Postgres)
    ids = await client.enqueue_many(
        report, [([n], {}) for n in range(150)], meta={"batch": 7}, tags=["nightly", "eu"]
    )
    await client.enqueue(report, 999)
    assert len(set(ids)) == 150 and not any(i.duplicate for i in ids)
    job = await client.get(ids[42])
    assert job.meta == {"batch": 7} and job.tags == ["nightly", "eu"]
    assert {j.id for j in await client.list(tag="eu", limit=500)} == set(ids)
    assert await client.list(tag="nope") == []
    plain = (await client.list(limit=1))[0]
    assert plain.meta == {} and plain.tags == []


async def test_bad_meta_and_tags_are_refused_before_anything_is_written(client):
    with pytest.raises(NotJSONSerializable, match="must be a JSON object"):
        await client.enqueue_with(report, [1], meta=["not", "an", "object"])  # type: ignore[arg-type]
    with pytest.raises(PayloadTooLarge, match="over the limit"):
        await client.enqueue_with(report, [1], meta={"blob": "x" * 10_000})
    with pytest.raises(NotJSONSerializable, match="a tag must be"):
        await client.enqueue_with(report, [1], tags=["ok", ""])
    with pytest.raises(NotJSONSerializable, match="list of strings"):
        await client.enqueue_with(report, [1], tags="eu")
    with pytest.raises(PayloadTooLarge, match="at most 20 tags"):
        await client.enqueue_with(report, [1], tags=[f"t{i}" for i in range(21)])
    assert (await client.stats())["queued"] == 0
