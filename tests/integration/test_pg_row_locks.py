"""Postgres statements that lock many running rows of one worker must not wait on each
other in a cycle: the heartbeat skips rows someone holds instead of waiting for them
(the acker's complete and the heartbeat deadlocked under load before)."""

from __future__ import annotations

import asyncio

import psycopg
import pytest

from taskq.ids import uuid7
from taskq.jobs import Outcome, OutcomeKind, WorkerInfo
from tests.support.helpers import migrated_store
from tests.support.storekit import spec


@pytest.fixture
async def store(pg_target):
    """Postgres only (the root conftest's ``store`` runs on both stores)."""
    async with migrated_store(pg_target.dsn, pg_target.schema) as s:
        yield s


async def test_the_heartbeat_skips_a_running_row_another_transaction_holds(
    pg_target, store
) -> None:
    worker = WorkerInfo(id=uuid7(), pid=1, hostname="h", queues=["default"])
    await store.register_worker(worker)
    await store.enqueue([spec() for _ in range(3)])
    claimed = (await store.claim(worker.id, ["default"], 3, 10.0)).jobs
    assert len(claimed) == 3
    held = claimed[0]
    with psycopg.connect(pg_target.dsn) as conn:  # a transaction holding one row's lock
        conn.execute(f'SET search_path TO "{pg_target.schema}"')
        conn.execute("SELECT 1 FROM jobs WHERE id = %s FOR UPDATE", [held.id])
        extended = await asyncio.wait_for(store.heartbeat(worker.id, 60.0), timeout=30)
        assert extended == 2  # the held row was skipped, not waited for
        conn.rollback()
    assert await store.heartbeat(worker.id, 60.0) == 3


async def test_complete_and_heartbeat_of_one_worker_can_run_side_by_side(store) -> None:
    """Many concurrent rounds of the two statements over the same rows end without a
    deadlock error (each round: one complete of a batch, heartbeats beside it)."""
    worker = WorkerInfo(id=uuid7(), pid=1, hostname="h", queues=["default"])
    await store.register_worker(worker)
    for _ in range(20):
        await store.enqueue([spec() for _ in range(100)])
        jobs = (await store.claim(worker.id, ["default"], 100, 10.0)).jobs
        outcomes = [Outcome(j.id, j.attempt, OutcomeKind.SUCCEEDED) for j in reversed(jobs)]
        done, *_beats = await asyncio.gather(
            store.complete(worker.id, outcomes),
            *(store.heartbeat(worker.id, 10.0) for _ in range(3)),
        )
        assert done == 100
