"""The synchronous ``taskq.Client`` on SQLite writes plain jobs on the calling thread
(``LocalEnqueue``: no hop to its loop thread nor to the store's thread). What it writes
is what the ``AsyncClient`` writes, from any number of threads at once, and a waiting
worker wakes for it."""

from __future__ import annotations

import asyncio
import threading
from datetime import UTC, datetime, timedelta

import pytest

import taskq
from taskq.store import create_store
from taskq.store.base import LocalEnqueue
from tests import worker_actors as actors
from tests.helpers import migrate
from tests.worker_harness import running_worker, wait_for_states

registry = taskq.Registry()


@registry.actor(name="tests.here", queue="here", max_attempts=4, idempotent=True, priority=3)
def here(path: str, width: int = 0) -> None: ...


SAME = ("actor", "queue", "state", "args", "kwargs", "priority", "attempts", "max_attempts",
        "max_crashes", "idempotent", "meta", "tags", "unique_key")  # fmt: skip


@pytest.fixture
def sqlite_store(sqlite_target):
    asyncio.run(migrate(sqlite_target.dsn, sqlite_target.schema))
    return sqlite_target


def test_only_the_sqlite_store_writes_on_the_calling_thread(sqlite_store, pg_target):
    assert isinstance(create_store(sqlite_store.dsn), LocalEnqueue)
    assert not isinstance(create_store(pg_target.dsn, pg_target.schema), LocalEnqueue)


def test_what_the_client_writes_is_what_the_async_client_writes(sqlite_store) -> None:
    calls = [
        ((here, ["a.png"], {"width": 8}), {}),
        ((here, ["b.png"], None), {"queue": "other", "priority": -1, "meta": {"by": "t"}}),
        ((here, [], None), {"tags": ["x", "y"]}),
    ]

    async def through_async() -> list[taskq.Job]:
        async with taskq.AsyncClient(sqlite_store.dsn) as client:
            ids = [await client.enqueue_with(*a, **k) for a, k in calls]
            ids += await client.enqueue_many(here, [(("m",), {"width": 1}), ["n"]])
            return [await client.get(i) for i in ids]

    with taskq.Client(sqlite_store.dsn) as client:
        ids = [client.enqueue_with(*a, **k) for a, k in calls]
        ids += client.enqueue_many(here, [(("m",), {"width": 1}), ["n"]])
        delayed = client.enqueue_with(here, ["late"], delay=3600)
        mine = [client.get(i) for i in ids]
        assert client.get(delayed).run_at > datetime.now(UTC) + timedelta(minutes=50)
    theirs = asyncio.run(through_async())
    assert [[getattr(j, f) for f in SAME] for j in mine] == [
        [getattr(j, f) for f in SAME] for j in theirs
    ]
    assert all(j.id.version == 7 for j in mine)


def test_many_threads_enqueue_at_once(sqlite_store) -> None:
    with taskq.Client(sqlite_store.dsn) as client:
        ids: list[taskq.JobId] = []
        lock = threading.Lock()

        def produce(n: int) -> None:
            mine = [client.enqueue(here, f"{n}-{i}") for i in range(50)]
            mine += client.enqueue_many(here, [((f"{n}-b{i}",), {}) for i in range(50)])
            with lock:
                ids.extend(mine)

        threads = [threading.Thread(target=produce, args=(n,)) for n in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        assert len(set(ids)) == 800
        assert client.stats()["queued"] == 800


def test_closed_and_opened_again(sqlite_store) -> None:
    client = taskq.Client(sqlite_store.dsn)
    first = client.enqueue(here, "one")
    client.close()
    second = client.enqueue(here, "two")  # opens the store again
    assert {client.get(first).args[0], client.get(second).args[0]} == {"one", "two"}
    client.close()


async def test_a_waiting_worker_wakes_for_what_the_client_wrote(sqlite_store) -> None:
    async with running_worker(sqlite_store):
        job_id = await asyncio.to_thread(_enqueue_noop, sqlite_store.dsn)
        async with taskq.AsyncClient(sqlite_store.dsn) as observer:
            (job,) = await wait_for_states(observer.store, [job_id], {"succeeded"})
    assert job.state == "succeeded"


def _enqueue_noop(dsn: str) -> taskq.JobId:
    with taskq.Client(dsn) as client:
        return client.enqueue(actors.noop)
