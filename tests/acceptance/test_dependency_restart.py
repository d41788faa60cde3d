"""A dead dependency is backed off on, not restarted against: a real Postgres restart.

The test starts a throwaway Postgres cluster of its own (``initdb`` from the binaries in
``/usr/lib/postgresql/*/bin``, as the ``postgres`` OS user when run as root, on a free
port, never the shared server on 5432), runs ``taskq migrate`` and a real ``taskq
worker`` against it, and stops the cluster under the worker while it drains slow-ish
jobs. The worker must ride the outage on its store backoff: no exit, no consumer
restart (``taskq_pool_worker_restarts_total`` stays put), the outage logged once per
component and the recovery too, every job succeeded exactly once with no attempt
charged. Then the store stays down for longer than the lease: leases are fenced, so
the worker's own jobs are still not run twice.

The cluster's directory is a ``mkdtemp`` under ``/tmp`` owned by ``postgres``:
pytest's ``tmp_path`` sits in a root-only (0700) directory that the server's user cannot
enter. It is stopped and removed in ``finally``.
"""

from __future__ import annotations

import glob
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import psycopg
import pytest

from taskq import Client, exit_codes
from taskq.exceptions import StoreUnavailable
from tests.support import chaos_actors as actors
from tests.support.helpers import wait_until
from tests.support.worker_harness import WorkerProcess, http_get_sync, metric_value
from tests.support.workgroup_harness import run_cli

pytestmark = pytest.mark.slow

ACTORS = "tests.support.chaos_actors:outage_registry"
LEASE = 4.0
#: the first test's outage: past the store's 10 s wait for a pooled connection
OUTAGE = 12.0
HEARTBEAT = 0.5
RESTARTS = "taskq_pool_worker_restarts_total"
#: the components that call the store, each with its own backoff (taskq.worker.outage)
COMPONENTS = {"fetcher", "acker", "heartbeat", "rescuer", "pruner", "cancel-watcher", "backlog"}


def postgres_bin() -> Path:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    if not found:
        pytest.fail(
            "no Postgres server binaries in /usr/lib/postgresql/*/bin (initdb, pg_ctl):"
            " install the postgresql package; this test needs a cluster of its own",
            pytrace=False,
        )
    return Path(found[-1]).parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Cluster:
    """A throwaway Postgres cluster: initdb, start, stop, start again, remove."""

    def __init__(self) -> None:
        self.bin = postgres_bin()
        self.port = free_port()
        self.base = Path(tempfile.mkdtemp(prefix="taskq-pg-"))
        self.data = self.base / "data"
        self.log = self.base / "server.log"
        self.run_as: list[str] = []
        if os.geteuid() == 0:  # the server refuses to run as root
            self.run_as = ["runuser", "-u", "postgres", "--"]
            shutil.chown(self.base, "postgres", "postgres")
        self.dsn = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"
        self._pg(
            "initdb",
            "-D",
            str(self.data),
            "-U",
            "postgres",
            "--auth=trust",
            "--no-sync",
            "-E",
            "UTF8",
        )

    def _pg(self, tool: str, *args: str) -> None:
        done = subprocess.run(
            [*self.run_as, str(self.bin / tool), *args],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if done.returncode != 0:
            raise AssertionError(
                f"{tool} {' '.join(args)} failed ({done.returncode}):\n"
                f"{done.stdout}{done.stderr}\n{self.server_log()}"
            )

    def server_log(self) -> str:
        try:
            return self.log.read_text()[-3000:]
        except OSError:
            return "(no server log)"

    def start(self) -> None:
        options = (
            f"-p {self.port} -k {self.base} -c listen_addresses=127.0.0.1 "
            "-c fsync=off -c full_page_writes=off"
        )
        self._pg(
            "pg_ctl",
            "-D",
            str(self.data),
            "-l",
            str(self.log),
            "-o",
            options,
            "-w",
            "-t",
            "60",
            "start",
        )
        wait_until(self.answers, timeout=30, what=f"the cluster on port {self.port} to answer")

    def stop(self) -> None:
        self._pg("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "-t", "60", "stop")

    def running(self) -> bool:
        return (self.data / "postmaster.pid").exists()

    def answers(self) -> bool:
        try:
            with psycopg.connect(self.dsn, connect_timeout=2) as conn:
                conn.execute("SELECT 1")
        except psycopg.Error:
            return False
        return True

    def remove(self) -> None:
        try:
            if self.running():
                self._pg("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self.base, ignore_errors=True)


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    cluster = Cluster()
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.remove()
    assert not cluster.answers()


@pytest.fixture
def worker_env(cluster: Cluster, tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(TASKQ_DSN=cluster.dsn, TASKQ_SCHEMA="taskq", TASKQ_LOG_FORMAT="json")
    env.pop("TASKQ_DSN_FILE", None)
    env[actors.RUNS_ENV] = str(tmp_path / "runs.log")
    migrated = run_cli("migrate", env=env)
    assert migrated.returncode == 0, migrated.stderr
    return env


@pytest.fixture
def spawn_worker(worker_env: dict[str, str], tmp_path: Path) -> Iterator[Any]:
    started: list[WorkerProcess] = []

    def spawn(lease: float) -> WorkerProcess:
        process = WorkerProcess(
            None,
            "--actors",
            ACTORS,
            "--max-concurrency",
            "8",
            "--health-port",
            "0",
            "--lease",
            str(lease),
            "--heartbeat-interval",
            str(HEARTBEAT),
            "--poll-interval",
            "0.2",
            env=worker_env,
            log_path=tmp_path / f"worker{len(started)}.log",
        )
        started.append(process)
        process.wait_for_event("worker-started")
        return process

    try:
        yield spawn
    finally:
        for process in started:
            process.stop()


def restarts_metric(worker: WorkerProcess) -> float | None:
    port = worker.events("health-server-started")[0]["port"]
    status, text = http_get_sync("/metrics", port=port)
    assert status == 200
    return metric_value(text, RESTARTS)


def enqueue(client: Client, count: int, seconds: float, prefix: str) -> dict[str, Any]:
    """Half non-idempotent async, half idempotent sync jobs; key -> job id."""
    once = [((f"{prefix}{i:04d}", seconds), {}) for i in range(0, count, 2)]
    idem = [((f"{prefix}{i:04d}", seconds), {}) for i in range(1, count, 2)]
    ids = client.enqueue_many(actors.slow_once, once) + client.enqueue_many(
        actors.slow_idem_sync, idem
    )
    return {args[0]: job_id for (args, _), job_id in zip(once + idem, ids, strict=True)}


def wait_all_succeeded(client: Client, ids: dict[str, Any], timeout: float) -> dict[str, Any]:
    def finished() -> dict[str, Any] | None:
        try:
            stats = client.stats()
            if stats["queued"] or stats["running"]:
                return None
            return {key: client.get(job_id) for key, job_id in ids.items()}
        except StoreUnavailable:  # the test's own pool still holds pre-restart connections
            return None

    return wait_until(finished, timeout=timeout, interval=0.2, what="every job to finish")


def assert_each_ran_once(jobs: dict[str, Any], runs: Path) -> None:
    table = actors.side_table(runs)
    wrong = {
        key: (
            job.state,
            job.attempts,
            job.crash_count,
            table["start"][key],
            table["done"][key],
            (job.last_error or "")[:120],
        )
        for key, job in jobs.items()
        if (job.state, job.attempts, job.crash_count) != ("succeeded", 1, 0)
        or table["start"][key] != 1
        or table["done"][key] != 1
    }
    assert not wrong, (
        f"{len(wrong)} of {len(jobs)} jobs not succeeded exactly once "
        f"(state, attempts, crashes, starts, dones, last_error): "
        f"{dict(list(wrong.items())[:20])}"
    )


def test_postgres_restart_is_ridden_out_on_backoff_and_charges_nothing(
    cluster: Cluster, worker_env: dict[str, str], spawn_worker: Any
) -> None:
    """Down for longer than a store call waits for a connection (so each component fails
    more than once), but not past the lease."""
    runs = Path(worker_env[actors.RUNS_ENV])
    worker = spawn_worker(lease=OUTAGE + 20.0)
    assert restarts_metric(worker) == 0
    with Client(cluster.dsn, schema="taskq") as client:
        ids = enqueue(client, 300, 0.1, "r")
        wait_until(
            lambda: actors.side_table(runs)["done"].total() >= 60,
            timeout=60,
            what="a fifth of the jobs done before the restart",
        )
        since = len(worker.logs())

        cluster.stop()
        stopped_at = time.monotonic()
        worker.wait_for_event("store-unavailable")  # it noticed while the store is down
        # the outage itself is the scenario: longer than CHECKOUT_TIMEOUT, so every store
        # call in flight gives up at least once and is retried
        time.sleep(max(0.0, stopped_at + OUTAGE - time.monotonic()))
        assert worker.proc.poll() is None
        cluster.start()

        jobs = wait_all_succeeded(client, ids, timeout=90)
        assert client.stats()["running"] == 0
    assert worker.proc.poll() is None, "the worker exited during the outage"
    assert restarts_metric(worker) == 0, "consumers were restarted against a dead store"
    assert not worker.events("crash-loop-guard-tripped") and not worker.events("worker died")

    def parts_logged(event: str) -> set[str]:
        return {e["part"] for e in worker.logs()[since:] if e.get("event") == event}

    # a part that calls the store every few seconds (the backlog's lease, the pruner)
    # finds it back at its next call: each one that said "down" says "back" in time
    wait_until(
        lambda: parts_logged("store-recovered") >= parts_logged("store-unavailable"),
        timeout=30,
        what="every part that logged store-unavailable to log store-recovered",
    )
    lines = worker.logs()[since:]
    down = Counter(e["part"] for e in lines if e.get("event") == "store-unavailable")
    up = {e["part"]: e for e in lines if e.get("event") == "store-recovered"}
    assert down and set(down) <= COMPONENTS
    assert all(n == 1 for n in down.values()), f"the outage was logged per attempt: {down}"
    assert set(up) == set(down), f"not every component logged its recovery: {down} {up}"
    # the outage was really lived through (a call waiting out a pooled-connection timeout
    # counts as one attempt, so the number of attempts depends on timing; the time does not)
    assert max(e["down_for"] for e in up.values()) >= 1.0, f"no outage was seen: {up}"
    noisy = Counter(
        (e.get("event"), e.get("part"))
        for e in lines
        if e.get("level") in {"warning", "error", "critical"}
    )
    assert all(n == 1 for n in noisy.values()), f"some lines repeat per attempt: {noisy}"
    assert_each_ran_once(jobs, runs)
    worker.signal(signal.SIGTERM)
    assert worker.wait() == exit_codes.OK


def test_store_down_longer_than_the_lease_runs_no_job_twice(
    cluster: Cluster, worker_env: dict[str, str], spawn_worker: Any
) -> None:
    """Down for two leases while eight long jobs run. After the restart the worker's own
    sweeper must not take its leases for those of a dead worker: its heartbeat has its own
    connection pool, which may reconnect seconds after the sweeper's (each pool backs off
    on its own), and a rescue in that gap re-runs the idempotent jobs under the same worker
    (then poisons them when the re-run's lease lapses too) and marks the others
    dead/crashed while they run on to success."""
    runs = Path(worker_env[actors.RUNS_ENV])
    worker = spawn_worker(lease=LEASE)
    with Client(cluster.dsn, schema="taskq") as client:
        # eight jobs that run across the whole outage, and a queue behind them
        long_ids = enqueue(client, 8, LEASE + 4.0, "long")
        wait_until(
            lambda: actors.side_table(runs)["start"].total() == 8,
            timeout=30,
            what="the eight long jobs to start",
        )
        ids = {**long_ids, **enqueue(client, 100, 0.05, "q")}

        cluster.stop()
        stopped_at = time.monotonic()
        worker.wait_for_event("store-unavailable")
        # the outage itself is the scenario: the store stays down for two leases
        time.sleep(max(0.0, stopped_at + 2 * LEASE - time.monotonic()))
        assert worker.proc.poll() is None
        cluster.start()

        jobs = wait_all_succeeded(client, ids, timeout=90)
    assert worker.proc.poll() is None
    assert restarts_metric(worker) == 0
    assert_each_ran_once(jobs, runs)
    worker.signal(signal.SIGTERM)
    assert worker.wait() == exit_codes.OK


def test_worker_stderr_stays_json_lines_through_a_store_outage(
    cluster: Cluster, spawn_worker: Any
) -> None:
    """CONTRACT: with ``TASKQ_LOG_FORMAT=json`` the log is one JSON object per line, also
    while the store is away (the driver's pool has things to say then too)."""
    worker = spawn_worker(lease=30.0)
    cluster.stop()
    worker.wait_for_event("store-unavailable")
    cluster.start()
    wait_until(lambda: worker.events("store-recovered"), timeout=60, what="the recovery")
    not_json = [
        line for line in worker.log_path.read_text().splitlines() if not line.startswith("{")
    ]
    assert not_json == [], "lines on the worker's stderr that are not JSON:\n" + "\n".join(
        not_json[:10]
    )
    worker.signal(signal.SIGTERM)
    assert worker.wait() == exit_codes.OK


def test_the_sync_clients_kept_connections_ride_a_restart(
    cluster: Cluster, worker_env: dict[str, str]
) -> None:
    """``taskq.Client`` keeps its calling threads' synchronous connections between
    enqueues (store/postgres/here.py). Across a real restart: while the server is down an
    enqueue fails with one ``StoreUnavailable`` and writes nothing; once it is back, the
    kept connections (all dead) are replaced before anything is sent on them, so no
    enqueue fails, and the store holds exactly the jobs whose ids came back."""
    del worker_env  # migrated
    with Client(cluster.dsn, schema="taskq") as client:

        def burst(tag: str) -> list[Any]:
            def produce(n: int) -> list[Any]:
                ids = [client.enqueue(actors.slow_once, f"{tag}-{n}-{i}", 0.0) for i in range(5)]
                batch = [((f"{tag}-{n}-b{i}", 0.0), {}) for i in range(150)]  # one COPY
                return ids + client.enqueue_many(actors.slow_idem_sync, batch)

            with ThreadPoolExecutor(4) as pool:
                return [i for ids in pool.map(produce, range(4)) for i in ids]

        written = burst("before")
        cluster.stop()
        with pytest.raises(StoreUnavailable):
            client.enqueue(actors.slow_once, "while-down", 0.0)
        cluster.start()
        written += burst("after")
    with psycopg.connect(cluster.dsn) as conn:
        stored = [row[0] for row in conn.execute("SELECT id FROM taskq.jobs")]
    assert len(written) == 2 * 4 * 155
    assert sorted(stored) == sorted(written)
