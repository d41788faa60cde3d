"""Queue controls in the store and the client, on both engines: pause and resume, the
queue overview, fleet-wide concurrency and rate limits per queue and per actor."""

from __future__ import annotations

import asyncio

import pytest

import taskq
from taskq import AsyncClient
from taskq.exceptions import ActorNotFound, ConfigError
from taskq.ids import uuid7
from taskq.jobs import ActorConfig, Limits, Rate
from tests.support.storekit import another_store, spec

LEASE = 30.0


async def claim(store, queues=("a", "b"), limit=100, worker=None):
    return await store.claim(worker or uuid7(), list(queues), limit, LEASE)


@pytest.fixture
async def client(store):
    async with AsyncClient(store=store) as c:
        yield c


async def record(store, *names: str) -> None:
    """What a worker whose registry has these actors records when it starts."""
    await store.sync_actor_configs(
        [
            ActorConfig(name, "a", 3, 2, idempotent=False, cpu_bound=False, timeout=None)
            for name in names
        ],
        force=True,
    )


async def test_a_paused_queue_is_skipped_and_resumes_with_no_attempt_charged(store, client):
    await store.enqueue([spec(queue="a") for _ in range(3)] + [spec(queue="b") for _ in range(2)])
    await client.pause_queue("a", by="ops@test")
    got = (await claim(store)).jobs
    assert sorted(j.queue for j in got) == ["b", "b"]
    (a,) = [q for q in await client.queues() if q.name == "a"]
    assert a.paused and a.paused_by == "ops@test" and a.paused_at is not None
    assert a.depth["queued"] == 3
    queued = await store.list_jobs(state="queued")
    assert {j.attempts for j in queued} == {0}
    await client.resume_queue("a")
    got = (await claim(store)).jobs
    assert sorted(j.queue for j in got) == ["a", "a", "a"]
    assert {j.attempt for j in got} == {1}
    (a,) = [q for q in await client.queues() if q.name == "a"]
    assert not a.paused and a.paused_by is None


async def test_pausing_twice_keeps_the_first_pause(store, client):
    await client.pause_queue("a", by="first")
    await client.pause_queue("a", by="second")
    (a,) = await client.queues()
    assert a.paused_by == "first"


async def test_the_overview_counts_every_state_and_the_oldest_due_wait(store, client):
    await store.enqueue([spec(queue="a") for _ in range(3)])
    worker = uuid7()
    await claim(store, ["a"], limit=1, worker=worker)
    await client.set_queue_limits("c", concurrency=2, rate="5/minute")
    rows = {q.name: q for q in await client.queues()}
    assert sorted(rows) == ["a", "c"]
    assert rows["a"].depth == {
        "queued": 2,
        "running": 1,
        "succeeded": 0,
        "dead": 0,
        "cancelled": 0,
    }
    assert rows["a"].running == 1
    assert rows["a"].oldest_age_s is not None and rows["a"].oldest_age_s >= 0
    assert rows["c"].oldest_age_s is None
    d = rows["c"].to_dict()
    assert d["concurrency_limit"] == 2 and d["rate_limit"] == "5/minute"
    assert set(d) >= {"name", "depth", "oldest_age_s", "running", "paused"}


async def test_a_concurrency_limit_caps_running_jobs_across_claimers(store, client, target):
    await client.set_queue_limits("a", concurrency=3)
    await store.enqueue([spec(queue="a") for _ in range(10)] + [spec(queue="b") for _ in range(4)])
    async with another_store(target) as other:
        first = (await claim(store)).jobs
        second = (await claim(other)).jobs
    got = first + second
    assert sum(j.queue == "a" for j in got) == 3
    assert sum(j.queue == "b" for j in got) == 4  # the other queue is not held back
    assert (await claim(store)).jobs == []
    # a finished job frees its slot
    done = next(j for j in got if j.queue == "a")
    from taskq.jobs import Outcome, OutcomeKind

    worker = (await store.get_job(done.id)).worker_id
    await store.complete(worker, [Outcome(done.id, done.attempt, OutcomeKind.SUCCEEDED)])
    again = (await claim(store)).jobs
    assert [j.queue for j in again] == ["a"]


async def test_concurrent_claimers_never_exceed_the_limit(store, client, target):
    await client.set_queue_limits("a", concurrency=4)
    await store.enqueue([spec(queue="a") for _ in range(40)])
    stores = []
    try:
        for _ in range(6):
            s = another_store(target)
            stores.append((s, await s.__aenter__()))
        results = await asyncio.gather(*(claim(s, limit=3) for _, s in stores))
    finally:
        for cm, _ in stores:
            await cm.__aexit__(None, None, None)
    assert sum(len(r) for r in results) == 4
    assert (await store.stats())["running"] == 4


async def test_a_rate_limit_caps_starts_in_the_window(store, client):
    await client.set_queue_limits("a", rate="2/minute")
    await store.enqueue([spec(queue="a") for _ in range(5)])
    first = (await claim(store)).jobs
    assert len(first) == 2
    assert (await claim(store)).jobs == []  # finished or not, the starts are counted
    assert (await store.stats())["queued"] == 3


async def test_an_actor_limit_holds_across_queues(store, client):
    await record(store, "slow")
    await client.set_actor_limits("slow", concurrency=2)
    await store.enqueue(
        [spec("slow", queue="a") for _ in range(3)]
        + [spec("slow", queue="b") for _ in range(3)]
        + [spec("fast", queue="a") for _ in range(3)]
    )
    got = (await claim(store)).jobs
    assert sum(j.actor == "slow" for j in got) == 2
    assert sum(j.actor == "fast" for j in got) == 3


async def test_a_queue_and_an_actor_limit_both_hold(store, client):
    await client.set_queue_limits("a", concurrency=3)
    await record(store, "slow")
    await client.set_actor_limits("slow", concurrency=1)
    await store.enqueue([spec("slow", queue="a") for _ in range(3)])
    await store.enqueue([spec("fast", queue="a") for _ in range(3)])
    got = (await claim(store)).jobs
    assert sorted(j.actor for j in got) == ["fast", "fast", "slow"]


async def test_clearing_limits_frees_the_queue(store, client):
    await client.set_queue_limits("a", concurrency=1, rate="1/hour")
    await store.enqueue([spec(queue="a") for _ in range(3)])
    assert len(await claim(store)) == 1
    assert (await claim(store)).jobs == []
    await client.set_queue_limits("a")
    assert await client.limits() == {}
    assert len(await claim(store)) == 2


async def test_limits_and_rates_are_checked(client):
    assert (await client.limits()) == {}
    await client.set_queue_limits("a", rate=Rate(10, 1.0))
    assert (await client.limits())[("queue", "a")] == Limits(rate=Rate(10, 1.0))
    for bad in ({"concurrency": 0}, {"concurrency": "3"}, {"rate": "10/day"}, {"rate": "x"}):
        with pytest.raises(ConfigError):
            await client.set_queue_limits("a", **bad)
    with pytest.raises(ConfigError):
        await client.pause_queue("not a queue")


async def test_an_actor_limit_of_a_name_no_worker_recorded_is_refused(store, client):
    await record(store, "charge_card", "send_mail")
    with pytest.raises(ActorNotFound) as refused:
        await client.set_actor_limits("charge_crad", concurrency=2)
    assert str(refused.value) == (
        "no worker recorded an actor named 'charge_crad' (recorded: charge_card, send_mail): "
        "did you mean 'charge_card'? check the name, or start a worker whose registry has "
        "it first"
    )
    with pytest.raises(ActorNotFound, match=r"'zzz' \(recorded: .*\): check the name"):
        await client.set_actor_limits("zzz", rate="1/second")  # nothing close: no guess
    assert await client.limits() == {}  # nothing written


async def test_an_actor_limit_of_a_recorded_name_an_actor_or_a_limited_name_is_set(store, client):
    await record(store, "charge_card")
    await client.set_actor_limits("charge_card", concurrency=2)
    registry = taskq.Registry()

    @registry.actor(name="not_recorded_yet", queue="a")
    def not_recorded_yet() -> None: ...

    # an Actor object cannot be a typo: its limit is set before any worker records it
    await client.set_actor_limits(not_recorded_yet, concurrency=3)
    # a name that has limits may be changed or cleared by name, recorded or not
    await client.set_actor_limits("not_recorded_yet", rate="5/minute")
    assert await client.limits() == {
        ("actor", "charge_card"): Limits(concurrency=2),
        ("actor", "not_recorded_yet"): Limits(rate=Rate(5, 60.0)),
    }
    await client.set_actor_limits("not_recorded_yet")
    assert ("actor", "not_recorded_yet") not in await client.limits()


async def test_a_snoozed_outcome_requeues_later_with_the_attempt_given_back(store):
    from taskq.jobs import Outcome, OutcomeKind

    (job_id,) = await store.enqueue([spec(queue="a")])
    worker = uuid7()
    (job,) = await claim(store, worker=worker)
    assert job.attempt == 1 and job.snooze_count == 0
    outcome = Outcome(job.id, job.attempt, OutcomeKind.SNOOZED, retry_delay=3600)
    assert await store.complete(worker, [outcome]) == 1
    stored = await store.get_job(job_id)
    assert stored.state == "queued" and stored.attempts == 0 and stored.snooze_count == 1
    assert stored.worker_id is None and stored.started_at is None
    assert (stored.run_at - stored.created_at).total_seconds() > 3000
    assert (await claim(store)).jobs == []  # not due yet
    await store.retry_jobs([job_id])  # no-op: only dead or cancelled jobs move
    assert (await store.get_job(job_id)).snooze_count == 1


async def test_request_cancel_says_what_it_did_to_each_job(store):
    from taskq.jobs import CancelResult, Outcome, OutcomeKind

    (done,) = await store.enqueue([spec(queue="a")])
    other = uuid7()
    (fin,) = await claim(store, worker=other)
    await store.complete(other, [Outcome(fin.id, fin.attempt, OutcomeKind.SUCCEEDED)])
    (running,) = await store.enqueue([spec(queue="a")])
    worker = uuid7()
    await claim(store, worker=worker)
    (queued,) = await store.enqueue([spec(queue="a")])
    got = await store.request_cancel([queued, running, done, uuid7()], by="me")
    assert got == {
        done: (CancelResult.FINISHED, "succeeded"),
        running: (CancelResult.REQUESTED, "running"),
        queued: (CancelResult.CANCELLED, "cancelled"),
    }
    again = await store.request_cancel([running], by="someone else")
    assert again == {running: (CancelResult.ALREADY_REQUESTED, "running")}
    job = await store.get_job(running)
    assert job.cancel_requested and job.cancelled_by == "me" and job.state == "running"
    assert await store.cancel_requested(worker) == [running]
    assert await store.cancel_requested(other) == []


@pytest.mark.parametrize("ending", ["succeeded", "retry", "snoozed", "crashed", "give_back"])
async def test_a_run_whose_cancel_was_requested_always_ends_cancelled(store, ending):
    from taskq.jobs import Outcome, OutcomeKind

    (job_id,) = await store.enqueue([spec(queue="a", idempotent=True, max_attempts=5)])
    worker = uuid7()
    (job,) = await claim(store, worker=worker)
    await store.request_cancel([job_id], by="me")
    if ending == "give_back":
        assert await store.give_back(worker, [(job.id, job.attempt)]) == 1
    else:
        outcome = Outcome(job.id, job.attempt, OutcomeKind(ending), retry_delay=0.0)
        assert await store.complete(worker, [outcome]) == 1
    stored = await store.get_job(job_id)
    assert stored.state == "cancelled" and stored.dead_reason is None
    assert stored.cancelled_by == "me" and stored.finished_at is not None
    assert (await claim(store)).jobs == []  # never re-run
    assert await store.retry_jobs([job_id]) == [job_id]  # by hand, it can be
    again = await store.get_job(job_id)
    assert again.state == "queued" and again.cancelled_at is None and again.cancelled_by is None


async def test_a_rescued_run_whose_cancel_was_requested_ends_cancelled(store):
    (job_id,) = await store.enqueue([spec(queue="a", idempotent=True)])
    worker = uuid7()
    await claim(store, worker=worker)
    await store.request_cancel([job_id])
    rescued = await store.rescue_worker(worker, "worker died")
    assert [r.state for r in rescued] == ["cancelled"]
    assert (await store.get_job(job_id)).state == "cancelled"


async def test_claims_that_find_a_limit_full_are_counted(store, client):
    await client.set_queue_limits("a", concurrency=1)
    await record(store, "slow")
    await client.set_actor_limits("slow", rate="1/hour")
    await store.enqueue([spec("slow", queue="b"), spec("slow", queue="b"), spec(queue="a")])
    await store.enqueue([spec(queue="a")])
    first = await claim(store)
    assert len(first.jobs) == 2  # one of a (limit 1), one slow (rate 1)
    assert first.limit_waits == {}  # both had room when the claim began
    second = await claim(store)
    assert second.jobs == []
    assert second.limit_waits == {("queue", "a"): 1, ("actor", "slow"): 1}


async def test_paused_queues_reach_the_fleet_metrics(store, client):
    from taskq import metrics
    from taskq.backlog import export_paused

    await client.pause_queue("a")
    await client.pause_queue("b")
    await client.resume_queue("b")
    assert await store.paused_queues() == ["a"]
    export_paused(await store.paused_queues())
    assert metrics.WORKGROUP.get_sample_value("taskq_queue_paused", {"queue": "a"}) == 1.0
    assert metrics.WORKGROUP.get_sample_value("taskq_queue_paused", {"queue": "b"}) is None


async def test_a_rate_window_slides_and_old_starts_stop_counting(store, client):
    from tests.support.helpers import async_wait_until

    await client.set_queue_limits("a", rate="2/second")
    await store.enqueue([spec(queue="a") for _ in range(5)])
    assert len(await claim(store)) == 2
    assert (await claim(store)).jobs == []

    async def room_again() -> list:
        return await claim(store)

    got = await async_wait_until(room_again, timeout=10, what="the window to slide")
    assert 1 <= len(got) <= 2


async def test_a_claimer_that_has_not_looked_at_limits_lately_claims_within_them_in_one_call(
    store, client, target
):
    """A worker waking after a quiet spell does not know whether limits exist: one claim
    call still takes the unlimited queue's jobs and exactly the limited queue's room."""
    await store.enqueue([spec(queue="a") for _ in range(3)] + [spec(queue="b") for _ in range(4)])
    await client.set_queue_limits("b", concurrency=2)
    async with another_store(target) as fresh:  # its cache of "limits exist?" is empty
        got = (await claim(fresh, limit=100)).jobs
    assert sorted(j.queue for j in got) == ["a", "a", "a", "b", "b"]
    assert (await claim(store, limit=100)).jobs == []  # b is full
