"""A middleware hook that raises never stops a job or a consumer: it is logged (once per
hook, method and exception type, rate-limited) and everything carries on."""

from __future__ import annotations

import threading
from collections import Counter

import taskq
from taskq import AsyncClient, Middleware
from taskq.worker.middleware import MiddlewareChain
from tests.support import worker_actors as actors
from tests.support.helpers import claimed_job
from tests.support.worker_harness import running_worker, wait_for_states
from tests.support.worker_logs import captured_logs


class Broken(Middleware):
    """Both hooks raise on every job."""

    def before_job(self, job) -> None:
        raise RuntimeError("metrics backend unreachable")

    def after_job(self, job, outcome) -> None:
        raise KeyError("no such label")


class Counting(Middleware):
    """Listed around ``Broken``: its hooks must still run."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()

    def before_job(self, job) -> None:
        self.calls["before"] += 1

    def after_job(self, job, outcome) -> None:
        self.calls["after"] += 1


async def test_a_raising_hook_is_logged_and_the_jobs_and_consumers_carry_on(
    target, store, runs_file
):
    first, last = Counting(), Counting()
    keys = [f"m{i}" for i in range(6)]
    with captured_logs() as logs:
        async with AsyncClient(store=store) as client:
            ids = await client.enqueue_many(actors.remember, [((k,), {}) for k in keys])
            async with running_worker(
                target, middleware=[first, Broken(), last], max_concurrency=2
            ) as worker:
                jobs = await wait_for_states(store, ids, {"succeeded"})
                sup = worker.supervisor
                assert sup is not None
                assert sup.restarts == 0 and sup.alive == 2
    assert worker.exit_code == 0  # the worker did not exit on its own: stopped by the test
    assert all(j.attempts == 1 for j in jobs)
    assert sorted(actors.runs(runs_file)) == sorted(keys)  # each ran once
    assert first.calls == last.calls == {"before": 6, "after": 6}
    assert logs.events("worker died") == []
    failed = logs.events("middleware-hook-failed")
    # once per hook, method and exception type within the minute, not once per job
    assert sorted((e["method"], e["error"].split(":")[0]) for e in failed) == [
        ("after_job", "KeyError"),
        ("before_job", "RuntimeError"),
    ]
    assert all(e["level"] == "error" and e["hook"].endswith(".Broken") for e in failed)


def test_the_same_failure_is_logged_again_at_most_once_per_interval_with_a_count():
    now = [0.0]

    class Flaky(Middleware):
        def __init__(self) -> None:
            self.error: type[Exception] = ValueError

        def before_job(self, job) -> None:
            raise self.error("flaky")

    flaky = Flaky()
    chain = MiddlewareChain([flaky], report_every=60.0, clock=lambda: now[0])
    with captured_logs() as logs:
        for _ in range(3):
            chain.before_job(claimed_job("remember", "default"))
        now[0] = 59.0
        chain.before_job(claimed_job("remember", "default"))
        assert len(logs.events("middleware-hook-failed")) == 1
        now[0] = 60.0
        chain.before_job(claimed_job("remember", "default"))
        flaky.error = TypeError  # another kind of error: its own first line
        chain.before_job(claimed_job("remember", "default"))
    lines = logs.events("middleware-hook-failed")
    assert [e["not_logged_since_last"] for e in lines] == [0, 3, 0]
    assert [e["error"] for e in lines] == [
        "ValueError: flaky",
        "ValueError: flaky",
        "TypeError: flaky",
    ]
    assert chain.failures == 6


class InThread(Middleware):
    """Records where its thread hooks run: the thread, and the job taskq.current_job()
    gives there (the run's context)."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, str, str]] = []
        self.lock = threading.Lock()

    def _note(self, hook: str, job) -> None:
        with self.lock:
            self.seen.append(
                (hook, str(job.id), threading.current_thread().name, str(taskq.current_job().id))
            )

    def before_job_in_thread(self, job) -> None:
        self._note("before", job)

    def after_job_in_thread(self, job) -> None:
        self._note("after", job)


class BrokenInThread(Middleware):
    def before_job_in_thread(self, job) -> None:
        raise RuntimeError("thread hook broken")


async def test_thread_hooks_run_in_the_sync_actor_s_thread_around_it(target, store, runs_file):
    """``*_in_thread`` hooks run in the thread that runs a sync job, in its context, once
    before and once after it; not for async jobs; a raising one is logged, the job runs."""
    hooks = InThread()
    with captured_logs() as logs:
        async with AsyncClient(store=store) as client:
            sync_ids = await client.enqueue_many(
                actors.remember_sync, [(("s1",), {}), (("s2",), {})]
            )
            async_ids = await client.enqueue_many(actors.remember, [(("a1",), {})])
            async with running_worker(target, middleware=[hooks, BrokenInThread()]):
                await wait_for_states(store, [*sync_ids, *async_ids], {"succeeded"})
    assert sorted(actors.runs(runs_file)) == ["a1", "s1", "s2"]
    by_job: dict[str, list[tuple[str, str, str]]] = {}
    for hook, job_id, thread, current in hooks.seen:
        by_job.setdefault(job_id, []).append((hook, thread, current))
    assert sorted(by_job) == sorted(str(i) for i in sync_ids)  # not the async job
    for job_id, calls in by_job.items():
        assert [c[0] for c in calls] == ["before", "after"]
        assert all(thread.startswith("taskq-sync") for _, thread, _ in calls)
        assert calls[0][1] == calls[1][1]  # the same thread
        assert all(current == job_id for _, _, current in calls)
    failed = logs.events("middleware-hook-failed")
    assert [e["method"] for e in failed] == ["before_job_in_thread"]
