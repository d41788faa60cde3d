"""The scheduler part against real stores, with an injected clock: each tick is one job
however many schedulers look, a tick a dead scheduler left is enqueued by another, ticks
missed while none ran follow the schedule's policy, and the store keeps the record
``taskq schedules`` lists."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest

import taskq
import taskq.testing
from taskq.periodic import tick_key
from taskq.store import Store, create_store
from taskq.worker.scheduler import Scheduler
from tests.conftest import StoreTarget

BASE = datetime(2030, 1, 7, 9, 0, 0, 500_000, tzinfo=UTC)  # a Monday, mid-second

registry = taskq.Registry()


@registry.periodic("*/5 * * * *", args=["five"])
@registry.actor(queue="cron", idempotent=True)
def every_five(label: str) -> str:
    return label


@registry.periodic("0 * * * *", missed="run_once")
def hourly() -> None: ...


class Clock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


def at(minutes: float) -> datetime:
    return BASE + timedelta(minutes=minutes)


async def jobs_of(store: Store) -> list[tuple[str, datetime, str | None]]:
    jobs = await store.list_jobs(limit=1000)
    return sorted((j.actor, j.run_at, j.unique_key) for j in jobs)


async def started(store: Store, clock: Clock) -> Scheduler:
    scheduler = Scheduler(store, registry, clock=clock)
    await scheduler.start()
    return scheduler


async def test_each_tick_is_one_job_however_many_schedulers_look(
    store: Store, target: StoreTarget
) -> None:
    clock = Clock(BASE)
    stores = [create_store(target.dsn, target.schema) for _ in range(3)]  # three workers
    for s in stores:
        await s.open()
    try:
        workers = [await started(s, clock) for s in stores]
        clock.now = at(5.1)  # 09:05 is due for every_five
        results = await asyncio.gather(*(w.look() for w in workers))  # all at once
        again = [await w.look() for w in workers]  # and once more, one after another
    finally:
        for s in stores:
            await s.close()

    tick = at(5) - timedelta(microseconds=500_000)
    enqueues = [e for r in results for e in r]
    assert [e.tick for e in enqueues] == [tick] * len(enqueues)
    assert sum(not e.duplicate for e in enqueues) == 1
    assert len({e.job_id for e in enqueues}) == 1
    assert again == [[], [], []]  # recorded: nothing owed until 09:10
    assert await jobs_of(store) == [("every_five", tick, tick_key("every_five", tick))]
    job = await store.get_job(enqueues[0].job_id)
    assert job is not None and (job.args, job.queue) == (["five"], "cron")
    assert job.meta == {"periodic": "every_five", "tick": tick.isoformat()}


async def test_a_tick_a_dead_scheduler_left_is_enqueued_by_another(store: Store) -> None:
    clock = Clock(BASE)
    dying, survivor = await started(store, clock), await started(store, clock)
    clock.now = at(5.1)
    # the dying one enqueued 09:05 but died before recording it: the survivor finds the
    # tick still owed and its enqueue is a duplicate -- one job
    schedule = registry.schedules[0]
    first = await dying._enqueue(schedule, at(5) - timedelta(microseconds=500_000))
    (again,) = await survivor.look()
    assert (again.job_id, again.duplicate) == (first.job_id, True)

    # the dying one is gone; at 09:10 the survivor alone enqueues the tick
    clock.now = at(10.05)
    (tick_10,) = await survivor.look()
    assert not tick_10.duplicate
    assert len(await jobs_of(store)) == 2
    assert await survivor.look() == []  # recorded: nothing owed until 09:15


async def test_a_finished_tick_is_never_enqueued_again(store: Store) -> None:
    clock = Clock(BASE)
    scheduler = await started(store, clock)
    clock.now = at(5.1)
    (done,) = await scheduler.look()
    async with taskq.AsyncClient(store=store) as client:
        await taskq.testing.drain_async(client, registry=registry)
        assert (await client.get(done.job_id)).state == "succeeded"
    # a late scheduler that still thinks 09:05 is owed gets the finished job's id back
    late = await scheduler._enqueue(registry.schedules[0], done.tick)
    assert (late.job_id, late.duplicate) == (done.job_id, True)


async def test_ticks_missed_while_no_scheduler_ran_follow_the_policy(store: Store) -> None:
    clock = Clock(BASE)
    scheduler = await started(store, clock)
    # nobody looked for three hours: every_five skips its 35 missed ticks and runs the
    # on-time one; hourly (run_once) runs its latest missed tick once, then the on-time one
    clock.now = at(180.5)
    enqueued = await scheduler.look()
    ticks = sorted((e.schedule, e.tick) for e in enqueued)
    whole = BASE.replace(microsecond=0)
    assert ticks == [
        ("every_five", whole + timedelta(minutes=180)),
        ("hourly", whole + timedelta(minutes=120)),
        ("hourly", whole + timedelta(minutes=180)),
    ]
    assert len(await jobs_of(store)) == 3


async def test_no_tick_before_a_schedule_was_first_recorded(store: Store) -> None:
    clock = Clock(at(7))
    scheduler = await started(store, clock)
    clock.now = at(9)
    assert await scheduler.look() == []  # 09:05 was before the schedule existed
    clock.now = at(10.01)
    assert [e.tick.minute for e in await scheduler.look()] == [10]


async def test_the_store_keeps_the_record_taskq_schedules_lists(store: Store) -> None:
    clock = Clock(BASE)
    scheduler = await started(store, clock)
    clock.now = at(5.1)
    await scheduler.look()
    await started(store, Clock(at(6)))  # a second worker starting keeps first_seen_at

    infos = {i.name: i for i in await store.list_schedules()}
    assert set(infos) == {"every_five", "hourly"}
    five = infos["every_five"]
    assert (five.actor, five.cron, five.timezone, five.missed) == (
        "every_five",
        "*/5 * * * *",
        "UTC",
        "skip",
    )
    assert five.first_seen_at == BASE and five.seen_at == at(6)
    assert five.last_tick == BASE.replace(microsecond=0) + timedelta(minutes=5)
    assert infos["hourly"].last_tick is None


@pytest.mark.parametrize("policy", ["skip", "run_once"])
async def test_last_tick_never_goes_back(store: Store, policy: str) -> None:
    await store.record_schedules(
        [{"name": "s", "actor": "a", "cron": "* * * * *", "timezone": "UTC", "missed": policy}],
        BASE,
    )
    await store.mark_schedule_tick("s", at(10))
    await store.mark_schedule_tick("s", at(5))
    (info,) = await store.list_schedules()
    assert info.last_tick == at(10)
