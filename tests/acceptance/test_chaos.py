"""The project's promise, end to end: workers die, and nothing is lost and nothing is silent.

A real ``taskq workgroup start`` runs three real ``taskq worker`` children (health checks
on, short backoffs) over a few hundred jobs of a mix of actors: async, sync and
cpu_bound; idempotent and not; some that fail by exception. Every run any process makes
is written to a side table (``tests.support.chaos_actors``), so a double run or a lost run is
visible whatever the store claims. While the jobs run, a chaos loop with a fixed seed
SIGKILLs worker children, SIGKILLs CPU-pool processes (found in ``/proc`` as the
workers' grandchildren: worker -> forkserver -> pool process) and SIGSTOPs one worker,
which the health check must replace as unhealthy. Then the queue drains, the supervisor
gets SIGTERM, and every job and every kill is accounted for.

Pacing between kills is a bounded pause; every wait for an effect polls the store or the
supervisor's log with a deadline.
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

from taskq import Client
from tests.support import chaos_actors as actors
from tests.support.helpers import wait_until
from tests.support.workgroup_harness import Workgroup, pid_alive, run_cli, write_config

pytestmark = pytest.mark.slow

SEED = 20261202
WORKERS = ("alpha", "beta", "gamma")
STARTUP_GRACE = 6.0
CONFIG = """
[supervisor]
backoff_initial = 0.05
backoff_max = 0.2
burst_limit = 30
shutdown_grace = 20.0
http_port = 0

[defaults]
poll_interval = 0.2
max_concurrency = 3
"""
WORKER = f"""
[[workers]]
name = "{{name}}"
[workers.health]
enabled = true
check_interval = 0.25
stale_after = 1.5
startup_grace = {STARTUP_GRACE}
"""

#: (actor, weight, (min seconds, max seconds)) of the job mix
MIX = (
    (actors.idem_async, 4, (0.1, 0.6)),
    (actors.once_async, 4, (0.1, 0.6)),
    (actors.idem_sync, 3, (0.1, 0.5)),
    (actors.once_sync, 3, (0.1, 0.5)),
    (actors.idem_cpu, 1, (0.1, 0.25)),
    (actors.once_cpu, 1, (0.1, 0.25)),
    (actors.always_fails, 1, (0.01, 0.05)),
    (actors.fails_once, 1, (0.01, 0.05)),
)
FIRST_WAVE = 60
WAVE = 40
TOP_UP = 20  # while waiting for a busy target and nothing is queued
WORKER_KILLS = 4
BUSY_POOL_WAIT = 10.0  # seconds to look for a pool process that is running a job
POOL_KILLS = 3  # fewer than the pool breaker's 5 breaks a minute, even all in one worker
#: how a crash names its cause in last_error: the signal or the exit code
CAUSE = re.compile(r"killed by SIG[A-Z0-9]+|exited with code -?\d+")


@dataclass(frozen=True)
class Kill:
    kind: str  # "worker" (SIGKILL) | "stop" (SIGSTOP, the health check must act) | "pool"
    worker: str
    pid: int


# -- /proc ----------------------------------------------------------------------------


def proc_table() -> dict[int, tuple[str, int, int]]:
    """pid -> (state, ppid, session) of every process now."""
    table = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        table[int(entry)] = (fields[0], int(fields[1]), int(fields[3]))
    return table


def pool_processes(worker_pid: int) -> set[int]:
    """The worker's grandchildren: the processes its forkserver forked for the CPU pool."""
    table = proc_table()
    children = {pid for pid, (_s, ppid, _sid) in table.items() if ppid == worker_pid}
    return {pid for pid, (state, ppid, _sid) in table.items() if ppid in children and state != "Z"}


def session_members(session: int) -> set[int]:
    return {
        pid for pid, (state, _ppid, sid) in proc_table().items() if sid == session and state != "Z"
    }


# -- the run --------------------------------------------------------------------------


class Chaos:
    """One seeded chaos run against one workgroup."""

    def __init__(self, wg: Workgroup, client: Client, rng: random.Random) -> None:
        self.wg, self.client, self.rng = wg, client, rng
        self.jobs: dict[str, tuple[Any, UUID]] = {}  # key -> (actor, job id)
        self.kills: list[Kill] = []
        self.stopped: int | None = None

    def enqueue_wave(self, size: int) -> None:
        weights = [w for _a, w, _s in MIX]
        by_actor: dict[str, list[tuple[tuple[Any, ...], dict[str, Any]]]] = {}
        picked = self.rng.choices(MIX, weights=weights, k=size)
        for index, (actor, _weight, (low, high)) in enumerate(picked, start=len(self.jobs)):
            key = f"j{index:04d}"
            by_actor.setdefault(actor.name, []).append(
                ((key, round(self.rng.uniform(low, high), 3)), {})
            )
        for name, items in by_actor.items():
            ids = self.client.enqueue_many(actors.registry.get(name), items)
            for (args, _kwargs), job_id in zip(items, ids, strict=True):
                self.jobs[args[0]] = (name, job_id)

    # -- who can be hit ---------------------------------------------------------------

    def living_workers(self, *, busy: bool = False) -> list[dict[str, Any]]:
        """Children running a worker that has started (row registered, handlers in); with
        ``busy``, only those the store shows running a job right now."""
        started = {
            (e["worker"], e["pid"]): e["worker_id"] for e in self.wg.events("worker-started")
        }
        running = {str(j.worker_id) for j in self.client.list(state="running", limit=1000)}
        return [
            c
            for c in self.wg.status()["children"]
            if c["state"] == "running"
            and c["pid"] is not None
            and c["pid"] != self.stopped
            and (c["name"], c["pid"]) in started
            and pid_alive(c["pid"])
            and (not busy or started[(c["name"], c["pid"])] in running)
        ]

    def _pick(self, condition: Any, what: str) -> Any:
        """Poll for a target; keep work queued meanwhile, so that "busy" can come true."""

        def found() -> Any:
            if self.client.stats()["queued"] == 0:
                self.enqueue_wave(TOP_UP)
            return condition()

        try:
            return wait_until(found, timeout=30, interval=0.1, what=what)
        except AssertionError as exc:
            raise AssertionError(
                f"{exc}\nkills so far: {self.kills}\nstatus: "
                f"{json.dumps(self.wg.status()['children'])}"
            ) from None

    # -- the blows ----------------------------------------------------------------------

    def kill_worker(self) -> None:
        child = self._pick(
            lambda: self.rng.choice(self.living_workers(busy=True) or [None]),
            "a worker child running a job to SIGKILL",
        )
        os.kill(child["pid"], signal.SIGKILL)
        self.kills.append(Kill("worker", child["name"], child["pid"]))
        self.wg.wait_event("workgroup-child-exited", child_pid=child["pid"])

    def stop_worker(self) -> None:
        """SIGSTOP a child that is past its health-check startup grace."""

        def candidate() -> dict[str, Any] | None:
            old = [
                c
                for c in self.living_workers(busy=True)
                if (c["uptime_seconds"] or 0) > STARTUP_GRACE + 0.5
            ]
            return self.rng.choice(old) if old else None

        child = self._pick(candidate, "a busy worker child past its startup grace to SIGSTOP")
        os.kill(child["pid"], signal.SIGSTOP)
        self.stopped = child["pid"]
        self.kills.append(Kill("stop", child["name"], child["pid"]))

    def kill_pool_process(self) -> None:
        """SIGKILL a pool process, one running a job (state R: it spins) when there is one
        within a few seconds, else an idle one."""
        idle_ok_at = time.monotonic() + BUSY_POOL_WAIT

        def candidate() -> tuple[str, int] | None:
            ready = {e["pid"] for e in self.wg.events("process-pool-process-ready")}
            found = [
                (c["name"], pid)
                for c in self.living_workers()
                for pid in sorted(pool_processes(c["pid"]) & ready)
            ]
            table = proc_table()
            busy = [(name, pid) for name, pid in found if table.get(pid, ("?",))[0] == "R"]
            if busy or time.monotonic() > idle_ok_at:
                return self.rng.choice(busy or found) if busy or found else None
            return None

        worker, pid = self._pick(candidate, "a ready CPU-pool process to SIGKILL")
        os.kill(pid, signal.SIGKILL)
        self.kills.append(Kill("pool", worker, pid))

        def noticed() -> bool:  # a busy process fails its job; an idle one is just replaced
            return bool(
                self.wg.events("process_pool_broken", worker=worker, pid=pid)
                or self.wg.events("process-pool-process-lost", worker=worker, pid=pid)
                or not self._worker_alive(worker)
            )

        wait_until(noticed, timeout=30, what=f"worker {worker} to notice pool process {pid} die")

    def _worker_alive(self, name: str) -> bool:
        return any(c["name"] == name for c in self.living_workers())

    def run(self) -> None:
        blows = ["worker"] * WORKER_KILLS + ["pool"] * POOL_KILLS
        self.rng.shuffle(blows)
        blows.insert(2, "stop")  # at least one child has not been killed by then
        for blow in blows:
            self.enqueue_wave(WAVE)
            {"worker": self.kill_worker, "pool": self.kill_pool_process, "stop": self.stop_worker}[
                blow
            ]()
            time.sleep(self.rng.uniform(0.3, 0.8))  # pacing between blows, not a wait


@pytest.fixture
def workgroups() -> Iterator[list[Workgroup]]:
    started: list[Workgroup] = []
    yield started
    for wg in started:
        wg.cleanup()


def test_workers_die_and_nothing_is_lost_and_nothing_is_silent(
    target, tmp_path: Path, workgroups
) -> None:
    runs = tmp_path / "runs.log"
    env = {**target.env, actors.RUNS_ENV: str(runs)}
    assert run_cli("migrate", env=env).returncode == 0
    config = write_config(
        tmp_path / "wg.toml",
        CONFIG + "".join(WORKER.format(name=n) for n in WORKERS),
        actors="tests.support.chaos_actors:registry",
    )
    wg = Workgroup(config, env)
    workgroups.append(wg)
    with Client(target.dsn, schema=target.schema) as client:
        chaos = Chaos(wg, client, random.Random(SEED))
        chaos.enqueue_wave(FIRST_WAVE)
        wg.wait_event("worker-started", count=len(WORKERS))
        chaos.run()
        assert chaos.stopped is not None
        wg.wait_event("workgroup-child-unhealthy", child_pid=chaos.stopped)

        def drained() -> dict[str, int] | None:
            stats = client.stats()
            return stats if stats["queued"] == stats["running"] == 0 else None

        wait_until(drained, timeout=60, interval=0.2, what="no job queued or running")
        jobs = {key: client.get(job_id) for key, (_actor, job_id) in chaos.jobs.items()}
        stats = client.stats()

    # the workgroup stops cleanly and leaves nothing behind
    assert wg.stop(timeout=60) == 0
    assert session_members(wg.proc.pid) == set(), "processes of the workgroup outlived it"
    assert not any(pid_alive(k.pid) for k in chaos.kills)
    assert not any(pid_alive(pid) for pid in wg.child_pids())

    table = actors.side_table(runs)
    check_every_job(jobs, table)
    assert stats["succeeded"] + stats["dead"] == len(jobs) >= FIRST_WAVE + 8 * WAVE
    assert sum(j.crash_count for j in jobs.values()) > 0, "the kills hit no running job"
    check_every_kill_was_seen(wg, chaos.kills, {j.id: j for j in jobs.values()})


def check_every_job(jobs: dict[str, Any], table: dict[str, Any]) -> None:
    problems = []
    for key, job in jobs.items():
        starts, dones = table["start"][key], table["done"][key]
        facts = (
            f"{key} {job.actor} state={job.state}/{job.dead_reason} attempts={job.attempts}"
            f" crashes={job.crash_count} starts={starts} dones={dones} "
            f"last_error={(job.last_error or '')[:160]!r}"
        )
        ok = job.state == "succeeded" or (
            job.state == "dead" and job.dead_reason in {"failed", "poison", "crashed"}
        )
        ok = ok and (job.dead_reason != "crashed" or not job.idempotent)
        ok = ok and (job.dead_reason != "poison" or job.crash_count >= job.max_crashes)
        # a run the store does not know about never happened; attempts bound the re-runs
        ok = ok and starts <= job.attempts <= job.max_attempts + job.crash_count
        ok = ok and (job.state != "succeeded" or dones >= 1)  # succeeded means it ran
        if not job.idempotent and job.actor not in actors.RAISING:
            ok = ok and starts <= 1  # never re-run
            ok = ok and (job.state != "succeeded" or starts == dones == 1)
        if job.dead_reason == "failed":
            ok = ok and job.actor in actors.RAISING and "refused on purpose" in job.last_error
        if job.crash_count and (
            job.dead_reason in {"crashed", "poison"} or job.actor not in actors.RAISING
        ):
            ok = ok and CAUSE.search(job.last_error or "") is not None  # the cause is named
        if not ok:
            problems.append(facts)
    assert not problems, f"{len(problems)} jobs break the rules:\n" + "\n".join(problems[:30])


def check_every_kill_was_seen(wg: Workgroup, kills: list[Kill], jobs: dict[UUID, Any]) -> None:
    lines = wg.snapshot()
    for kill in kills:
        if kill.kind == "pool":
            noticed = [
                line
                for line in lines
                if line.get("event") in {"process_pool_broken", "process-pool-process-lost"}
                and line.get("pid") == kill.pid
                and line.get("worker") == kill.worker
            ]
            assert noticed, f"no worker line about the death of pool process {kill}"
            for line in noticed:  # a busy process: its job, and only it, was charged a crash
                if line["event"] == "process_pool_broken":
                    job = jobs[UUID(line["job"])]
                    assert job.crash_count >= 1 and "killed by SIGKILL" in (job.last_error or "")
            continue
        exited = [
            i
            for i, line in enumerate(lines)
            if line.get("event") == "workgroup-child-exited" and line.get("child_pid") == kill.pid
        ]
        assert exited, f"the supervisor never saw {kill} exit"
        restart = next(
            (
                line
                for line in lines[exited[0] :]
                if line.get("event") == "workgroup.restart_scheduled"
                and line.get("worker") == kill.worker
            ),
            None,
        )
        assert restart is not None, f"no workgroup.restart_scheduled after {kill}"
        assert restart["reason"] == ("unhealthy" if kill.kind == "stop" else "child_exit")
        assert "killed by SIGKILL" in restart["exit_cause"], json.dumps(restart)
        if kill.kind == "stop":
            assert "heartbeat stale" in restart["exit_cause"], json.dumps(restart)
        rescued = [
            line
            for line in lines
            if line.get("event") == "workgroup-jobs-rescued" and line.get("child_pid") == kill.pid
        ]
        assert rescued, f"the supervisor did not rescue the jobs of {kill} at once"
    assert not [line for line in lines if line.get("event") == "workgroup-burst-limit-exceeded"]


def test_a_clean_stop_with_health_checks_on_calls_no_child_unhealthy(
    target, tmp_path: Path, workgroups
) -> None:
    """Nothing falsely loud either: a worker that stops on the supervisor's SIGTERM removes
    its row just before it exits; the health check must not take that for a dead child."""
    env = {**target.env, actors.RUNS_ENV: str(tmp_path / "runs.log")}
    assert run_cli("migrate", env=env).returncode == 0
    # a startup grace of 3 s, the shortest `workgroup validate` accepts without a warning:
    # three children importing at once on two cores can take more than 1 s to register
    grace = 3.0
    health = (
        "[workers.health]\nenabled = true\ncheck_interval = 0.02\nstale_after = 1.5\n"
        f"startup_grace = {grace}\n"
    )
    config = write_config(
        tmp_path / "wg.toml",
        "[supervisor]\nshutdown_grace = 20.0\nhttp_port = 0\n"
        + "".join(f'[[workers]]\nname = "{n}"\n{health}' for n in WORKERS),
        actors="tests.support.workgroup_actors:registry",
    )
    wg = Workgroup(config, env)
    workgroups.append(wg)
    wg.wait_event("worker-started", count=len(WORKERS))

    def probing() -> bool:  # every child is past its startup grace: its health is checked
        return all((c["uptime_seconds"] or 0) > grace + 0.5 for c in wg.status()["children"])

    wait_until(probing, what="every child past its health-check startup grace")
    assert wg.stop(timeout=60) == 0
    assert wg.events("workgroup-child-unhealthy") == []
    assert wg.events("workgroup.restart_scheduled") == []
