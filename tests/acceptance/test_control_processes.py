"""Controls across real ``taskq worker`` processes, on both stores: a paused queue holds
in every worker; fleet-wide limits hold across workers, read from the jobs' own records."""

from __future__ import annotations

from pathlib import Path

import pytest

from taskq import AsyncClient, InvalidJobState, JobNotFound
from tests.conftest import WITH_POOLER, target_fixture
from tests.support import control_actors as actors
from tests.support.helpers import wait_until
from tests.support.worker_harness import WorkerProcess, wait_for_states

# claims, acks, heartbeats, rescues, cancels and limits also through PgBouncer (issue 19)
target = target_fixture(*WITH_POOLER)

pytestmark = pytest.mark.slow

ACTORS = "tests.support.control_actors:registry"


@pytest.fixture
def ledger(tmp_path: Path) -> Path:
    return tmp_path / "ledger.log"


@pytest.fixture
def release(tmp_path: Path) -> Path:
    path = tmp_path / "release"
    path.mkdir()
    return path


@pytest.fixture
def spawn(target, ledger: Path, tmp_path: Path):
    started: list[WorkerProcess] = []

    def start(*args: str) -> WorkerProcess:
        env = {**target.env, "TASKQ_TEST_RUNS": str(ledger)}
        worker = WorkerProcess(
            target,
            "--actors",
            ACTORS,
            *args,
            env=env,
            log_path=tmp_path / f"worker{len(started)}.log",
        )
        started.append(worker)
        return worker

    yield start
    for worker in started:
        worker.stop()


@pytest.fixture
async def client(target):
    async with AsyncClient(target.dsn, schema=target.schema) as c:
        await c.store.migrate()
        yield c


async def test_a_paused_queue_holds_in_every_worker_and_resumes(
    client, spawn, ledger, release, target
):
    await client.pause_queue("default")
    paused_ids = [await client.enqueue(actors.remember, f"p{i}") for i in range(6)]
    # one held job per worker (concurrency 1 each): both workers claim after the pause
    held_ids = [await client.enqueue(actors.held, f"h{i}", str(release)) for i in range(2)]
    workers = [spawn("--queues", "default,held", "--max-concurrency", "1") for _ in range(2)]
    wait_until(
        lambda: actors.count(ledger, "start", "h") == 2,
        timeout=60,
        what="each worker to start a held job",
    )
    assert len(actors.pids_of(ledger, "start")) == 2  # both workers claimed
    for i in range(2):
        (release / f"h{i}").touch()
    await wait_for_states(client.store, held_ids, {"succeeded"})
    jobs = [await client.get(i) for i in paused_ids]
    assert {j.state for j in jobs} == {"queued"} and {j.attempts for j in jobs} == {0}
    assert actors.count(ledger, "run", "p") == 0
    await client.resume_queue("default")
    await wait_for_states(client.store, paused_ids, {"succeeded"})
    assert {j.attempts for j in [await client.get(i) for i in paused_ids]} == {1}
    assert all(w.proc.poll() is None for w in workers)


async def test_snoozed_jobs_run_later_uncharged_across_workers(client, spawn, ledger):
    ids = [await client.enqueue(actors.snoozer, f"s{i}", 2) for i in range(6)]
    ids += [await client.enqueue(actors.snoozer, f"r{i}", 1, returned=True) for i in range(2)]
    ids += [await client.enqueue(actors.snoozer_sync, f"y{i}", 2) for i in range(2)]
    capped = await client.enqueue(actors.snoozer, "capped", 10)  # max_snoozes=3
    for _ in range(2):
        spawn("--queues", "snoozy", "--max-concurrency", "4")
    jobs = await wait_for_states(client.store, ids, {"succeeded"}, timeout=60)
    assert {j.attempts for j in jobs} == {1}
    assert sorted(j.snooze_count for j in jobs) == [1, 1] + [2] * 8
    assert actors.count(ledger, "run") == len(ids)
    (dead,) = await wait_for_states(client.store, [capped], {"dead"}, timeout=60)
    assert dead.dead_reason == "snoozed_too_often" and dead.snooze_count == 3
    assert [e for e, k in actors.ledger(ledger) if k == "capped"] == ["snooze"] * 4


@pytest.mark.parametrize("scope", ["queue", "actor"])
async def test_a_concurrency_limit_holds_across_workers(client, spawn, ledger, scope):
    if scope == "queue":
        await client.set_queue_limits("limited", concurrency=2)
        ids = [await client.enqueue(actors.tracked, f"t{i}", 0.1) for i in range(16)]
    else:
        await client.set_actor_limits(actors.tracked_sync, concurrency=2)
        ids = [await client.enqueue(actors.tracked_sync, f"t{i}", 0.1) for i in range(16)]
    for _ in range(2):
        spawn("--queues", "limited", "--max-concurrency", "4")
    await wait_for_states(client.store, ids, {"succeeded"}, timeout=90)
    assert actors.count(ledger, "start") == 16
    # from the jobs' own start/end records: never more than 2 ran at once
    assert actors.peak_overlap(ledger) <= 2


async def test_a_rate_limit_holds_across_workers(client, spawn, ledger):
    await client.set_queue_limits("limited", rate="3/minute")
    ids = [await client.enqueue(actors.tracked, f"t{i}", 0.0) for i in range(8)]
    for _ in range(2):
        spawn("--queues", "limited,default", "--max-concurrency", "4")
    wait_until(lambda: actors.count(ledger, "end") >= 3, timeout=60, what="3 limited jobs")
    # both workers keep claiming (the canaries run), and no fourth limited job starts
    canaries = [await client.enqueue(actors.remember, f"c{i}") for i in range(8)]
    await wait_for_states(client.store, canaries, {"succeeded"})
    assert actors.count(ledger, "start", "t") == 3
    jobs = [await client.get(i) for i in ids]
    assert sorted(j.state for j in jobs).count("queued") == 5
    assert {j.attempts for j in jobs if j.state == "queued"} == {0}
    await client.set_queue_limits("limited")  # cleared: the rest run
    await wait_for_states(client.store, ids, {"succeeded"})


async def test_cancel_stops_running_jobs_on_every_worker(client, spawn, ledger, release):
    keys = [f"a{i}" for i in range(2)] + [f"s{i}" for i in range(2)]
    ids = [await client.enqueue(actors.stoppable, k, str(release)) for k in keys[:2]]
    ids += [await client.enqueue(actors.stoppable_sync, k, str(release)) for k in keys[2:]]
    for _ in range(2):  # 2 x 2 slots: all four run at once, on both workers
        spawn("--queues", "held", "--max-concurrency", "2")
    wait_until(lambda: actors.count(ledger, "start") == 4, timeout=60, what="4 jobs running")
    assert len(actors.pids_of(ledger, "start")) == 2
    results = [await client.cancel(i, by="tester") for i in ids]
    assert results == ["requested"] * 4
    jobs = await wait_for_states(client.store, ids, {"cancelled"}, timeout=60)
    for job in jobs:
        assert job.cancelled_by == "tester" and job.cancelled_at is not None
        assert job.attempts == 1 and job.dead_reason is None and job.finished_at is not None
    # async jobs: cancelled, their cleanup ran; sync jobs: saw the flag and returned
    assert sorted(k for e, k in actors.ledger(ledger) if e == "cleanup") == ["a0", "a1"]
    assert sorted(k for e, k in actors.ledger(ledger) if e == "saw-cancel") == ["s0", "s1"]
    assert actors.count(ledger, "end") == 0
    # never retried: more jobs run through both workers, the cancelled ones stay put
    for k in keys:
        (release / k).touch()
    more = [await client.enqueue(actors.held, f"h{i}", str(release)) for i in range(4)]
    for i in range(4):
        (release / f"h{i}").touch()
    await wait_for_states(client.store, more, {"succeeded"})
    assert actors.count(ledger, "start", "a") + actors.count(ledger, "start", "s") == 4
    assert {(await client.get(i)).state for i in ids} == {"cancelled"}
    with pytest.raises(InvalidJobState, match="already cancelled: nothing changed"):
        await client.cancel(ids[0])


async def test_cancelling_a_queued_job_and_a_finished_one(client):
    queued = await client.enqueue(actors.remember, "q")
    assert await client.cancel(queued) == "cancelled"
    job = await client.get(queued)
    assert job.state == "cancelled" and job.cancelled_by and job.cancelled_at is not None
    with pytest.raises(InvalidJobState, match="already cancelled"):
        await client.cancel(queued)
    with pytest.raises(JobNotFound):
        await client.cancel("018f0000-0000-7000-8000-000000000000")


async def test_cancel_kills_a_cpu_bound_job_without_charging_a_crash(
    client, spawn, ledger, release
):
    ids = [await client.enqueue(actors.spin, f"c{i}", str(release)) for i in range(2)]
    workers = [
        spawn("--queues", "cpu", "--max-concurrency", "1", "--cpu-workers", "1") for _ in range(2)
    ]
    wait_until(lambda: actors.count(ledger, "start") == 2, timeout=60, what="2 cpu jobs running")
    assert [await client.cancel(i) for i in ids] == ["requested", "requested"]
    jobs = await wait_for_states(client.store, ids, {"cancelled"}, timeout=60)
    assert {(j.crash_count, j.attempts, j.dead_reason) for j in jobs} == {(0, 1, None)}
    assert actors.count(ledger, "end") == 0  # killed, not finished
    # the pools still serve: no breaker, no broken pool
    more = [await client.enqueue(actors.spin, f"m{i}", str(release)) for i in range(2)]
    for i in range(2):
        (release / f"m{i}").touch()
    await wait_for_states(client.store, more, {"succeeded"}, timeout=60)
    for worker in workers:
        assert worker.events("process_pool_broken") == []


async def test_an_async_job_that_ignores_its_cancel_is_cancelled_again_after_the_grace(
    client, spawn, ledger
):
    job_id = await client.enqueue(actors.stubborn, "g")
    worker = spawn("--queues", "held", "--max-concurrency", "1")
    wait_until(lambda: actors.count(ledger, "start") == 1, timeout=60, what="the job to start")
    assert await client.cancel(job_id) == "requested"
    (job,) = await wait_for_states(client.store, [job_id], {"cancelled"}, timeout=60)
    assert [e for e, k in actors.ledger(ledger) if k == "g"] == ["start", "ignored", "cleanup"]
    assert worker.events("job-cancel-overdue")
    assert job.attempts == 1
