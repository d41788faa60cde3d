"""taskq.testing used the way an application's own test module uses it: the
``taskq_client`` fixture (the pytest11 plugin), ``assert_enqueued`` and ``drain``, on
both stores (``taskq_dsn`` is overridden here to run each test on SQLite and Postgres)."""

from __future__ import annotations

import pytest

import taskq
from taskq.testing import (
    assert_enqueued,
    assert_enqueued_async,
    assert_not_enqueued,
    drain,
    drain_async,
)
from tests.conftest import StoreTarget

registry = taskq.Registry()
calls: list[str] = []


@registry.actor(queue="mail")
def send_welcome(address: str) -> str:
    calls.append(address)
    return f"sent to {address}"


@registry.actor(queue="mail", max_attempts=3, retry_backoff=taskq.RetryBackoff(initial=30.0))
def flaky(n: int) -> None:
    calls.append(f"flaky {n}")
    raise ValueError(f"boom {n}")


@registry.actor(max_attempts=3)
async def fails_twice(key: str) -> str:
    calls.append(key)
    if calls.count(key) < 3:
        raise RuntimeError("not yet")
    return "third time"


@registry.actor
def fan_out(count: int) -> None:
    with taskq.Client() as client:  # the application's own client: TASKQ_DSN from the fixture
        for i in range(count):
            client.enqueue(send_welcome, f"user{i}@example.com")


@registry.actor
def hand_over(address: str) -> None:
    with taskq.Client() as client:  # to a queue no actor of the registry names
        client.enqueue_with(send_welcome, [address], queue="brand-new")


@registry.actor(cpu_bound=True)
def crunch(n: int) -> int:
    calls.append(f"crunch {n}")  # runs in this process: the list is the test's own
    return n * n


@registry.actor
def with_progress(steps: int) -> int:
    job = taskq.current_job()
    for step in range(steps):
        job.update_meta(progress=(step + 1) / steps)
    return job.attempt


@pytest.fixture
def taskq_registry() -> taskq.Registry:
    return registry


@pytest.fixture
def taskq_dsn(target: StoreTarget, pg_dsn: str) -> str:
    return target.dsn  # SQLite: a file in tmp_path; Postgres: the fixture adds a schema


@pytest.fixture(autouse=True)
def _fresh_calls() -> None:
    calls.clear()


def test_assert_enqueued_matches_actor_args_and_queue(taskq_client: taskq.Client) -> None:
    taskq_client.enqueue(send_welcome, "ada@example.com")
    taskq_client.enqueue_with(send_welcome, ["bob@example.com"], queue="urgent")

    (job,) = assert_enqueued(send_welcome, args=["ada@example.com"], queue="mail")
    assert job.args == ["ada@example.com"]
    assert_enqueued("send_welcome", args=("bob@example.com",), queue="urgent")
    assert_enqueued(send_welcome, count=2)
    assert_not_enqueued(send_welcome, args=["eve@example.com"])
    with pytest.raises(AssertionError, match=r"found 0\. Jobs of 'send_welcome' there: mail"):
        assert_enqueued(send_welcome, args=["eve@example.com"])
    with pytest.raises(AssertionError, match="expected exactly 3 job"):
        assert_enqueued(send_welcome, count=3)


def test_drain_runs_jobs_inline_in_order_and_reports_them(taskq_client: taskq.Client) -> None:
    first = taskq_client.enqueue(send_welcome, "ada@example.com")
    second = taskq_client.enqueue(send_welcome, "bob@example.com")

    runs = drain(taskq_client)

    assert calls == ["ada@example.com", "bob@example.com"]  # in this process, in order
    assert [(r.job_id, r.outcome, r.state, r.result) for r in runs] == [
        (first, "succeeded", "succeeded", "sent to ada@example.com"),
        (second, "succeeded", "succeeded", "sent to bob@example.com"),
    ]
    assert taskq_client.get(first).state == "succeeded"
    assert drain(taskq_client) == []


def test_drain_applies_the_real_retry_rules_until_dead(taskq_client: taskq.Client) -> None:
    job_id = taskq_client.enqueue(flaky, 7)

    runs = drain(taskq_client)  # the 30 s backoffs are jumped over, not slept

    assert [(r.attempt, r.outcome, r.state) for r in runs] == [
        (1, "retry", "queued"),
        (2, "retry", "queued"),
        (3, "dead", "dead"),
    ]
    assert runs[-1].dead_reason == "failed"
    assert "ValueError: boom 7" in (runs[-1].error or "")
    job = taskq_client.get(job_id)
    assert (job.state, job.dead_reason, job.attempts) == ("dead", "failed", 3)


def test_drain_without_scheduled_leaves_retries_waiting(taskq_client: taskq.Client) -> None:
    job_id = taskq_client.enqueue(flaky, 1)
    later = taskq_client.enqueue_with(send_welcome, ["later@example.com"], delay=3600)

    runs = drain(taskq_client, scheduled=False)

    assert [(r.job_id, r.outcome) for r in runs] == [(job_id, "retry")]
    assert taskq_client.get(later).state == "queued"
    assert_enqueued(send_welcome, args=["later@example.com"])


def test_drain_runs_jobs_that_jobs_enqueue(taskq_client: taskq.Client) -> None:
    taskq_client.enqueue(fan_out, 3)

    runs = drain(taskq_client)

    assert [r.actor for r in runs] == ["fan_out"] + ["send_welcome"] * 3
    assert sorted(calls) == [f"user{i}@example.com" for i in range(3)]


def test_drain_follows_jobs_to_a_queue_that_appears_on_the_way(
    taskq_client: taskq.Client,
) -> None:
    taskq_client.enqueue(hand_over, "ada@example.com")

    runs = drain(taskq_client)

    assert [(r.actor, r.queue, r.state) for r in runs] == [
        ("hand_over", "default", "succeeded"),
        ("send_welcome", "brand-new", "succeeded"),
    ]


def test_drain_one_queue_leaves_the_others(taskq_client: taskq.Client) -> None:
    taskq_client.enqueue(send_welcome, "ada@example.com")
    other = taskq_client.enqueue(fails_twice, "k")

    runs = drain(taskq_client, queue="mail")

    assert [r.actor for r in runs] == ["send_welcome"]
    assert taskq_client.get(other).state == "queued"


def test_drain_runs_cpu_bound_and_async_actors_in_this_process(
    taskq_client: taskq.Client,
) -> None:
    taskq_client.enqueue(crunch, 12)
    taskq_client.enqueue(fails_twice, "key")

    runs = drain(taskq_client)

    by_actor = {(r.actor, r.attempt): (r.outcome, r.result) for r in runs}
    assert by_actor[("crunch", 1)] == ("succeeded", 144)
    assert by_actor[("fails_twice", 3)] == ("succeeded", "third time")
    assert "crunch 12" in calls


def test_drain_marks_an_unknown_actor_dead(taskq_client: taskq.Client) -> None:
    job_id = taskq_client.enqueue_with("nobody_has_this", [1], queue="mail")

    (run,) = drain(taskq_client)

    assert (run.job_id, run.state, run.dead_reason) == (job_id, "dead", "unknown_actor")


def test_drain_stops_a_job_that_enqueues_itself_forever(taskq_client: taskq.Client) -> None:
    taskq_client.enqueue(fan_out, 2)
    with pytest.raises(AssertionError, match="drain ran 2 jobs and jobs are still queued"):
        drain(taskq_client, max_runs=2)
    assert_enqueued(send_welcome, count=1)  # the claimed third job went back, uncharged


async def test_async_client_drain_and_assert(taskq_client: taskq.Client) -> None:
    async with taskq.AsyncClient() as client:  # TASKQ_DSN / TASKQ_SCHEMA: the fixture's
        job_id = await client.enqueue(fails_twice, "async")
        await assert_enqueued_async(fails_twice, args=["async"], client=client)
        runs = await drain_async(client)
    assert [r.outcome for r in runs] == ["retry", "retry", "succeeded"]
    assert taskq_client.get(job_id).result == "third time"


def test_without_a_client_the_helpers_say_what_to_do() -> None:
    with pytest.raises(taskq.ConfigError, match="no taskq client"):
        drain()
    with pytest.raises(taskq.ConfigError, match="no taskq client"):
        assert_enqueued(send_welcome)


def test_drain_gives_actors_their_current_job_and_saves_its_meta(
    taskq_client: taskq.Client,
) -> None:
    job_id = taskq_client.enqueue_with(with_progress, [4], meta={"user": 7})

    (run,) = drain(taskq_client)

    assert (run.outcome, run.result) == ("succeeded", 1)
    assert taskq_client.get(job_id).meta == {"user": 7, "progress": 1.0}


class Recorder(taskq.Middleware):
    """Where each hook ran: (hook, actor, the thread's name)."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, bool]] = []

    def before_job(self, job) -> None:
        self.seen.append(("before_job", job.actor, _in_drain_thread()))

    def after_job(self, job, outcome) -> None:
        self.seen.append(("after_job", job.actor, _in_drain_thread()))

    def before_job_in_thread(self, job) -> None:
        self.seen.append(("before_job_in_thread", job.actor, _in_drain_thread()))

    def after_job_in_thread(self, job) -> None:
        self.seen.append(("after_job_in_thread", job.actor, _in_drain_thread()))


def _in_drain_thread() -> bool:
    import threading

    return threading.current_thread().name.startswith("taskq-drain")


def test_drain_runs_the_client_s_middleware_around_each_job_as_a_worker_does(
    taskq_client: taskq.Client,
) -> None:
    recorder = Recorder()
    with taskq.Client(middleware=[recorder]) as client:  # TASKQ_DSN from the fixture
        client.enqueue(send_welcome, "ada@example.com")  # sync: in the drain's thread
        client.enqueue(fails_twice, "async")  # async: on the loop, no thread hooks
        drain(client, "mail")
        drain(client, "default")
    assert recorder.seen[:4] == [
        ("before_job", "send_welcome", False),
        ("before_job_in_thread", "send_welcome", True),
        ("after_job_in_thread", "send_welcome", True),
        ("after_job", "send_welcome", False),
    ]
    # the async actor (three attempts: it fails twice): the job hooks only, on the loop
    assert (
        recorder.seen[4:]
        == [("before_job", "fails_twice", False), ("after_job", "fails_twice", False)] * 3
    )
