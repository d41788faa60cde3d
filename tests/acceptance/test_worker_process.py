"""``taskq worker`` as a real process: real signals, SIGKILL, SIGSTOP, killed backends.

Every test runs on both stores. Workers use short heartbeats and leases (0.3 s / 2 s) so
the crash paths finish in seconds; every wait polls the store or the log with a deadline.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import psycopg
import pytest

from taskq import AsyncClient, exit_codes
from tests.conftest import WITH_POOLER, target_fixture
from tests.support import worker_actors as actors
from tests.support.helpers import async_wait_until, wait_until
from tests.support.worker_harness import ROOT, WorkerProcess, http_get_sync, wait_for_states

# claims, acks, heartbeats, rescues, cancels and limits also through PgBouncer (issue 19)
target = target_fixture(*WITH_POOLER)

pytestmark = pytest.mark.slow

CONTRACT_METRICS = (
    "taskq_pool_workers_alive",
    "taskq_pool_workers_configured",
    "taskq_pool_worker_restarts_total",
    "taskq_pool_items_dead_lettered_total",
    "taskq_process_pool_breaks_total",
    "taskq_jobs_finished_total",
    "taskq_job_duration_seconds",
)


@pytest.fixture
def env(target, tmp_path: Path) -> dict[str, str]:
    env = target.env
    env["TASKQ_TEST_RUNS"] = str(tmp_path / "runs.log")
    return env


@pytest.fixture
def runs_file(env) -> Path:
    return Path(env["TASKQ_TEST_RUNS"])


@pytest.fixture
def release(tmp_path: Path) -> Path:
    path = tmp_path / "release"
    path.mkdir()
    return path


@pytest.fixture
def spawn(target, env, tmp_path: Path):
    started: list[WorkerProcess] = []

    def start(
        *args: str, extra_env: dict[str, str] | None = None, new_session: bool = False
    ) -> WorkerProcess:
        worker = WorkerProcess(
            target,
            *args,
            env={**env, **(extra_env or {})},
            log_path=tmp_path / f"worker{len(started)}.log",
            new_session=new_session,
        )
        started.append(worker)
        return worker

    yield start
    for worker in started:
        worker.stop()


def starts(runs_file: Path, key: str) -> int:
    return actors.runs(runs_file, "start").count(key)


async def test_sigterm_exits_0_nothing_running_nothing_lost(
    store, spawn, runs_file, release, tmp_path
):
    """SIGTERM: stop claiming, let the running job finish within the grace (it ends
    succeeded), leave unclaimed jobs queued and uncharged, /ready turns 503, exit 0."""
    sock = str(tmp_path / "health.sock")
    async with AsyncClient(store=store) as client:
        held = await client.enqueue(actors.held_idempotent, "grace", str(release))
        worker = spawn(
            "--queues",
            "held",
            "--max-concurrency",
            "1",
            "--shutdown-grace",
            "30",
            "--health-socket-path",
            sock,
        )
        wait_until(lambda: starts(runs_file, "grace") == 1, what="the held job to start")
        waiting = await client.enqueue_many(
            actors.held_idempotent, [(("later", str(release)), {}) for _ in range(3)]
        )
        assert http_get_sync("/ready", socket_path=sock)[0] == 200
        worker.signal(signal.SIGTERM)
        worker.wait_for_event("worker-stopping")
        assert http_get_sync("/ready", socket_path=sock)[0] == 503
        assert http_get_sync("/live", socket_path=sock)[0] == 200
        (release / "grace").touch()  # the running job finishes during the grace period
        assert worker.wait() == exit_codes.OK
        job = await client.get(held)
        later = [await client.get(i) for i in waiting]
    assert job.state == "succeeded" and job.attempts == 1
    assert all(j.state == "queued" and j.attempts == 0 for j in later)
    assert (await store.stats())["running"] == 0
    assert await store.insight.list_workers() == []  # unregistered


async def test_three_worker_processes_share_a_queue_and_run_each_job_once(store, spawn, runs_file):
    keys = [f"m{i}" for i in range(600)]
    workers = [spawn("--max-concurrency", "4") for _ in range(3)]
    for worker in workers:
        worker.wait_for_event("worker-started")
    async with AsyncClient(store=store) as client:
        ids = await client.enqueue_many(actors.remember_sync, [((k,), {}) for k in keys])
        jobs = await wait_for_states(store, ids, {"succeeded"}, timeout=90)
    for worker in workers:
        worker.signal(signal.SIGTERM)
    assert [w.wait() for w in workers] == [exit_codes.OK] * 3
    assert Counter(actors.runs(runs_file)) == Counter(keys)
    assert all(j.attempts == 1 for j in jobs)
    served_by = Counter(j.result["pid"] for j in jobs)
    assert len(served_by) >= 2  # the work was shared, not one worker doing it all


async def test_sigint_is_a_graceful_stop_too(store, spawn):
    worker = spawn()
    worker.wait_for_event("worker-started")
    worker.signal(signal.SIGINT)
    assert worker.wait() == exit_codes.OK
    assert worker.events("worker-stopping")[0]["reason"] == "SIGINT"


async def test_second_sigterm_skips_the_grace_and_gives_the_job_back(
    store, spawn, runs_file, release
):
    async with AsyncClient(store=store) as client:
        held = await client.enqueue(actors.held_idempotent, "stuck", str(release))
        worker = spawn("--queues", "held", "--shutdown-grace", "600")
        wait_until(lambda: starts(runs_file, "stuck") == 1, what="the held job to start")
        worker.signal(signal.SIGTERM)
        worker.wait_for_event("worker-stopping")
        worker.signal(signal.SIGTERM)
        assert worker.wait(timeout=60) == exit_codes.OK  # far sooner than the 600 s grace
        job = await client.get(held)
    assert worker.events("worker-stop-hurried")
    assert job.state == "queued" and job.attempts == 0  # given back, not charged
    assert job.crash_count == 0


async def test_sigkill_mid_job_rerun_idempotent_crashed_non_idempotent_never_poison(
    store, spawn, runs_file, release
):
    """SIGKILL a worker mid-job from outside: the next worker's sweeper finds the expired
    leases. Idempotent -> re-run; non-idempotent -> dead/crashed. An outside SIGKILL blames
    no job: a job in flight during two of them is charged twice but never poisoned."""
    async with AsyncClient(store=store) as client:
        idem = await client.enqueue(actors.held_idempotent, "idem", str(release))
        once = await client.enqueue(actors.held_once, "once", str(release))
        twice = await client.enqueue(actors.held_idempotent, "twice", str(release))
        first = spawn("--queues", "held", "--max-concurrency", "3")
        first_id = first.wait_for_event("worker-started")["worker_id"]
        wait_until(
            lambda: all(starts(runs_file, k) == 1 for k in ("idem", "once", "twice")),
            what="three jobs running in the first worker",
        )
        first.signal(signal.SIGKILL)
        first.wait()
        (release / "idem").touch()
        (release / "once").touch()
        second = spawn("--queues", "held", "--max-concurrency", "3")
        idem_job, once_job = await wait_for_states(store, [idem, once], {"succeeded", "dead"})
        wait_until(lambda: starts(runs_file, "twice") == 2, what="twice re-run once")
        second.signal(signal.SIGKILL)
        second.wait()
        third = spawn("--queues", "held")
        wait_until(lambda: starts(runs_file, "twice") == 3, what="twice re-run again")
        (release / "twice").touch()
        (twice_job,) = await wait_for_states(store, [twice], {"succeeded", "dead"})
        third.signal(signal.SIGTERM)
        assert third.wait() == exit_codes.OK
    assert idem_job.state == "succeeded" and idem_job.crash_count == 1
    assert actors.runs(runs_file).count("idem") == 1  # finished once, by the second worker
    assert once_job.state == "dead" and once_job.dead_reason == "crashed"
    assert once_job.crash_count == 1 and starts(runs_file, "once") == 1  # never re-run
    assert "lease expired" in once_job.last_error and first_id in once_job.last_error
    assert (twice_job.state, twice_job.crash_count) == ("succeeded", 2)  # not poison
    assert (await store.stats())["running"] == 0


async def test_crash_loop_guard_ends_the_process_non_zero_with_a_critical_line(store, spawn):
    """Consumers killed by a consumer fault on every job: once every consumer has died more
    than 10 times in 60 s (one restart policy per consumer; their backoffs add up to at
    most ~43 s) the guard trips; the worker gives the jobs back and exits 3."""
    async with AsyncClient(store=store) as client:
        ids = await client.enqueue_many(
            actors.consumer_fault, [((f"c{i}",), {}) for i in range(12)]
        )
        middleware = {"TASKQ_WORKER_MIDDLEWARE": "tests.support.worker_actors:fault_middleware"}
        worker = spawn("--queues", "faulty", "--max-concurrency", "12", extra_env=middleware)
        assert worker.wait(timeout=120) == exit_codes.CRASH_LOOP
        jobs = [await client.get(i) for i in ids]
    (critical,) = worker.events("crash-loop-guard-tripped")
    assert critical["level"] == "critical"
    assert len(worker.events("worker died")) >= 12 * 11
    assert len(worker.events("consumer-gave-up")) == 12
    assert all("ConsumerFault" in e["error"] for e in worker.events("worker died"))
    assert all(j.state == "queued" and j.attempts == 0 for j in jobs)  # nothing lost


async def test_a_raising_middleware_hook_never_stops_a_job_or_the_worker(store, spawn, runs_file):
    """``TASKQ_WORKER_MIDDLEWARE`` names hooks that raise on every job: each failure kind is
    logged once, every job succeeds once, no consumer dies, the process runs on until
    SIGTERM and exits 0."""
    async with AsyncClient(store=store) as client:
        ids = await client.enqueue_many(actors.remember, [((f"h{i}",), {}) for i in range(8)])
        middleware = {"TASKQ_WORKER_MIDDLEWARE": "tests.support.worker_actors:broken_hooks"}
        worker = spawn("--max-concurrency", "2", extra_env=middleware)
        jobs = await wait_for_states(store, ids, {"succeeded"})
        assert worker.proc.poll() is None  # still running
        worker.signal(signal.SIGTERM)
        assert worker.wait() == exit_codes.OK
    assert all(j.attempts == 1 for j in jobs)
    assert sorted(actors.runs(runs_file)) == sorted(f"h{i}" for i in range(8))
    assert worker.events("worker died") == [] and worker.events("consumer-restarted") == []
    failed = worker.events("middleware-hook-failed")
    assert sorted(e["method"] for e in failed) == ["after_job", "before_job"]
    assert all(e["level"] == "error" for e in failed)


async def test_fenced_late_ack_from_a_worker_whose_lease_was_taken_over_is_a_no_op(
    store, spawn, runs_file, release
):
    """Freeze a worker (SIGSTOP) mid-job past its lease; another worker rescues and
    finishes the job; thawed, the first worker's late ack must change nothing."""
    async with AsyncClient(store=store) as client:
        job_id = await client.enqueue(actors.held_idempotent, "late", str(release))
        frozen = spawn("--queues", "held")
        wait_until(lambda: starts(runs_file, "late") == 1, what="the job to start")
        frozen.signal(signal.SIGSTOP)
        try:
            taker = spawn("--queues", "held")
            taker_pid = taker.pid
            wait_until(lambda: starts(runs_file, "late") == 2, what="the takeover run")
            (release / "late").touch()
            (job,) = await wait_for_states(store, [job_id], {"succeeded"})
        finally:
            frozen.signal(signal.SIGCONT)
        # the thawed worker finishes its (stale) run and acknowledges it
        wait_until(lambda: actors.runs(runs_file).count("late") == 2, what="the stale run")
        frozen.signal(signal.SIGTERM)
        assert frozen.wait() == exit_codes.OK
        after = await client.get(job_id)
        taker.signal(signal.SIGTERM)
        assert taker.wait() == exit_codes.OK
    assert frozen.events("acks-fenced-out")  # the late ack was sent, and changed nothing
    assert job.result["pid"] == taker_pid
    assert after.state == "succeeded" and after.attempts == job.attempts == 2
    assert after.result == job.result and after.finished_at == job.finished_at


async def test_pg_terminate_backend_mid_run_reconnects_and_loses_nothing(pg_target, tmp_path):
    """Kill every Postgres connection of the worker a few times while it drains jobs:
    it backs off and reconnects, every job ends succeeded exactly once, exit 0."""
    from taskq.store import create_store

    app = f"taskq_w_{secrets.token_hex(4)}"
    dsn = f"{pg_target.dsn}?application_name={app}"
    runs_file = tmp_path / "runs.log"
    store = create_store(pg_target.dsn, pg_target.schema)
    await store.open()
    await store.migrate()
    env = {**pg_target.env, "TASKQ_DSN": dsn, "TASKQ_TEST_RUNS": str(runs_file)}
    worker = WorkerProcess(
        pg_target, "--max-concurrency", "4", env=env, log_path=tmp_path / "worker.log"
    )
    try:
        worker.wait_for_event("worker-started")
        ids = []
        async with AsyncClient(store=store) as client:
            for round_ in range(3):
                ids += await client.enqueue_many(
                    actors.remember, [((f"p{round_}-{i}",), {}) for i in range(200)]
                )
                # the pool reconnects lazily: kill as soon as there is something to kill
                await async_wait_until(
                    lambda: _terminate(pg_target.dsn, app), what="worker backends to kill"
                )
            jobs = await wait_for_states(store, ids, {"succeeded"}, timeout=60)
        worker.signal(signal.SIGTERM)
        assert worker.wait() == exit_codes.OK
    finally:
        worker.stop()
        await store.close()
    assert worker.events("store-unavailable")  # it noticed, and came back
    assert worker.events("store-recovered")
    assert not worker.events("worker died")  # a dead store is not a consumer crash
    assert all(j.attempts == 1 and j.crash_count == 0 for j in jobs)  # nobody charged
    assert Counter(actors.runs(runs_file)) == Counter(j.result["key"] for j in jobs)
    assert len(jobs) == 600 and set(Counter(actors.runs(runs_file)).values()) == {1}


async def _terminate(dsn: str, application_name: str) -> int:
    return await asyncio.to_thread(_terminate_backends, dsn, application_name)


def _terminate_backends(dsn: str, application_name: str) -> int:
    with psycopg.connect(dsn, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE application_name = %s AND pid <> pg_backend_pid()",
            (application_name,),
        ).fetchall()
    return len(rows)


async def test_health_endpoints_on_a_tcp_port(store, spawn):
    worker = spawn("--health-port", "0")
    port = worker.wait_for_event("health-server-started")["port"]
    assert http_get_sync("/live", port=port) == (200, "ok\n")
    worker.wait_for_event("worker-started")  # /ready: 503 until the consumers claim
    assert http_get_sync("/ready", port=port)[0] == 200
    status, text = http_get_sync("/metrics", port=port)
    assert status == 200
    for name in CONTRACT_METRICS:
        assert name in text, name
    assert http_get_sync("/nope", port=port)[0] == 404
    worker.signal(signal.SIGTERM)
    assert worker.wait() == exit_codes.OK


def test_unreachable_store_exits_1_with_one_line(target, spawn):
    bad = (
        "postgresql://nobody@127.0.0.1:1/none?connect_timeout=2"
        if target.kind == "postgres"
        else "sqlite:////proc/no-such-dir/taskq.sqlite3"
    )
    worker = spawn(extra_env={"TASKQ_DSN": bad})
    assert worker.wait() == exit_codes.CANNOT_START
    event, line = worker.log_path.read_text().splitlines()  # JSON for machines, one for people
    assert '"worker-cannot-start"' in event and line.startswith("taskq: ")
    assert worker.events("worker-cannot-start")[0]["error_type"] == "StoreUnavailable"


def test_unmigrated_store_exits_1_and_says_to_migrate(target, spawn):
    worker = spawn()  # no `store` fixture: nothing migrated this schema / file
    assert worker.wait() == exit_codes.CANNOT_START
    (line,) = worker.events("worker-cannot-start")
    assert "taskq migrate" in line["error"]


async def test_health_port_in_use_exits_1_with_one_line(store, spawn):
    import socket

    with socket.socket() as taken:
        taken.bind(("0.0.0.0", 0))
        taken.listen()
        worker = spawn("--health-port", str(taken.getsockname()[1]))
        assert worker.wait() == exit_codes.CANNOT_START
    (line,) = worker.events("worker-cannot-start")
    assert "cannot serve health endpoints" in line["error"]
    assert await store.insight.list_workers() == []  # nothing half-registered


async def test_sighup_reloads_a_good_dsn_file_and_survives_a_bad_one(
    target, store, spawn, tmp_path
):
    dsn_file = tmp_path / "dsn"
    dsn_file.write_text(target.dsn + "\n")
    bad = (
        "postgresql://nobody@127.0.0.1:1/none?connect_timeout=2"
        if target.kind == "postgres"
        else "sqlite:////proc/no-such-dir/taskq.sqlite3"
    )
    worker = spawn(extra_env={"TASKQ_DSN_FILE": str(dsn_file)})
    worker.wait_for_event("worker-started")
    worker.signal(signal.SIGHUP)
    worker.wait_for_event("credentials-reloaded")
    dsn_file.write_text(bad)
    worker.signal(signal.SIGHUP)
    failed = worker.wait_for_event("credentials-reload-failed")
    assert failed["error"]
    async with AsyncClient(store=store) as client:  # it keeps working on the old pool
        job_id = await client.enqueue(actors.remember, "after-hup")
        await wait_for_states(store, [job_id], {"succeeded"})
    assert worker.proc.poll() is None
    worker.signal(signal.SIGTERM)
    assert worker.wait() == exit_codes.OK


async def test_actor_options_in_code_take_effect_and_a_queue_change_needs_force(
    target, store, spawn
):
    first = spawn()
    first.wait_for_event("worker-started")
    first.signal(signal.SIGTERM)
    assert first.wait() == exit_codes.OK
    # how a job runs: the new code's options are recorded and logged once
    changed = spawn("--actors", "tests.support.worker_actors_drifted:registry")
    changed.wait_for_event("worker-started")
    (updated,) = changed.events("actor-config-updated")
    assert updated["differences"] == ["remember: max_attempts 3 -> 7"]
    assert (await store.actor_configs())["remember"].max_attempts == 7
    changed.signal(signal.SIGTERM)
    assert changed.wait() == exit_codes.OK
    # where jobs go: refused, with one line that says what to do; nothing written
    moved = spawn("--actors", "tests.support.worker_actors_drifted:moved")
    assert moved.wait() == exit_codes.CANNOT_START
    (line,) = moved.events("worker-cannot-start")
    assert line["error"].startswith(
        "actor 'remember' moved from queue 'default' to 'elsewhere': jobs enqueued by name"
    )
    assert "--force-update-actor-config" in line["error"]
    assert moved.log_path.read_text().splitlines()[-1] == f"taskq: {line['error']}"
    assert not moved.events("worker-started")
    assert (await store.actor_configs())["remember"].queue == "default"
    forced = spawn(
        "--actors", "tests.support.worker_actors_drifted:moved", "--force-update-actor-config"
    )
    forced.wait_for_event("worker-started")
    (updated,) = forced.events("actor-config-updated")
    assert updated["differences"] == ["remember: queue 'default' -> 'elsewhere'"]
    assert (await store.actor_configs())["remember"].queue == "elsewhere"
    forced.signal(signal.SIGTERM)
    assert forced.wait() == exit_codes.OK


async def test_bad_actors_reference_exits_1_with_one_line(target, store, spawn):
    worker = spawn("--actors", "tests.no_such_module:registry")
    assert worker.wait() == exit_codes.CANNOT_START
    text = worker.log_path.read_text()
    event, line = text.splitlines()  # off a terminal: the JSON event and the `taskq:` line
    assert "no_such_module" in event and "Traceback" not in text
    assert line.startswith("taskq: cannot import module 'tests.no_such_module'")


async def test_an_actors_module_that_fails_to_import_shows_its_own_error(target, store, spawn):
    worker = spawn("--actors", "tests.fixtures.registry_broken:registry")
    assert worker.wait() == exit_codes.CANNOT_START
    text = worker.log_path.read_text()
    (event,) = worker.events("worker-cannot-start")
    assert event["error_type"] == "ActorImportError" and "Traceback" not in text
    line = text.splitlines()[-1]
    broken = ROOT / "tests" / "fixtures" / "registry_broken.py"
    assert line == (
        "taskq: importing 'tests.fixtures.registry_broken' failed: RuntimeError: this module "
        f"fails on import (at {broken}, line 1)"
    )


async def test_workgroup_child_does_not_outlive_its_parent(target, store, env, tmp_path):
    """A worker started with --workgroup-instance by a parent that is SIGKILLed gets
    SIGTERM from the kernel (PR_SET_PDEATHSIG) and shuts down cleanly."""
    pid_file, child_log = tmp_path / "child.pid", tmp_path / "c.log"
    parent_code = (
        "import subprocess, sys, uuid\n"
        "child = subprocess.Popen([sys.executable, '-m', 'taskq', 'worker', '--actors', "
        "'tests.support.worker_actors:registry', '--workgroup-instance', str(uuid.uuid4()), "
        f"'--heartbeat-interval', '0.3', '--lease', '2'], stderr=open({str(child_log)!r}, 'wb'))\n"
        f"open({str(pid_file)!r}, 'w').write(str(child.pid))\n"
        "child.wait()\n"
    )
    env = {**env, "PYTHONPATH": str(ROOT)}
    parent = subprocess.Popen(  # noqa: ASYNC220 (the test drives it with blocking waits)
        [sys.executable, "-c", parent_code], cwd=ROOT, env=env
    )
    try:
        wait_until(lambda: pid_file.exists() and pid_file.read_text(), what="the child pid")
        child = int(pid_file.read_text())
        wait_until(
            lambda: b"worker-started" in (tmp_path / "c.log").read_bytes(),
            what="the child to start",
        )
        parent.kill()
        parent.wait(10)
        wait_until(lambda: not _alive(child), timeout=30, what="the orphaned child to exit")
    finally:
        if parent.poll() is None:
            parent.kill()
    log = (tmp_path / "c.log").read_text()
    assert '"worker-stopping"' in log and '"worker-stopped"' in log
    assert await store.insight.list_workers() == []


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie (reaped by init soon) counts as gone
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except FileNotFoundError:
        return False


async def test_cpu_actor_that_exits_is_crashed_then_poison_and_the_pool_serves_on(
    store, spawn, runs_file
):
    """cpu_bound actors run in the process pool of a real worker: a job whose process
    ``os._exit``s is a crash (re-run if idempotent, poison after two; dead/crashed if not),
    a job that raises is a normal failure, and the pool keeps serving."""
    worker = spawn("--actors", "tests.support.worker_cpu_actors:registry", "--cpu-workers", "2")
    worker.wait_for_event("worker-started")  # it recorded the actors' options: enqueue by name
    async with AsyncClient(store=store) as client:
        square = await client.enqueue_with("cpu_square", [7])
        poison = await client.enqueue_with("cpu_exit_idempotent", ["px"])
        once = await client.enqueue_with("cpu_exit_once", ["ox"])
        raises = await client.enqueue_with("cpu_raises", ["rx"])
        jobs = await wait_for_states(
            store, [square, poison, once, raises], {"succeeded", "dead"}, timeout=60
        )
        after = await client.enqueue_with("cpu_square", [8])
        (after_job,) = await wait_for_states(store, [after], {"succeeded"}, timeout=60)
        worker.signal(signal.SIGTERM)
        assert worker.wait() == exit_codes.OK
    square_job, poison_job, once_job, raises_job = jobs
    assert square_job.state == "succeeded" and square_job.result == 49
    assert poison_job.dead_reason == "poison" and poison_job.crash_count == 2
    assert starts(runs_file, "px") == 2
    assert once_job.dead_reason == "crashed" and once_job.crash_count == 1
    assert starts(runs_file, "ox") == 1
    assert "3" in once_job.last_error  # the cause names the exit code
    assert raises_job.dead_reason == "failed" and raises_job.attempts == 2
    assert raises_job.crash_count == 0 and "KeyError" in raises_job.last_error
    assert after_job.result == 64


async def test_sigterm_to_the_whole_process_group_lets_a_running_cpu_job_finish(
    store, spawn, runs_file, release
):
    """A service manager's stop (systemd's default ``KillMode=control-group``) sends
    SIGTERM to every process of the worker, its pool processes and fork server too. They
    ignore one their worker did not send (and say so), so the running CPU job, not
    idempotent (a crash would make it dead), finishes within the grace; exit 0."""
    worker = spawn(
        "--actors",
        "tests.support.worker_cpu_actors:registry",
        "--cpu-workers",
        "1",
        "--shutdown-grace",
        "30",
        new_session=True,
    )
    worker.wait_for_event("worker-started")
    async with AsyncClient(store=store) as client:
        job = await client.enqueue_with("cpu_held_once", ["grace", str(release / "grace")])
        wait_until(lambda: starts(runs_file, "grace") == 1, what="the CPU job to start")
        os.killpg(worker.pid, signal.SIGTERM)  # the group: the worker leads its own
        worker.wait_for_event("worker-stopping")
        ignored = worker.wait_for_event("process-pool-signal-ignored")
        assert ignored["sender"] == os.getpid()  # this process sent it, not the worker
        (release / "grace").touch()  # the job finishes during the grace period
        assert worker.wait() == exit_codes.OK
        done = await client.get(job)
    assert done.state == "succeeded" and done.attempts == 1 and done.crash_count == 0
    assert done.result == ignored["pid"]  # in the process that was signalled
    assert starts(runs_file, "grace") == 1


async def test_open_pool_breaker_leaves_cpu_jobs_queued_uncharged_others_run(
    store, spawn, tmp_path
):
    """Six pool processes die within the window (more than the breaker's threshold of
    five): the pool's breaker opens, the worker stops claiming cpu_bound jobs (they stay
    queued, never claimed, no attempt charged) and keeps running every other actor."""
    sock = str(tmp_path / "health.sock")
    worker = spawn(
        "--actors",
        "tests.support.worker_cpu_actors:registry",
        "--cpu-workers",
        "2",
        "--health-socket-path",
        sock,
    )
    worker.wait_for_event("worker-started")
    async with AsyncClient(store=store) as client:
        crashers = [await client.enqueue_with("cpu_exit_once", [f"b{i}"]) for i in range(6)]
        await wait_for_states(store, crashers, {"dead"}, timeout=60)
        worker.wait_for_event("process-pool-breaker-open")
        paused = await client.enqueue_with("cpu_square", [9])
        other = await client.enqueue_with("ping", ["still here"])
        (other_job,) = await wait_for_states(store, [other], {"succeeded"})
        paused_job = await client.get(paused)
        _, text = http_get_sync("/metrics", socket_path=sock)
        worker.signal(signal.SIGTERM)
        assert worker.wait() == exit_codes.OK
    assert other_job.result == "still here"
    assert paused_job.state == "queued" and paused_job.attempts == 0
    assert "taskq_process_pool_breaker_open 1.0" in text
    # never claimed: not claimed-and-given-back over and over while the breaker is open
    given_back = (
        'taskq_jobs_finished_total{actor="cpu_square",outcome="given_back",queue="default"}'
    )
    assert f"{given_back} 0.0" in text
