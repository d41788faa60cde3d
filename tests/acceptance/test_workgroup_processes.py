"""``taskq workgroup start`` with real ``taskq worker`` children, real signals, real stores.

Nothing here is mocked: the supervisor is a subprocess, its children are the real worker,
the jobs are in a real SQLite file or Postgres schema, and the test kills, stops and
hangs processes with signals. Every wait has a deadline (``tests.support.helpers``).
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from uuid import UUID

import pytest

from taskq.client import AsyncClient
from taskq.store import create_store
from taskq.workgroup import SupervisionEvent, Supervisor, parse_config
from tests.support.helpers import async_wait_until, wait_until
from tests.support.workgroup_actors import nap, noop, shout
from tests.support.workgroup_harness import (
    Workgroup,
    pid_alive,
    taskq_env,
    workgroup_processes,
    write_config,
)

pytestmark = pytest.mark.slow

FAST = """
[supervisor]
backoff_initial = 0.05
backoff_max = 0.1
shutdown_grace = {grace}
"""


@pytest.fixture
def workgroups() -> Iterator[Callable[[Path, dict[str, str]], Workgroup]]:
    with workgroup_processes() as start:
        yield start


@pytest.fixture
async def sqlite_store(sqlite_target) -> AsyncIterator:
    """A migrated store for the tests that only need SQLite."""
    store = create_store(sqlite_target.dsn)
    await store.open()
    await store.migrate()
    try:
        yield store
    finally:
        await store.close()


@pytest.fixture
def migrated_sqlite(sqlite_target) -> None:
    """The same, for the synchronous tests: just the schema."""

    async def migrate() -> None:
        store = create_store(sqlite_target.dsn)
        await store.open()
        try:
            await store.migrate()
        finally:
            await store.close()

    asyncio.run(migrate())


def in_thread(fn: Callable, *args, **kwargs):
    """Block on the log in a thread, so the test's event loop (and its store) keeps running."""
    return asyncio.to_thread(fn, *args, **kwargs)


async def job_state(store, job_id: UUID) -> str | None:
    job = await store.get_job(job_id)
    return job.state if job else None


async def test_sigkilled_child_is_replaced_and_its_job_rescued_at_once(
    target, store, tmp_path: Path, workgroups
) -> None:
    config = write_config(
        tmp_path / "wg.toml",
        FAST.format(grace=5) + '[[workers]]\nname = "api"\npoll_interval = 0.1\n',
    )
    wg = workgroups(config, target.env)
    first = await in_thread(wg.started_pid, "api")
    # a 5 s grace is below a child's worst-case clean exit: said at start, with the numbers
    assert any(
        "shutdown_grace 5s is below a child's worst-case clean exit of 45s" in w["warning"]
        for w in wg.events("workgroup-config-warning")
    )
    async with AsyncClient(store=store) as client:
        job_id = await client.enqueue(nap, 300)
    await async_wait_until(
        lambda: _is(job_state(store, job_id), "running"), what="the job running in the child"
    )

    os.kill(first, signal.SIGKILL)

    (rescued,) = await in_thread(wg.wait_event, "workgroup-jobs-rescued", child_pid=first)
    assert rescued["count"] == 1 and rescued["worker"] == "api"
    job = await store.get_job(job_id)
    # not idempotent: the crash rules make it dead/crashed, with the observed cause; the
    # lease (10 s, heartbeated) never had to expire
    assert (job.state, job.dead_reason, job.crash_count) == ("dead", "crashed", 1)
    assert "killed by SIGKILL" in job.last_error and "observed by workgroup" in job.last_error
    assert "lease expired" not in job.last_error
    (scheduled,) = await in_thread(wg.wait_event, "workgroup.restart_scheduled", worker="api")
    assert scheduled["reason"] == "child_exit" and scheduled["exit_cause"] == "killed by SIGKILL"
    assert 0 <= scheduled["delay"] <= 0.05
    second = await in_thread(wg.started_pid, "api", nth=2)
    assert second != first and pid_alive(second)
    assert await in_thread(wg.stop) == 0


async def _is(value, expected) -> bool:
    return (await value) == expected


def test_crash_looping_child_latches_and_the_supervisor_still_answers(
    sqlite_target, tmp_path: Path, workgroups
) -> None:
    config = write_config(
        tmp_path / "wg.toml",
        "[supervisor]\nbackoff_initial = 0.01\nbackoff_max = 0.05\nburst_limit = 2\n"
        'http_port = 0\n[[workers]]\nname = "api"\n',
    )
    wg = workgroups(config, {**sqlite_target.env, "WG_TEST_BREAK_IMPORT": "1"})
    (latched,) = wg.wait_event("workgroup-burst-limit-exceeded", worker="api")
    assert latched["level"] == "critical" and latched["reason"] == "child_exit"
    restarts = wg.events("workgroup.restart_scheduled", worker="api")
    assert [r["reason"] for r in restarts] == ["child_exit", "child_exit"]
    assert len(wg.events("workgroup-child-started", worker="api")) == 3

    # each crashed child's last words reached the log before its restart was scheduled
    lines = wg.snapshot()
    first_restart = lines.index(restarts[0])
    assert any(
        "broken on purpose" in str(line) and line.get("worker") == "api"
        for line in lines[:first_restart]
    )

    status = wg.status()
    (child,) = status["children"]
    assert child["latched"] and child["state"] == "latched" and child["pid"] is None
    assert child["restarts"] == 2 and child["last_exit_cause"].startswith("exited with code")
    assert status["ready"] is False
    assert wg.get("/live")[0] == 200
    code, body = wg.get("/ready")
    assert code == 503 and "latched" in body
    code, text = wg.get("/metrics")
    assert code == 200
    assert "taskq_workgroup_children_latched 1.0" in text
    assert 'taskq_workgroup_child_restarts_total{reason="child_exit",worker="api"} 2.0' in text
    assert "taskq_workgroup_children_alive 0.0" in text
    assert wg.stop() == 0


async def test_sigstopped_child_with_health_on_is_replaced_as_unhealthy(
    target, store, tmp_path: Path, workgroups
) -> None:
    config = write_config(
        tmp_path / "wg.toml",
        FAST.format(grace=5) + '[[workers]]\nname = "api"\n[workers.health]\nenabled = true\n'
        "check_interval = 0.3\nstale_after = 1.5\nstartup_grace = 3.0\n",
    )
    wg = workgroups(config, target.env)
    first = await in_thread(wg.started_pid, "api")
    instance = UUID(wg.instance)

    async def registered() -> bool:
        row = await store.find_worker(instance, "api")
        return row is not None and row.pid == first

    await async_wait_until(registered, what="the child's worker row")
    os.kill(first, signal.SIGSTOP)

    (unhealthy,) = await in_thread(wg.wait_event, "workgroup-child-unhealthy", child_pid=first)
    assert "heartbeat stale" in unhealthy["problem"]
    (scheduled,) = await in_thread(wg.wait_event, "workgroup.restart_scheduled", worker="api")
    assert scheduled["reason"] == "unhealthy"
    assert "heartbeat stale" in scheduled["exit_cause"] and "SIGKILL" in scheduled["exit_cause"]
    second = await in_thread(wg.started_pid, "api", nth=2)
    assert second != first and not pid_alive(first)
    assert await in_thread(wg.stop) == 0


def test_sighup_is_forwarded_and_survived_and_ctrl_c_reaches_each_child_once(
    sqlite_target, migrated_sqlite, tmp_path: Path, workgroups
) -> None:
    dsn_file = tmp_path / "dsn"
    dsn_file.write_text(sqlite_target.dsn)
    config = write_config(
        tmp_path / "wg.toml",
        FAST.format(grace=5) + '[[workers]]\nname = "api"\n[[workers]]\nname = "batch"\n'
        'queues = ["email"]\n',
    )
    wg = workgroups(config, {**sqlite_target.env, "TASKQ_DSN_FILE": str(dsn_file)})
    started = wg.wait_event("worker-started", count=2)  # their SIGHUP handlers are in place
    assert {line["worker"] for line in started} == {"api", "batch"}
    pids = {wg.started_pid("api"), wg.started_pid("batch")}
    for pid in pids:  # own process group: a terminal's Ctrl-C does not reach them directly
        assert os.getpgid(pid) == pid != os.getpgid(wg.proc.pid)

    wg.signal(signal.SIGHUP)

    (reload,) = wg.wait_event("workgroup-reload-signal")
    assert reload["children"] == 2
    reloaded = wg.wait_event("credentials-reloaded", count=2)
    assert {line["worker"] for line in reloaded} == {"api", "batch"}
    assert wg.proc.poll() is None and all(pid_alive(pid) for pid in pids)
    assert wg.events("workgroup.restart_scheduled") == []

    # a terminal's Ctrl-C: SIGINT to the supervisor's process group reaches only it, and
    # each child is told to stop exactly once (a second signal would hurry it)
    os.killpg(wg.proc.pid, signal.SIGINT)
    assert wg.wait_exit() == 0
    stopping = wg.events("worker-stopping")
    assert sorted(line["worker"] for line in stopping) == ["api", "batch"]
    assert {line["reason"] for line in stopping} == {"SIGTERM"}
    assert wg.events("worker-stop-hurried") == []
    assert not any(pid_alive(pid) for pid in pids)


async def test_sigterm_stops_everything_cleanly_and_leaves_no_job_running(
    target, store, tmp_path: Path, workgroups
) -> None:
    # shutdown_grace 17 -> each child gets --shutdown-grace 2 and exits inside our grace
    config = write_config(
        tmp_path / "wg.toml",
        FAST.format(grace=17) + '[[workers]]\nname = "one"\npoll_interval = 0.1\n'
        '[[workers]]\nname = "two"\npoll_interval = 0.1\n',
    )
    wg = workgroups(config, target.env)
    async with AsyncClient(store=store) as client:
        ids = [await client.enqueue(nap, 300) for _ in range(4)]

    async def all_running() -> bool:
        return all([await job_state(store, i) == "running" for i in ids])

    await async_wait_until(all_running, what="four running jobs")
    pids = wg.child_pids()
    assert len(pids) == 2

    assert await in_thread(wg.stop) == 0

    assert not any(pid_alive(pid) for pid in pids)
    assert wg.events("workgroup-killing-children") == []  # they left within the grace
    assert (await store.stats())["running"] == 0
    for job_id in ids:
        job = await store.get_job(job_id)
        assert job.state != "running" and job.crash_count == 0  # given back, not crashed


async def test_second_sigterm_kills_the_children_at_once(
    sqlite_target, sqlite_store, tmp_path: Path, workgroups
) -> None:
    store = sqlite_store
    # the default 100 s grace: a child would wait 30 s for its running job
    config = write_config(tmp_path / "wg.toml", '[[workers]]\nname = "api"\npoll_interval = 0.1\n')
    wg = workgroups(config, sqlite_target.env)
    async with AsyncClient(store=store) as client:
        job_id = await client.enqueue(nap, 300)
    await async_wait_until(lambda: _is(job_state(store, job_id), "running"), what="the job running")
    wg.signal(signal.SIGTERM)
    await in_thread(wg.wait_event, "worker-stopping", worker="api")
    wg.signal(signal.SIGTERM)
    (kill,) = await in_thread(wg.wait_event, "workgroup-killing-children")
    assert kill["why"] == "second stop signal"
    assert await in_thread(wg.wait_exit, 20) == 0
    assert not any(pid_alive(pid) for pid in wg.child_pids())
    job = await store.get_job(job_id)
    assert job.state != "running" and "killed by SIGKILL" in job.last_error


def test_sigkilled_supervisor_leaves_no_child_alive(
    sqlite_target, migrated_sqlite, tmp_path: Path, workgroups
) -> None:
    config = write_config(
        tmp_path / "wg.toml",
        FAST.format(grace=5) + '[[workers]]\nname = "api"\n[[workers]]\nname = "batch"\n',
    )
    wg = workgroups(config, sqlite_target.env)
    wg.wait_event("worker-started", count=2)
    pids = wg.child_pids()
    assert len(pids) == 2

    wg.signal(signal.SIGKILL)
    wg.wait_exit()

    wait_until(
        lambda: not any(pid_alive(pid) for pid in pids),
        timeout=20,
        what=f"children {sorted(pids)} to exit after their supervisor died",
    )


async def test_a_5_mib_output_line_is_forwarded_in_pieces_and_the_child_keeps_running(
    sqlite_target, sqlite_store, tmp_path: Path, workgroups
) -> None:
    size = 5 * 1024 * 1024
    store = sqlite_store
    config = write_config(
        tmp_path / "wg.toml",
        FAST.format(grace=5) + '[[workers]]\nname = "api"\npoll_interval = 0.1\n',
    )
    wg = workgroups(config, sqlite_target.env)
    pid = await in_thread(wg.started_pid, "api")
    async with AsyncClient(store=store) as client:
        big = await client.enqueue(shout, size)
        await async_wait_until(
            lambda: _is(job_state(store, big), "succeeded"), what="the shouting job"
        )
        after = await client.enqueue(noop)
        await async_wait_until(
            lambda: _is(job_state(store, after), "succeeded"), what="a job after the long line"
        )

    def pieces() -> list[dict]:
        found = [e for e in wg.events("child-output", worker="api", stream="stdout") if "part" in e]
        return found if found and found[-1].get("final") else []

    found = await in_thread(wait_until, pieces, what="the last piece of the long line")
    assert len(found) > 1
    assert sum(len(p["line"]) for p in found) == size
    assert [p["part"] for p in found] == list(range(1, len(found) + 1))
    assert wg.child_pids() == {pid} and pid_alive(pid)
    assert wg.events("workgroup.restart_scheduled") == []
    # a child's JSON line stays JSON: its own fields, plus worker and stream
    (started,) = wg.events("worker-started")
    assert started["worker"] == "api" and started["stream"] == "stderr"
    assert (
        started["pid"] == pid
        and started["level"] == "info"
        and "worker_id" in started
        and "child_worker" not in started
    )
    assert await in_thread(wg.stop) == 0


async def test_a_child_that_cannot_be_spawned_is_retried_then_latched(
    sqlite_target, tmp_path: Path
) -> None:
    config = parse_config(
        {
            "actors": "tests.support.workgroup_actors:registry",
            "supervisor": {
                "backoff_initial": 0.01,
                "backoff_max": 0.02,
                "burst_limit": 1,
                "health_pg_dsn": sqlite_target.dsn,
            },
            "workers": [{"name": "api"}],
        }
    )
    events: list[SupervisionEvent] = []
    supervisor = Supervisor(
        config, executable=str(tmp_path / "no-such-python"), on_event=events.append
    )
    task = asyncio.create_task(supervisor.run())

    async def latched() -> bool:
        return any(e.kind == "latched" for e in events) or task.done()

    await async_wait_until(latched, what="the child to latch")
    scheduled = [e for e in events if e.kind == "restart_scheduled"]
    assert [e.fields["reason"] for e in scheduled] == ["spawn_failed"]
    assert "spawn failed" in scheduled[0].fields["exit_cause"]
    assert supervisor.readiness()[0] is False
    assert supervisor.status()["children"][0]["state"] == "latched"
    assert supervisor.reload() == 0  # no live process: nothing to signal, nothing raised
    supervisor.request_stop()
    assert await asyncio.wait_for(task, 30) == 0


async def test_in_process_supervisor_reloads_running_children_but_not_during_shutdown(
    sqlite_target, sqlite_store, tmp_path: Path
) -> None:
    config = parse_config(
        {
            "actors": "tests.support.workgroup_actors:registry",
            "supervisor": {"shutdown_grace": 20.0, "health_pg_dsn": sqlite_target.dsn},
            "workers": [{"name": "api"}],
        }
    )
    events: list[SupervisionEvent] = []
    supervisor = Supervisor(config, env=taskq_env(sqlite_target.env), on_event=events.append)
    task = asyncio.create_task(supervisor.run())
    try:
        (child,) = supervisor.children

        async def signals_ready() -> bool:
            return child.signals_ready or task.done()

        await async_wait_until(signals_ready, what="the worker to install its handlers")
        assert supervisor.reload() == 1
        (reload,) = [e for e in events if e.kind == "reload_signal"]
        assert reload.fields["workers"] == ["api"]
        supervisor.request_stop()
        assert supervisor.reload() == 0  # ignored during shutdown
        assert supervisor.readiness() == (False, "shutting down")
        assert await asyncio.wait_for(task, 30) == 0
    finally:
        if not task.done():
            supervisor.request_stop(hurry=True)
            await asyncio.wait_for(task, 30)
    kinds = [e.kind for e in events]
    assert kinds[:2] == ["started", "child_started"] and kinds[-1] == "stopped"
    (exited,) = [e for e in events if e.kind == "child_exited"]
    assert exited.fields["exit_cause"] == "exited cleanly (code 0)"
    assert not pid_alive(exited.fields["pid"])


def test_health_query_failures_are_tolerated_up_to_the_limit(
    sqlite_target, migrated_sqlite, tmp_path: Path, workgroups
) -> None:
    # the supervisor's health store is an unmigrated file: every query fails
    broken = f"sqlite:///{tmp_path / 'not-migrated.sqlite3'}"
    config = write_config(
        tmp_path / "wg.toml",
        FAST.format(grace=5) + f'health_pg_dsn = "{broken}"\n[[workers]]\nname = "api"\n'
        "[workers.health]\nenabled = true\ncheck_interval = 0.2\nstartup_grace = 0.5\n"
        "consecutive_failure_limit = 3\n",
    )
    wg = workgroups(config, sqlite_target.env)
    first = wg.started_pid("api")
    (unhealthy,) = wg.wait_event("workgroup-child-unhealthy", child_pid=first)
    assert unhealthy["problem"].startswith("health query failed 3 times in a row")
    failures = wg.events("workgroup-health-query-failed", child_pid=first)
    assert [f["consecutive_failures"] for f in failures] == [1, 2, 3]
    (scheduled,) = wg.wait_event("workgroup.restart_scheduled", worker="api")
    assert scheduled["reason"] == "unhealthy"
    assert wg.started_pid("api", nth=2) != first
    assert wg.stop() == 0


def _session_members(sid: int) -> set[int]:
    """Living (non-zombie) processes in session ``sid``: the supervisor and its children."""
    members = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z" and int(fields[3]) == sid:  # state, ppid, pgrp, session
            members.add(int(entry.name))
    return members


@pytest.mark.parametrize("delay", [0.0, 0.1, 0.3, 1.0])
async def test_supervisor_sigkilled_early_leaves_no_orphan(
    target, store, tmp_path: Path, workgroups, delay: float
) -> None:
    """SIGKILL the supervisor `delay` seconds after it spawned its first child, while the
    children are still starting (importing): each child was told its supervisor's pid, so
    it exits at once (already orphaned) or gets SIGTERM from the kernel; none lives on
    under init claiming jobs."""
    config = write_config(
        tmp_path / "wg.toml",
        FAST.format(grace=5) + '[[workers]]\nname = "api"\n[[workers]]\nname = "batch"\n',
    )
    wg = workgroups(config, target.env)
    sid = wg.proc.pid  # the harness starts it in its own session; children stay in it
    children = await in_thread(
        wait_until, lambda: _session_members(sid) - {sid}, timeout=30, what="a child"
    )
    await asyncio.sleep(delay)  # the scenario itself: how early the supervisor dies
    wg.signal(signal.SIGKILL)
    await in_thread(wg.wait_exit)

    await in_thread(
        wait_until,
        lambda: not _session_members(sid),
        timeout=10,
        what=f"no child of the SIGKILLed supervisor to survive (first seen: {children})",
    )
