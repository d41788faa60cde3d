"""The wake-up relay's two ends in one process: the supervisor's ``WakeRelay`` on a real
Postgres LISTEN connection, real pipes, and the child's ``RelayedWakeups`` part.

Each child hears of its own queues and of every cancel; a relay that lost its connection
(its backend terminated) is back by itself and tells every child to look at everything;
a child whose relay closed says so once and from then on waits out its timeouts (polls).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from typing import Any

import psycopg
import pytest

from taskq.client import AsyncClient
from taskq.store import host_notices
from taskq.store.postgres.notices import APPLICATION_NAME
from taskq.store.postgres.store import channel_for
from taskq.worker.relay import RelayedWakeups
from taskq.workgroup.relay import WakeRelay
from tests.support.helpers import async_wait_until, migrated_store
from tests.support.worker_logs import captured_logs
from tests.support.workgroup_actors import noop, send_email

DEADLINE = 30.0


@pytest.fixture
async def pg_store(pg_target) -> AsyncIterator[Any]:
    async with migrated_store(pg_target.dsn, pg_target.schema) as store:
        yield store


async def pipe_reader(fd: int) -> tuple[asyncio.StreamReader, asyncio.ReadTransport]:
    reader = asyncio.StreamReader()
    transport, _ = await asyncio.get_running_loop().connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(fd, "rb", buffering=0)
    )
    return reader, transport


async def next_line(reader: asyncio.StreamReader) -> bytes:
    return await asyncio.wait_for(reader.readline(), DEADLINE)


def notify(dsn: str, channel: str, payload: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("SELECT pg_notify(%s, %s)", (channel, payload))


def terminate_relay_backend(dsn: str, schema: str) -> int:
    """Kill this test's relay connection (its last statement LISTENs on the schema's channel)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
            "WHERE application_name = %s AND query LIKE %s AND pid <> pg_backend_pid()",
            (APPLICATION_NAME, f"%{schema}%"),
        ).fetchone()
    return int(row[0]) if row else 0


async def test_each_child_hears_of_its_own_queues_and_of_every_cancel(pg_target, pg_store) -> None:
    relay = WakeRelay(host_notices(pg_target.dsn, pg_target.schema), retry_initial=0.05)
    mail, mail_transport = await pipe_reader(relay.attach("mail", ["email"]))
    main, main_transport = await pipe_reader(relay.attach("main", ["default"]))
    # no queues configured: the child consumes its registry's, so it hears of every queue
    every, every_transport = await pipe_reader(relay.attach("every", []))
    running = asyncio.create_task(relay.run())
    try:
        # once LISTENing, every child is told to look at everything (it may have missed news)
        assert await next_line(mail) == b"*\n"
        assert await next_line(main) == b"*\n"
        assert await next_line(every) == b"*\n"
        assert relay.listening

        async with AsyncClient(store=pg_store) as client:
            await client.enqueue(send_email, "a@example.com")
            await client.enqueue(noop)
        assert await next_line(mail) == b"j email\n"
        # main's next news names its own queue only, though an email job came first
        assert await next_line(main) == b"j default\n"
        heard: set[bytes] = set()
        while heard != {b"default", b"email"}:  # in one message or two
            line = await next_line(every)
            assert line.startswith(b"j "), line
            heard |= set(line.split()[1:])

        await asyncio.to_thread(
            notify, pg_target.dsn, channel_for(pg_target.schema, "cancel"), "some-job-id"
        )
        assert await next_line(mail) == b"c\n"
        assert await next_line(main) == b"c\n"
        assert await next_line(every) == b"c\n"

        # its backend killed, the relay opens another connection and says "everything"
        with captured_logs() as logs:
            killed = await asyncio.to_thread(
                terminate_relay_backend, pg_target.dsn, pg_target.schema
            )
            assert killed >= 1
            assert await next_line(mail) == b"*\n"
            assert await next_line(main) == b"*\n"
        (failed,) = logs.events("wake-relay-listen-failed")
        assert failed["level"] == "warning"
        assert len(logs.events("wake-relay-listening")) == 1
        assert relay.connections == 2
    finally:
        relay.stop()
        await asyncio.wait_for(running, DEADLINE)
        for transport in (mail_transport, main_transport, every_transport):
            transport.close()
    # stopped: the write ends are closed, which is how a child learns its relay is gone
    assert await next_line(mail) == b""


async def test_a_child_whose_relay_closes_says_so_once_then_polls(pg_target, pg_store) -> None:
    relay = WakeRelay(host_notices(pg_target.dsn, pg_target.schema))
    fd = relay.attach("main", ["default"])
    child = RelayedWakeups(fd)
    await child.start()
    relaying = asyncio.create_task(relay.run())
    with captured_logs() as logs:
        reading = asyncio.create_task(child.run())
        try:
            # the relay's first news: look at everything (jobs and cancels)
            assert await child.wait_for_jobs(["default"], DEADLINE)
            assert await child.wait_for_cancels(DEADLINE)
            async with AsyncClient(store=pg_store) as client:
                await client.enqueue(noop)
            assert await child.wait_for_jobs(["default"], DEADLINE)

            relay.stop()  # its pipe closes as a SIGKILLed supervisor's would
            await asyncio.wait_for(relaying, DEADLINE)
            await async_wait_until(_true(lambda: child.lost), what="the child to notice")
            # once: both waiters look now (news may have been missed) ...
            assert await child.wait_for_jobs(["default"], DEADLINE)
            assert await child.wait_for_cancels(DEADLINE)
            # ... then every wait lasts its timeout: the fetcher polls
            assert not await child.wait_for_jobs(["default"], 0.05)
            assert not await child.wait_for_cancels(0.05)
            assert not reading.done()  # lost is not dead: the part runs until stopped
        finally:
            child.stop()
            await asyncio.wait_for(reading, DEADLINE)
    (lost,) = logs.events("wake-relay-lost")
    assert lost["level"] == "warning" and "polls" in lost["note"]


async def test_a_child_stopped_while_its_relay_is_up_does_not_call_it_lost(
    pg_target, pg_store
) -> None:
    relay = WakeRelay(host_notices(pg_target.dsn, pg_target.schema))
    child = RelayedWakeups(relay.attach("main", ["default"]))
    await child.start()
    relaying = asyncio.create_task(relay.run())
    with captured_logs() as logs:
        reading = asyncio.create_task(child.run())
        assert await child.wait_for_jobs(["default"], DEADLINE)  # the relay's "*"
        child.stop()
        await asyncio.wait_for(reading, DEADLINE)
    relay.stop()
    await asyncio.wait_for(relaying, DEADLINE)
    assert not child.lost
    assert logs.events("wake-relay-lost") == []


def _true(fn: Any) -> Any:
    async def check() -> bool:
        return bool(fn())

    return check
