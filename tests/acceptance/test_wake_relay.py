"""One LISTEN connection per host: a real workgroup relays wake-ups to its real children.

With ``TASKQ_PG_DSN_DIRECT`` set, the supervisor holds the host's one LISTEN connection
and its children open none (counted in ``pg_stat_activity``). The children poll only
every 300 s here, so a job they run within the test's deadline (far shorter) was
announced to them: by the relay, since they listen to nothing else. A child whose
supervisor is SIGKILLed says so (its ``wake-relay-lost`` event, counted in its
``/metrics``) and goes on by polling: a cancel requested afterwards still stops its job.
Postgres only: SQLite has no notifications to relay.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any
from uuid import UUID

import psycopg
import pytest

from taskq.client import AsyncClient
from taskq.store.postgres.notices import APPLICATION_NAME
from taskq.workgroup.config import health_socket_path
from tests.conftest import target_fixture
from tests.support.helpers import async_wait_until, migrated_store
from tests.support.worker_harness import http_get, metric_value
from tests.support.workgroup_actors import nap, noop, send_email
from tests.support.workgroup_harness import Workgroup, run_cli, workgroup_processes, write_config

pytestmark = pytest.mark.slow

NEVER = 300  # the children's poll_interval: no test here waits that long
#: TASKQ_DSN direct, and through a real PgBouncer in transaction mode
target = target_fixture("postgres", "postgres-pgbouncer")


@pytest.fixture
def workgroups() -> Iterator[Callable[[Path, dict[str, str]], Workgroup]]:
    with workgroup_processes() as start:
        yield start


@pytest.fixture
async def pg_store(target) -> AsyncIterator[Any]:
    async with migrated_store(target.dsn, target.schema) as store:
        yield store


def relayed_env(target: Any) -> dict[str, str]:
    return {**target.env, "TASKQ_PG_DSN_DIRECT": target.direct_dsn or target.dsn}


def listening(dsn: str, schema: str) -> list[tuple[str, int]]:
    """Who LISTENs on this schema's channels: (application_name, pid) per connection (a
    listener's last statement is its LISTEN; the channels are named after the schema)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT application_name, pid FROM pg_stat_activity "
            "WHERE query ILIKE 'LISTEN %%' AND query LIKE %s ORDER BY pid",
            (f"%{schema}%",),
        ).fetchall()
    return [(name, pid) for name, pid in rows]


async def in_thread(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    return await asyncio.to_thread(fn, *args, **kwargs)


async def state_of(store: Any, job_id: Any) -> str:
    job = await store.get_job(job_id)
    return job.state if job is not None else "missing"


async def test_one_listen_connection_for_a_workgroup_of_four_children_wakes_each_of_them(
    target, pg_dsn, pg_store, tmp_path: Path, workgroups
) -> None:
    config = write_config(
        tmp_path / "wg.toml",
        f"[supervisor]\nhttp_port = 0\n[defaults]\npoll_interval = {NEVER}\n"
        + "".join(f'[[workers]]\nname = "w{i}"\nqueues = ["default"]\n' for i in range(2))
        + '[[workers]]\nname = "mail"\nqueues = ["email"]\n'
        # no queues: the registry's, every one of them
        + '[[workers]]\nname = "any"\n',
    )
    wg = workgroups(config, relayed_env(target))
    await in_thread(wg.wait_event, "worker-started", count=4)
    (relay,) = await in_thread(wg.wait_event, "wake-relay-listening")
    assert relay["schema"] == target.schema

    status = (await in_thread(wg.status))["wake_relay"]
    assert status["listening"] and status["schema"] == target.schema
    assert status["children"] == ["any", "mail", "w0", "w1"]
    listeners = await in_thread(listening, pg_dsn, target.schema)
    assert [name for name, _ in listeners] == [APPLICATION_NAME]

    async with AsyncClient(store=pg_store) as client:
        # one by one: each job is enqueued while every child waits (idle) for news
        for n in range(6):
            job = await client.enqueue(noop)
            await async_wait_until(
                lambda job=job: _is(state_of(pg_store, job), "succeeded"),
                timeout=60,
                what=f"default job {n} to run (announced by the relay)",
            )
        mail = await client.enqueue(send_email, "ops@example.com")
        await async_wait_until(
            lambda: _is(state_of(pg_store, mail), "succeeded"),
            timeout=60,
            what="the email job to run (on `mail` or `any`)",
        )
    ran_mail = await pg_store.get_job(mail)
    consumers = [await pg_store.find_worker(UUID(wg.instance), n) for n in ("mail", "any")]
    assert ran_mail.worker_id in {row.id for row in consumers if row is not None}
    # still one listener: no child opened a LISTEN connection of its own meanwhile
    assert await in_thread(listening, pg_dsn, target.schema) == listeners
    # through a pooler: no child polled for want of a LISTEN of its own
    assert wg.events("listen-unavailable") == []
    assert await in_thread(wg.stop) == 0


@pytest.mark.parametrize("target", ["postgres"], indirect=True)
async def test_a_child_whose_supervisor_is_sigkilled_says_so_and_polls(
    target, pg_store, tmp_path: Path, workgroups
) -> None:
    # the child outlives its supervisor by its shutdown grace (30 s) while its job runs
    config = write_config(
        tmp_path / "wg.toml",
        f'[supervisor]\nshutdown_grace = 200\n[[workers]]\nname = "api"\npoll_interval = {NEVER}\n',
    )
    wg = workgroups(config, relayed_env(target))
    await in_thread(wg.wait_event, "worker-started")
    await in_thread(wg.wait_event, "wake-relay-listening")
    socket_path = health_socket_path(UUID(wg.instance), "api")

    async with AsyncClient(store=pg_store) as client:
        job = await client.enqueue(nap, 600)
        await async_wait_until(
            lambda: _is(state_of(pg_store, job), "running"), timeout=60, what="the nap running"
        )
        lost_before = await _relay_lost(socket_path)
        assert lost_before == 0

        wg.signal(signal.SIGKILL)
        await in_thread(wg.wait_exit)
        # the child's log went to its dead supervisor's pipe; its event's counter did not
        await async_wait_until(
            lambda: _relay_lost(socket_path), timeout=60, what="the child's wake-relay-lost"
        )
        assert await _relay_lost(socket_path) == 1
        # nobody relays any more: the child finds this cancel by polling
        await client.cancel(job)
        await async_wait_until(
            lambda: _is(state_of(pg_store, job), "cancelled"),
            timeout=60,
            what="the nap cancelled by a child without its supervisor",
        )


@pytest.mark.parametrize("target", ["postgres-pgbouncer"], indirect=True)
def test_a_direct_dsn_that_is_not_the_children_s_database_directly_is_refused_at_start(
    target, pgbouncer_dsn: str, tmp_path: Path
) -> None:
    config = write_config(tmp_path / "wg.toml", '[[workers]]\nname = "api"\n')
    assert target.direct_dsn is not None
    other_database = target.direct_dsn.rsplit("/", 1)[0] + "/postgres"
    for direct, says in (
        (other_database, "reaches database 'postgres'"),
        (pgbouncer_dsn, "goes through a connection pooler"),
        ("postgresql://taskq@127.0.0.1/app?bogus=1", "invalid DSN"),
    ):
        env = {**target.env, "TASKQ_PG_DSN_DIRECT": direct}
        proc = run_cli("workgroup", "start", str(config), env=env, timeout=60)
        assert proc.returncode == 1, proc.stderr
        lines = [line for line in proc.stderr.splitlines() if line.startswith("taskq:")]
        assert len(lines) == 1 and says in lines[0] and "TASKQ_PG_DSN_DIRECT" in lines[0], (
            proc.stderr
        )
        assert "Traceback" not in proc.stderr
        assert "worker-started" not in proc.stderr + proc.stdout  # no child was started


async def _relay_lost(socket_path: str) -> float:
    status, body = await http_get("/metrics", socket_path=socket_path)
    assert status == 200, body
    return metric_value(body, "taskq_wake_relay_lost_total") or 0.0


async def _is(state: Any, wanted: str) -> bool:
    return (await state) == wanted
