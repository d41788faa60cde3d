"""Unique jobs on both stores: a held key returns the holder's id, marked duplicate."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

import taskq
from taskq import AsyncClient, ConfigError, InvalidJobState, Unique
from tests.support.helpers import start_script, wait_until

registry = taskq.Registry()


@registry.actor(name="tests.echo")
def echo(*args: object) -> None: ...


@registry.actor(unique=True)
def by_args(a: int, b: int = 0) -> None: ...


@registry.actor(unique=Unique(key=lambda user, **_: f"sync:{user}"))
def sync_user(user: int, full: bool = False) -> None: ...


@registry.actor(unique=Unique(key="nightly", states=("queued", "running", "succeeded")))
def nightly() -> None: ...


@pytest.fixture
async def client(target):
    async with AsyncClient(target.dsn, schema=target.schema) as c:
        await c.store.migrate()
        yield c


async def test_a_second_enqueue_with_a_held_key_returns_the_first_job(client):
    first = await client.enqueue_with(echo, [1], unique_key="k")
    second = await client.enqueue_with(echo, [2], unique_key="k")
    other = await client.enqueue_with(echo, [3], unique_key="other")
    assert not first.duplicate and second.duplicate and not other.duplicate
    assert second == first and other != first
    assert (await client.stats())["queued"] == 2
    assert (await client.get(first)).args == [1]
    assert (await client.get(first)).unique_key == "k"


async def test_a_job_that_left_the_covered_states_frees_its_key(client):
    first = await client.enqueue_with(echo, [], unique_key="k")
    await client.cancel(first)  # cancelled is not covered by default
    again = await client.enqueue_with(echo, [], unique_key="k")
    assert not again.duplicate and again != first
    # the cancelled one cannot come back while the new one holds the key
    with pytest.raises(InvalidJobState, match="unique key 'k'"):
        await client.retry(first)
    await client.cancel(again)
    await client.retry(first)  # now it can
    assert (await client.get(first)).state == "queued"


async def test_a_running_job_holds_its_key(client):
    first = await client.enqueue_with(echo, [], unique_key="k")
    from taskq.ids import uuid7

    (claimed,) = await client.store.claim(uuid7(), ["default"], 1, 30)
    assert claimed.id == first
    again = await client.enqueue_with(echo, [], unique_key="k")
    assert again.duplicate and again == first


async def test_the_actor_option_derives_the_key_from_the_arguments(client):
    a = await client.enqueue(by_args, 1, b=2)
    b = await client.enqueue_with(by_args, [1], {"b": 2})
    c = await client.enqueue(by_args, 1, b=3)
    assert b.duplicate and b == a
    assert not c.duplicate
    key = (await client.get(a)).unique_key
    assert key is not None and key.startswith("by_args:")
    # an explicit key overrides the derived one
    d = await client.enqueue_with(by_args, [1], {"b": 2}, unique_key="mine")
    assert not d.duplicate


async def test_a_key_function_and_an_explicit_actor_key(client):
    a = await client.enqueue(sync_user, 7)
    b = await client.enqueue(sync_user, 7, full=True)
    assert b.duplicate and b == a
    assert (await client.get(a)).unique_key == "sync:7"
    n1 = await client.enqueue(nightly)
    n2 = await client.enqueue(nightly)
    assert n2.duplicate and n2 == n1


async def test_covered_succeeded_keeps_a_finished_job_blocking(client):
    from taskq.ids import uuid7
    from taskq.jobs import Outcome, OutcomeKind

    first = await client.enqueue(nightly)
    worker = uuid7()
    (claimed,) = await client.store.claim(worker, ["default"], 1, 30)
    await client.store.complete(
        worker, [Outcome(claimed.id, claimed.attempt, OutcomeKind.SUCCEEDED)]
    )
    assert (await client.get(first)).state == "succeeded"
    again = await client.enqueue(nightly)
    assert again.duplicate and again == first


async def test_a_period_puts_the_clock_in_the_key(client):
    unique = Unique(key="report", period=3600)
    a = await client.enqueue_with(echo, [], unique_key=unique)
    b = await client.enqueue_with(echo, [], unique_key=unique)
    assert b.duplicate
    key = (await client.get(a)).unique_key
    assert key is not None and key.startswith("report@")
    assert int(key.split("@")[1]) > 0


async def test_enqueue_many_with_keys_inside_and_across_batches(client):
    held = await client.enqueue_with(echo, [], unique_key="k4")
    items = [([i], {}) for i in range(250)]  # large enough for the COPY-sized path
    keys = [f"k{i % 10}" if i % 2 == 0 else None for i in range(250)]
    ids = await client.enqueue_many(echo, items, unique_keys=keys)
    assert len(ids) == 250
    # 125 jobs without a key, one for each of k0 k2 k6 k8; k4 is held already
    assert len([i for i in ids if not i.duplicate]) == 125 + 4
    by_key: dict[str, set] = {}
    for job_id, key in zip(ids, keys, strict=True):
        if key is not None:
            by_key.setdefault(key, set()).add(job_id)
    assert all(len(v) == 1 for v in by_key.values())
    assert by_key["k4"] == {held}
    again = await client.enqueue_many(echo, [([], {}), ([], {})], unique_keys=["k4", "k0"])
    assert [i.duplicate for i in again] == [True, True]
    assert again[0] == held and again[1] == next(iter(by_key["k0"]))
    assert (await client.stats())["queued"] == 1 + 125 + 4


async def test_bad_unique_options_are_refused(client):
    with pytest.raises(ConfigError, match="must include queued and running"):
        Unique(states=("queued",))
    with pytest.raises(ConfigError, match="unknown state 'done'"):
        Unique(states=("queued", "running", "done"))
    with pytest.raises(ConfigError, match="positive number"):
        Unique(period=0)
    with pytest.raises(ConfigError, match="non-empty string"):
        await client.enqueue_with(echo, [], unique_key="")
    with pytest.raises(ConfigError, match="one key"):
        await client.enqueue_many(echo, [([], {})], unique_keys=["a", "b"])
    with pytest.raises(ConfigError, match=r"must be a string or a taskq\.Unique"):
        await client.enqueue_with(echo, [], unique_key=5)  # type: ignore[arg-type]
    assert (await client.stats())["queued"] == 0


PRODUCER = textwrap.dedent("""
    import asyncio, json, sys, time
    from pathlib import Path
    from taskq import AsyncClient

    go, ready = Path(sys.argv[1]), Path(sys.argv[2])

    async def main():
        async with AsyncClient() as client:  # TASKQ_DSN / TASKQ_SCHEMA from the env
            await client.stats()
            ready.touch()
            deadline = time.monotonic() + 60
            while not go.exists():
                if time.monotonic() > deadline:
                    sys.exit("no go signal")
                await asyncio.sleep(0.002)
            out = []
            for n in range(200):
                job_id = await client.enqueue_with(
                    "tests.echo", [n], queue="default", unique_key="the-one"
                )
                out.append([str(job_id), job_id.duplicate])
        print(json.dumps(out))

    asyncio.run(main())
""")


@pytest.mark.slow
async def test_eight_processes_racing_on_one_key_make_one_job(client, target, tmp_path: Path):
    go = tmp_path / "go"
    ready = [tmp_path / f"ready-{n}" for n in range(8)]
    procs = [start_script(PRODUCER, str(go), str(r), env=target.env) for r in ready]
    wait_until(
        lambda: all(r.exists() or p.poll() is not None for r, p in zip(ready, procs, strict=True)),
        timeout=90,
        what="all producers connected",
    )
    go.touch()
    answers = []
    for proc in procs:
        out, err = proc.communicate(timeout=180)
        assert proc.returncode == 0, err
        answers += json.loads(out)
    assert len(answers) == 8 * 200
    assert len({job_id for job_id, _ in answers}) == 1
    assert sum(1 for _, duplicate in answers if not duplicate) == 1
    stats = await client.stats()
    assert stats["queued"] == 1 and sum(stats.values()) == 1


async def test_a_late_outcome_never_takes_a_key_another_job_holds(client):
    """A run ended by the crash rules (dead/crashed) whose outcome arrives late, after a
    new job took its key: the late write is dropped, not a unique violation that would
    fail the whole batch of outcomes it came with."""
    from taskq.ids import uuid7
    from taskq.jobs import Outcome, OutcomeKind

    store = client.store
    worker = uuid7()
    old = await client.enqueue_with(echo, [1], unique_key="k")  # not idempotent
    (run,) = await store.claim(worker, ["default"], 10, 30)
    (rescued,) = await store.rescue_worker(worker, "lost")  # e.g. a partition
    assert (rescued.id, rescued.state, rescued.dead_reason) == (old, "dead", "crashed")
    new = await client.enqueue_with(echo, [2], unique_key="k")  # dead frees the key
    assert not new.duplicate
    bystander = await client.enqueue_with(echo, [3], priority=-1)
    (other_run,) = await store.claim(worker, ["default"], 1, 30)  # the worker lives on
    assert other_run.id == bystander
    batch = [
        Outcome(old, run.attempt, OutcomeKind.RETRY, error="late", retry_delay=0),
        Outcome(bystander, other_run.attempt, OutcomeKind.SUCCEEDED),
    ]
    assert await store.complete(worker, batch) == 1
    assert (await client.get(old)).state == "dead"
    assert (await client.get(new)).state == "queued"
    assert (await client.get(bystander)).state == "succeeded"


async def test_retrying_dead_jobs_that_share_a_key_brings_back_only_the_newest(client):
    from taskq.ids import uuid7
    from taskq.jobs import Outcome, OutcomeKind

    store, worker, dead = client.store, uuid7(), []
    for n in range(2):
        dead.append(await client.enqueue_with(echo, [n], unique_key="k"))
        (run,) = await store.claim(worker, ["default"], 1, 30)
        await store.complete(worker, [Outcome(run.id, run.attempt, OutcomeKind.DEAD, error="x")])
    older, newer = dead
    assert await store.retry_jobs([older, newer]) == [newer]
    assert (await client.get(older)).state == "dead"
    await client.cancel(newer)
    assert await client.retry_all_dead() == 1  # the older one, now that the key is free
    assert (await client.get(older)).state == "queued"
    assert (await client.get(newer)).state == "cancelled"
