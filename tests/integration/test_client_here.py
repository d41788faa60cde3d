"""The synchronous ``taskq.Client`` writes plain jobs on the calling thread
(``LocalEnqueue``: no hop to its loop thread nor to the store's thread): SQLite on a
connection of that thread's, Postgres on a synchronous psycopg connection. What it
writes is what the ``AsyncClient`` writes, from any number of threads at once, a waiting
worker wakes for it, and on Postgres a kept connection the server dropped is replaced
before anything is sent on it (the restart itself: tests/acceptance/
test_dependency_restart.py)."""

from __future__ import annotations

import asyncio
import threading
from datetime import UTC, datetime, timedelta

import psycopg
import pytest

import taskq
from taskq.ids import uuid7_ints
from taskq.jobs import JobColumns, new_job_ids
from taskq.store import create_store
from taskq.store.base import LocalEnqueue
from tests.support import worker_actors as actors
from tests.support.helpers import migrate
from tests.support.worker_harness import running_worker, wait_for_states

registry = taskq.Registry()


@registry.actor(name="tests.here", queue="here", max_attempts=4, idempotent=True, priority=3)
def here(path: str, width: int = 0) -> None: ...


SAME = ("actor", "queue", "state", "args", "kwargs", "priority", "attempts", "max_attempts",
        "max_crashes", "idempotent", "meta", "tags", "unique_key")  # fmt: skip


@pytest.fixture
def migrated(target):
    asyncio.run(migrate(target.dsn, target.schema))
    return target


def test_both_stores_write_on_the_calling_thread(sqlite_target, pg_target):
    assert isinstance(create_store(sqlite_target.dsn), LocalEnqueue)
    assert isinstance(create_store(pg_target.dsn, pg_target.schema), LocalEnqueue)


def test_what_the_client_writes_is_what_the_async_client_writes(migrated) -> None:
    calls = [
        ((here, ["a.png"], {"width": 8}), {}),
        ((here, ["b.png"], None), {"queue": "other", "priority": -1, "meta": {"by": "t"}}),
        ((here, ["c.png"], None), {"tags": ["x", "y"]}),
        ((here, ["d\t\n\\N"], {"width": -(2**40)}), {"meta": {"é": "😀"}}),
    ]
    batch = [(("m",), {"width": 1}), ["n"]]
    big = [[f"copy-{i}\t"] for i in range(150)]  # 100 jobs or more: one COPY on Postgres

    async def through_async() -> list[taskq.Job]:
        async with taskq.AsyncClient(migrated.dsn, schema=migrated.schema) as client:
            ids = [await client.enqueue_with(*a, **k) for a, k in calls]
            ids += await client.enqueue_many(here, batch)
            ids += await client.enqueue_many(here, big, priority=7)
            return [await client.get(i) for i in ids]

    with taskq.Client(migrated.dsn, schema=migrated.schema) as client:
        ids = [client.enqueue_with(*a, **k) for a, k in calls]
        ids += client.enqueue_many(here, batch)
        ids += client.enqueue_many(here, big, priority=7)
        delayed = client.enqueue_with(here, ["late"], delay=3600)
        mine = [client.get(i) for i in ids]
        assert client.get(delayed).run_at > datetime.now(UTC) + timedelta(minutes=50)
    theirs = asyncio.run(through_async())
    assert [[getattr(j, f) for f in SAME] for j in mine] == [
        [getattr(j, f) for f in SAME] for j in theirs
    ]
    assert all(j.id.version == 7 for j in mine)


def test_many_threads_enqueue_at_once(migrated) -> None:
    """Eight threads share one client from its first use (not opened before: they open
    it together), each with single enqueues, a batch and one by name (the loop's path)."""
    client = taskq.Client(migrated.dsn, schema=migrated.schema)
    ids: list[taskq.JobId] = []
    errors: list[BaseException] = []
    lock = threading.Lock()
    start = threading.Barrier(8)

    def produce(n: int) -> None:
        try:
            start.wait(timeout=30)
            mine = [client.enqueue(here, f"{n}-{i}") for i in range(50)]
            mine += client.enqueue_many(here, [((f"{n}-b{i}",), {}) for i in range(49)])
            mine.append(client.enqueue_with(here.name, [f"{n}-name"], queue="here"))
        except BaseException as exc:
            errors.append(exc)
            raise
        with lock:
            ids.extend(mine)

    threads = [threading.Thread(target=produce, args=(n,)) for n in range(8)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        assert errors == []
        assert len(set(ids)) == 800
        assert client.stats()["queued"] == 800
    finally:
        client.close()


def test_closed_and_opened_again(migrated) -> None:
    client = taskq.Client(migrated.dsn, schema=migrated.schema)
    first = client.enqueue(here, "one")
    client.close()
    second = client.enqueue(here, "two")  # opens the store again
    assert {client.get(first).args[0], client.get(second).args[0]} == {"one", "two"}
    client.close()


async def test_a_waiting_worker_wakes_for_what_the_client_wrote(migrated) -> None:
    async with running_worker(migrated):
        job_id = await asyncio.to_thread(_enqueue_noop, migrated)
        async with taskq.AsyncClient(migrated.dsn, schema=migrated.schema) as observer:
            (job,) = await wait_for_states(observer.store, [job_id], {"succeeded"})
    assert job.state == "succeeded"


def _enqueue_noop(target) -> taskq.JobId:
    with taskq.Client(target.dsn, schema=target.schema) as client:
        return client.enqueue(actors.noop)


def test_a_kept_connection_the_server_dropped_is_replaced(pg_target) -> None:
    """The server ends the client's kept connections (as a restart does; the call waits
    for the backends to end): the next enqueues open new ones before sending anything,
    and every job is written once."""
    asyncio.run(migrate(pg_target.dsn, pg_target.schema))
    with taskq.Client(pg_target.dsn, schema=pg_target.schema) as client:
        first = [client.enqueue(here, f"before-{i}") for i in range(3)]
        with psycopg.connect(pg_target.dsn, autocommit=True) as admin:
            ended = admin.execute(  # only this test's: its schema is in the statement
                "SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity "
                "WHERE pid <> pg_backend_pid() AND datname = current_database() "
                "AND application_name = 'taskq' AND query LIKE %s",
                [f"%INSERT INTO%{pg_target.schema}%"],
            ).fetchall()
        assert ended, "no kept enqueue connection found to end"
        after = [client.enqueue(here, f"after-{i}") for i in range(3)]
        after += client.enqueue_many(here, [[f"after-b{i}"] for i in range(120)])
        queued = client.list(state="queued", limit=1000)
    assert sorted(j.id for j in queued) == sorted(first + after)


def test_a_failed_write_writes_nothing_and_raises_one_taskq_error(pg_target) -> None:
    """A write the server refuses (here: a job id already taken, the 2nd of 2 jobs, the
    121st of a COPY of 150) writes none of its jobs, and the next write works."""
    asyncio.run(migrate(pg_target.dsn, pg_target.schema))
    with taskq.Client(pg_target.dsn, schema=pg_target.schema) as client:
        store = client.enqueuer.store
        assert isinstance(store, LocalEnqueue)
        (taken,) = client.enqueue_many(here, [["ok"]])
        for n, at in ((2, 1), (150, 120)):
            ids = new_job_ids(uuid7_ints(n))
            ids[at] = taken
            jobs = JobColumns(ids, ['["x"]'] * n, ["{}"] * n, here.name, "here")
            with pytest.raises(taskq.StoreError, match="Postgres error"):
                store.enqueue_columns_here(jobs)
        client.enqueue(here, "ok again")
        assert client.stats()["queued"] == 2
