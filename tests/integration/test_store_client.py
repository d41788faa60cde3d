"""The stores through the public clients: ``taskq.Client`` (no event loop of its own
caller) and ``taskq.AsyncClient``, on both engines, including each bad input."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest

import taskq
from taskq.ids import uuid7
from taskq.jobs import ActorConfig, Outcome, OutcomeKind
from taskq.store import create_store
from tests.support.helpers import migrate

registry = taskq.Registry()


@registry.actor(name="tests.resize", queue="images", max_attempts=5, max_crashes=3, idempotent=True)
def resize(path: str, width: int = 0) -> dict:
    return {"path": path, "width": width}


@pytest.fixture
def migrated(target):
    asyncio.run(migrate(target.dsn, target.schema))
    return target


async def _kill(target, job_id, *, record: ActorConfig | None = None) -> None:
    """Make a job dead (claimed and failed by a stand-in worker)."""
    store = create_store(target.dsn, target.schema)
    await store.open()
    try:
        w = uuid7()
        claimed = (await store.claim(w, ["images", "default"], 100, 30.0)).jobs
        await store.complete(
            w,
            [
                Outcome(c.id, c.attempt, OutcomeKind.DEAD, error="boom")
                for c in claimed
                if c.id == job_id
            ],
        )
        if record is not None:
            await store.sync_actor_configs([record], force=True)
    finally:
        await store.close()


def test_sync_client_without_an_event_loop(migrated):
    with pytest.raises(RuntimeError):
        asyncio.get_running_loop()  # a plain synchronous caller
    with taskq.Client(migrated.dsn, schema=migrated.schema) as client:
        job_id = client.enqueue(resize, "a.png", width=64)
        job = client.get(job_id)
        assert (job.actor, job.queue, job.state, job.args, job.kwargs) == (
            "tests.resize",
            "images",
            "queued",
            ["a.png"],
            {"width": 64},
        )
        assert (job.max_attempts, job.max_crashes, job.idempotent) == (5, 3, True)
        assert client.get(str(job_id)).id == job_id

        ids = client.enqueue_many(resize, [(("b.png",), {"width": 1}), ["c.png"]])
        assert [client.get(i).args for i in ids] == [["b.png"], ["c.png"]]
        delayed = client.enqueue_with(resize, ["d.png"], delay=3600, priority=-2)
        assert client.get(delayed).priority == -2
        assert client.get(delayed).run_at > datetime.now(UTC) + timedelta(minutes=50)

        assert client.stats() == {
            "queued": 4,
            "running": 0,
            "succeeded": 0,
            "dead": 0,
            "cancelled": 0,
        }
        assert [j.id for j in client.list(limit=2)] == [delayed, ids[1]]
        client.cancel(ids[0])
        assert [j.id for j in client.list(state="cancelled")] == [ids[0]]
        with pytest.raises(taskq.InvalidJobState):
            client.cancel(ids[0])
        client.retry(ids[0])
        assert client.get(ids[0]).state == "queued"
        with pytest.raises(taskq.InvalidJobState):
            client.retry(ids[0])


def test_sync_client_runs_its_async_clients_calls_on_its_loop(migrated):
    """``Client.async_client`` and ``Client.run``: the seam ``taskq.testing`` uses (the
    store opened first; the coroutine runs on the loop its connections belong to)."""
    with taskq.Client(migrated.dsn, schema=migrated.schema) as client:
        job_id = client.enqueue(resize, "a.png")
        inner = client.async_client
        assert inner.enqueuer is client.enqueuer
        assert client.run(inner.get(job_id)).id == job_id
        assert client.run(inner.store.stats())["queued"] == 1

        async def loop_thread() -> str:
            import threading

            return threading.current_thread().name

        assert client.run(loop_thread()) == "taskq-client"
    fresh = taskq.Client(migrated.dsn, schema=migrated.schema)  # not opened: run opens it
    try:
        assert fresh.run(fresh.async_client.stats())["queued"] == 1
    finally:
        fresh.close()


async def test_async_client_mirrors_the_sync_one(migrated):
    async with taskq.AsyncClient(migrated.dsn, schema=migrated.schema) as client:
        job_id = await client.enqueue(resize, "a.png", width=64)
        assert (await client.get(job_id)).args == ["a.png"]
        ids = await client.enqueue_many(resize, [(("x",), {}) for _ in range(3)])
        assert len(set(ids)) == 3
        assert (await client.stats())["queued"] == 4
        assert len(await client.list(queue="images")) == 4
        await client.cancel(ids[0])
        await client.retry(ids[0])
        await _kill(migrated, job_id)
        assert (await client.get(job_id)).dead_reason == "failed"
        await client.retry(job_id)
        job = await client.get(job_id)
        assert (job.state, job.attempts, job.last_error) == ("queued", 0, "boom")
        assert await client.retry_all_dead() == 0


def test_enqueue_many_of_10000_in_one_call(migrated):
    with taskq.Client(migrated.dsn, schema=migrated.schema) as client:
        ids = client.enqueue_many(resize, [((f"{i}.png",), {"width": i}) for i in range(10_000)])
        assert len(set(ids)) == 10_000
        assert client.stats()["queued"] == 10_000
        assert client.get(ids[-1]).kwargs == {"width": 9_999}


def test_bad_arguments_are_refused_and_nothing_is_written(migrated):
    with taskq.Client(migrated.dsn, schema=migrated.schema) as client:
        with pytest.raises(taskq.NotJSONSerializable, match=r"tests\.resize"):
            client.enqueue(resize, object())
        with pytest.raises(taskq.NotJSONSerializable):
            client.enqueue(resize, "a", width={1, 2})
        with pytest.raises(taskq.PayloadTooLarge, match="over the limit"):
            client.enqueue(resize, "x" * (1024 * 1024 + 1))
        with pytest.raises(taskq.NotJSONSerializable):  # one bad item: the batch is refused
            client.enqueue_many(resize, [(("ok",), {}), ((b"bytes",), {})])
        assert sum(client.stats().values()) == 0


def test_unknown_job_ids(migrated):
    with taskq.Client(migrated.dsn, schema=migrated.schema) as client:
        with pytest.raises(taskq.JobNotFound):
            client.get(uuid7())
        with pytest.raises(taskq.JobNotFound, match="expected a UUID"):
            client.get("not-a-uuid")
        with pytest.raises(taskq.JobNotFound):
            client.retry(uuid7())
        with pytest.raises(taskq.JobNotFound):
            client.cancel(uuid7())


def test_bad_dsn_unreachable_server_and_bad_schema():
    with pytest.raises(taskq.InvalidDSN, match="expected postgresql"):
        taskq.Client("mysql://root@localhost/x")
    with pytest.raises(taskq.ConfigError, match="invalid schema name"):
        taskq.Client("postgresql://root@127.0.0.1/test", schema="no-dashes")
    client = taskq.Client("postgresql://root:pw@127.0.0.1:1/test")
    with pytest.raises(taskq.StoreUnavailable) as info:
        client.enqueue("tests.resize", "a")
    client.close()
    assert "\n" not in str(info.value) and "pw" not in str(info.value)
    assert "127.0.0.1:1" in str(info.value)


def test_unmigrated_store_says_run_migrate(target):
    with taskq.Client(target.dsn, schema=target.schema) as client:
        with pytest.raises(taskq.SchemaNotMigrated, match="taskq migrate"):
            client.enqueue("tests.resize", "a")


def test_enqueue_by_name_without_importing_the_actor(migrated):
    with taskq.Client(migrated.dsn, schema=migrated.schema) as client:
        with pytest.raises(taskq.ActorNotFound, match="unknown actor"):
            client.enqueue("some.module:never_imported", 1)  # its queue is unknown
        job = client.get(client.enqueue_with("some.module:never_imported", [1], queue="default"))
        assert (job.actor, job.queue, job.max_attempts, job.max_crashes, job.idempotent) == (
            "some.module:never_imported",
            "default",
            3,
            2,
            False,
        )

    recorded = ActorConfig(
        name="tests.recorded",
        queue="reports",
        max_attempts=9,
        max_crashes=4,
        idempotent=True,
        cpu_bound=False,
        timeout=None,
    )
    asyncio.run(_kill(migrated, None, record=recorded))
    with taskq.Client(migrated.dsn, schema=migrated.schema) as client:
        job = client.get(client.enqueue("tests.recorded", "q1"))
        assert (job.queue, job.max_attempts, job.max_crashes, job.idempotent) == (
            "reports",
            9,
            4,
            True,
        )
        other = client.get(client.enqueue_with("tests.recorded", ["q2"], queue="urgent"))
        assert other.queue == "urgent"
