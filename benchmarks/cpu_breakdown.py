"""``python -m benchmarks.cpu_breakdown [--n 3000] [--work-ms 2] [--worker-args ...]``:
where a CPU-bound job's time goes. One ``taskq worker`` drains ``n`` queued ``cpu_bound``
jobs (``peers/taskq_cpu_actors.py``'s ``burn``); the driver reads, before and after the
drain, from ``/proc`` and Postgres:

* CPU (user + system) of the worker process, of its pool processes, and of the Postgres
  backends serving the bench database, per job;
* context switches of every thread of the worker (voluntary: it waited, on the loop's
  selector, a pipe, a lock...), per job: the thread hops;
* transactions committed in the bench database (``pg_stat_database.xact_commit``) per
  job: the claim and complete round trips (and the heartbeat's, a handful).

Needs TASKQ_BENCH_PG_DSN (as ``make bench``). Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import time
from pathlib import Path

from . import pgadmin

HERE = Path(__file__).resolve().parent
PEERS = HERE / "peers"
TICK = os.sysconf("SC_CLK_TCK")


def cpu_s(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICK  # utime, stime


def children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            found += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue
    return found


def descendants(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        kids = children(todo.pop())
        out += kids
        todo += kids
    return out


def switches(pid: int) -> tuple[int, int]:
    voluntary = involuntary = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            for line in (task / "status").read_text().splitlines():
                if line.startswith("voluntary_ctxt_switches"):
                    voluntary += int(line.split()[1])
                elif line.startswith("nonvoluntary_ctxt_switches"):
                    involuntary += int(line.split()[1])
        except OSError:
            continue
    return voluntary, involuntary


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.cpu_breakdown")
    p.add_argument("--n", type=int, default=3000)
    p.add_argument("--work-ms", type=float, default=2.0)
    p.add_argument("--worker-args", default="", help="more `taskq worker` flags")
    p.add_argument("--db", default="bench_cpu_breakdown")
    args = p.parse_args(argv)
    admin = os.environ.get("TASKQ_BENCH_PG_DSN")
    if not admin:
        print("cpu_breakdown: TASKQ_BENCH_PG_DSN is not set", file=sys.stderr)
        return 2
    dsn = pgadmin.recreate(admin, args.db)
    sys.path.insert(0, str(PEERS))
    import _common
    import _cpu
    import psycopg
    import taskq_bench
    import taskq_cpu

    workdir = Path(f"/tmp/{args.db}")
    workdir.mkdir(parents=True, exist_ok=True)
    ns = argparse.Namespace(dsn=dsn, path=str(workdir), concurrency=0)
    peer = taskq_bench.TaskqPeer(ns)
    admin_conn = psycopg.connect(admin, autocommit=True)

    def xacts() -> int:
        row = admin_conn.execute(
            "SELECT xact_commit FROM pg_stat_database WHERE datname = %s", (args.db,)
        ).fetchone()
        return int(row[0]) if row else 0

    def backends() -> list[int]:
        rows = admin_conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
            (args.db,),
        ).fetchall()
        return [int(r[0]) for r in rows]

    try:
        iterations = _cpu.iterations_for(args.work_ms)
        keys = [str(i) for i in range(args.n)]
        for start in range(0, len(keys), 1000):
            peer.runner.run(
                peer.client.enqueue_many(
                    taskq_cpu.taskq_cpu_actors.burn,
                    [((k, iterations), {}) for k in keys[start : start + 1000]],
                )
            )
        events = workdir / "drain.events"
        events.unlink(missing_ok=True)
        lines = _cpu.DoneLines(events)
        env = {_common.EVENTS_ENV: str(events), **peer.worker_env()}
        cmd = taskq_cpu.worker_cmd(*shlex.split(args.worker_args))
        spawned = time.time()
        worker = _common.spawn(cmd, env, workdir / "worker.log")
        try:
            _common.wait_for(lambda: lines.poll() > 0 or worker.poll() is not None, 60, "a job")
            pool = descendants(worker.pid)
            pg = backends()
            before = (
                cpu_s(worker.pid),
                sum(cpu_s(c) for c in pool),
                sum(cpu_s(b) for b in pg),
                switches(worker.pid),
                xacts(),
                lines.poll(),
                time.time(),
            )
            seen: dict[int, float] = {}  # pool pid -> its last CPU reading (they recycle)

            def sample() -> bool:
                for pid in descendants(worker.pid):
                    seen[pid] = max(seen.get(pid, 0.0), cpu_s(pid))
                return lines.poll() >= args.n

            pool_before = {pid: cpu_s(pid) for pid in pool}
            _common.wait_for(sample, 600, "the drain", 0.02)
            _common.wait_for(lambda: peer.pending() == 0, 60, "the queue to empty", 0.01)
            pg_after = sum(cpu_s(b) for b in pg)
            after = (
                cpu_s(worker.pid),
                sum(seen.values()) - sum(pool_before.values()) + sum(before[1:2]),
                pg_after,
                switches(worker.pid),
                xacts(),
                lines.poll(),
                time.time(),
            )
        finally:
            _common.stop(worker)
        jobs = after[5] - before[5]
        wall = after[6] - before[6]
        per_job = 1000.0 / jobs
        summary = _cpu.drain_summary(args.n, spawned, lines.times, after[6])
        print(
            json.dumps(
                {
                    "worker": " ".join(cmd[2:]),
                    "jobs_measured": jobs,
                    "jobs_per_s_measured": jobs / wall,
                    "jobs_per_s_with_startup": summary["jobs_per_s_with_startup"],
                    "startup_ms": summary["startup_ms"],
                    "jobs_per_s_after_1s": summary["jobs_per_s_after_1s"],
                    "job_body_cpu_ms": sum(lines.cpu_us) / len(lines.cpu_us) / 1000.0,
                    "worker_cpu_ms_per_job": (after[0] - before[0]) * per_job,
                    "pool_cpu_ms_per_job": (after[1] - before[1]) * per_job,
                    "postgres_cpu_ms_per_job": (after[2] - before[2]) * per_job,
                    "worker_voluntary_switches_per_job": (after[3][0] - before[3][0]) / jobs,
                    "worker_involuntary_switches_per_job": (after[3][1] - before[3][1]) / jobs,
                    "transactions_per_job": (after[4] - before[4]) / jobs,
                    "pool_processes_seen": len(seen),
                    "load": os.getloadavg()[0],
                },
                indent=1,
            )
        )
    finally:
        peer.close()
        admin_conn.close()
        pgadmin.drop(admin, args.db)
    return 0


if __name__ == "__main__":
    sys.exit(main())
