"""``python -m benchmarks.fleet``: a fleet of real workers on one Postgres, through PgBouncer.

Issue 19 item 5. Builds its own Postgres cluster and a PgBouncer in transaction mode
(``servers.py``), starts ``--workgroups`` real workgroups of ``--children`` workers each
(``max_concurrency`` ``--concurrency``), under a role with ``CONNECTION LIMIT 40``, with
``TASKQ_DSN`` through PgBouncer and ``TASKQ_PG_DSN_DIRECT`` for the supervisors' one
LISTEN connection each; measures (``phases.py``) start-up, memory, the idle fleet's cost
to Postgres, the idle wake-up latency, a drain of ``--jobs`` jobs, and the same drain
with PgBouncer restarted halfway; then the same fleet with ``TASKQ_DSN`` direct (the
role's limit lifted) for the ratio. Writes ``benchmarks/results/fleet.json`` and the
generated section of docs/benchmarks.md (``--quick``: a small fleet, its own workdir,
no docs).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from taskq.store import create_store

from . import phases, report
from .processes import Fleet, memory_kib
from .servers import ROOT, SCHEMA, FleetServers

RESULTS = ROOT / "benchmarks" / "results" / "fleet.json"
DOC = ROOT / "docs" / "benchmarks.md"
ROLE_LIMIT = 40
#: what the logs are searched for: any of these is a connection problem or a lost job
EVENTS = (
    "store-unavailable",
    "store-recovered",
    "store-listen-failed",
    "worker-cannot-start",
    "workgroup-child-exited",
    "job-dead",
    "acks-not-written",
    "job-end-not-written",
    "listen-unavailable",
    "wake-relay-listen-failed",
    "wake-relay-lost",
)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.fleet", description=__doc__.split("\n")[0]
    )
    p.add_argument("--workgroups", type=int, default=4)
    p.add_argument("--children", type=int, default=25, help="workers per workgroup")
    p.add_argument("--concurrency", type=int, default=2, help="each worker's max_concurrency")
    p.add_argument(
        "--poll-interval", type=float, default=None, help="each worker's (default: its own, 1 s)"
    )
    p.add_argument("--jobs", type=int, default=20_000)
    p.add_argument("--pool-size", type=int, default=24, help="PgBouncer's default_pool_size")
    p.add_argument("--idle-seconds", type=float, default=30.0)
    p.add_argument("--wakeups", type=int, default=100, help="jobs sent one at a time")
    p.add_argument("--quick", action="store_true", help="2 x 5 workers, 2,000 jobs, no docs")
    p.add_argument("--workdir", type=Path, default=Path("/tmp/taskq-fleet-bench"))
    p.add_argument("--out", type=Path, default=None)
    p.add_argument("--no-docs", action="store_true")
    p.add_argument(
        "--modes", default="pooled,direct", help="which fleets: pooled (PgBouncer), direct"
    )
    ns = p.parse_args(argv)
    if ns.quick:
        ns.workgroups, ns.children, ns.jobs = 2, 5, 2_000
        ns.idle_seconds, ns.wakeups = 5.0, 20
    return ns


def fleet_env(servers: FleetServers, dsn: str, runs_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TASKQ_")}
    env.update(
        TASKQ_DSN=dsn,
        TASKQ_SCHEMA=SCHEMA,
        TASKQ_PG_DSN_DIRECT=servers.direct_dsn,
        TASKQ_LOG_FORMAT="json",
        FLEET_RUNS_DIR=str(runs_dir),
        PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")])),
    )
    return env


def memory(fleet: Fleet) -> dict[str, Any]:
    workers = [m for m in (memory_kib(p) for p in fleet.worker_pids()) if m is not None]
    supervisors = [m for m in (memory_kib(p) for p in fleet.supervisor_pids()) if m is not None]
    return {
        "worker_rss_mib_median": round(statistics.median(r for r, _ in workers) / 1024, 1),
        "worker_pss_mib_median": round(statistics.median(p for _, p in workers) / 1024, 1),
        "fleet_pss_mib": round(sum(p for _, p in workers + supervisors) / 1024),
        "supervisor_rss_mib_median": round(statistics.median(r for r, _ in supervisors) / 1024, 1),
    }


def run_mode(
    mode: str, servers: FleetServers, args: argparse.Namespace, workdir: Path
) -> dict[str, Any]:
    pooled = mode == "pooled"
    servers.set_role_limit(ROLE_LIMIT if pooled else -1)
    runs_dir = workdir / f"runs-{mode}"
    runs_dir.mkdir()
    fleet = Fleet(
        workdir / mode, args.workgroups, args.children, args.concurrency, args.poll_interval
    )
    env = fleet_env(servers, servers.pooled_dsn if pooled else servers.direct_dsn, runs_dir)
    connections = phases.Connections(servers.admin_dsn)
    connections.start()
    out: dict[str, Any] = {"dsn": "through PgBouncer" if pooled else "direct"}
    try:
        print(f"  {mode}: starting {fleet.size} workers", flush=True)
        out["startup_s"] = round(fleet.start(env, timeout=600), 1)
        time.sleep(5)  # the start-up's own transactions settle
        out["memory"] = memory(fleet)

        def costs() -> phases.Costs:
            return phases.Costs(
                servers.admin_dsn,
                servers.postmaster_pid(),
                servers.bouncer_pid() if pooled else None,
                fleet.worker_pids(),
                fleet.supervisor_pids(),
            )

        idle = costs()
        time.sleep(args.idle_seconds)
        out["idle"] = idle.done(servers.bouncer_pid())
        print(f"  {mode}: idle {out['idle']}", flush=True)
        out["wakeups"] = asyncio.run(phases.wakeups(servers.admin_dsn, args.wakeups, 0.1))
        print(f"  {mode}: wake-ups {out['wakeups']}", flush=True)
        out["drain"] = phases.drain(
            servers.admin_dsn,
            args.jobs,
            runs_dir,
            timeout=900,
            costs=costs,
            bouncer=servers.bouncer_pid,
        )
        print(f"  {mode}: drain {out['drain']}", flush=True)
        out["events_before_restart"] = fleet.event_counts(EVENTS)
        if pooled:
            assert servers.bouncer is not None
            out["drain_restart"] = phases.drain(
                servers.admin_dsn,
                args.jobs,
                runs_dir,
                timeout=900,
                restart_at=0.5,
                restart=servers.bouncer.restart,
                costs=costs,
                bouncer=servers.bouncer_pid,
            )
            print(f"  {mode}: drain with a PgBouncer restart {out['drain_restart']}", flush=True)
    finally:
        out["exit_codes"] = fleet.stop()
        out["connections"] = connections.stop()
        out["events"] = fleet.event_counts(EVENTS)
        out["too_many_connections"] = fleet.text_matches("too many connections")
    return out


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    workdir = args.workdir
    if workdir.exists():
        shutil.rmtree(workdir)
    workdir.mkdir(parents=True)
    out: dict[str, Any] = {
        "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": "python -m benchmarks.fleet " + " ".join(argv or sys.argv[1:]),
        "mode": "quick" if args.quick else "full",
        "params": {
            k: getattr(args, k)
            for k in (
                "workgroups",
                "children",
                "concurrency",
                "poll_interval",
                "jobs",
                "pool_size",
                "idle_seconds",
            )
        }
        | {"role_connection_limit": ROLE_LIMIT, "wakeups": args.wakeups},
        "machine": {"nproc": os.cpu_count(), "loadavg_before": os.getloadavg()},
    }
    workers = args.workgroups * args.children
    servers = FleetServers(
        workdir, role_limit=ROLE_LIMIT, pool_size=args.pool_size, max_connections=7 * workers + 50
    )
    print(f"taskq fleet benchmark: {workers} workers in {args.workgroups} workgroups", flush=True)
    try:
        servers.start()
        asyncio.run(_migrate(servers.direct_dsn))
        out["postgres"] = servers.settings()
        out["pgbouncer"] = {"pool_mode": "transaction", "default_pool_size": args.pool_size}
        for mode in [m.strip() for m in args.modes.split(",") if m.strip()]:
            out[mode] = run_mode(mode, servers, args, workdir)
            os.sync()
    finally:
        servers.stop()
    out["machine"]["loadavg_after"] = os.getloadavg()
    out["finished_at"] = datetime.now(UTC).isoformat(timespec="seconds")
    out["verdicts"] = report.verdicts(out)
    path = args.out or (workdir / "fleet.json" if args.quick else RESULTS)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=1, sort_keys=True, default=str) + "\n")
    print(report.markdown(out))
    print(f"results: {path}")
    if not args.quick and not args.no_docs:
        print(report.update_docs(DOC, report.markdown(out)))
    return 0 if args.quick or all(v["met"] for v in out["verdicts"]) else 1


async def _migrate(dsn: str) -> None:
    store = create_store(dsn, SCHEMA)
    await store.open()
    try:
        await store.migrate()
    finally:
        await store.close()


if __name__ == "__main__":
    sys.exit(main())
