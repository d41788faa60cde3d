"""Worker start-up: from spawning a worker process to its first job body, one job queued.

    python -m benchmarks.startup --pg postgresql://root@127.0.0.1:5432/test --sqlite \\
        --pgqueuer --rounds 7
    python -m benchmarks.startup --pg DSN --tree before=/tmp/before/src --rounds 7

Each *arm* is one way of starting a worker: ``taskq-pg`` and ``taskq-sqlite`` run the real
``python -m taskq worker --actors startup_taskq:registry`` (``benchmarks/peers/``), once
per ``--tree NAME=SRC`` given (that ``src`` first on ``PYTHONPATH``; without ``--tree``
the installed taskq); ``pgqueuer`` runs ``peers/startup_pgqueuer.py worker`` in
``benchmarks/.venvs/pgqueuer`` (asyncpg, uvloop, ``QueueManager.run()`` defaults, as
``pgqueuer_bench.py``). A round queues one job for every arm, then starts each arm's
worker in turn (the order rotates every round) and times:

* ``wall_ms``: spawn -> first job body (``time.time()`` in both processes);
* ``cpu_ms``: the worker process's CPU time (user + system, all threads) when the body
  ran, which a loaded machine moves far less than the wall time;
* ``imports_ms`` (only with ``--importtime``, in separate runs: the flag itself costs
  time): the sum of ``-X importtime``'s self times of the modules loaded by then;
* ``instructions_m`` (only with ``--callgrind``, in separate runs): millions of
  instructions the process ran from its start to the first body, counted by valgrind's
  callgrind (the body then exits the process): independent of the machine's load;
* ``ready_ms`` (taskq): spawn -> the ``worker-started`` log line, so ``wall - ready`` is the
  time from the parts being up to the first body (the first claim's round trip).

Before the first round every measured tree is byte-compiled (``compileall``): an
installed wheel is, and the peers' site-packages are, but an editable install under
``PYTHONDONTWRITEBYTECODE=1`` (this machine's environment) would recompile taskq's
modules at every start (~100 ms of CPU here), a cost no user pays.

Prints one line per run and, per arm, the medians; with two or more arms the median of
the per-round ratios of each arm to the first one. ``--json PATH`` writes every run.
Databases: ``<prefix>taskq`` and ``<prefix>pgqueuer`` on the server of ``--pg``, created
fresh (default prefix ``bench_startup_``); SQLite files under ``--workdir``. Not part of
the test suite: speed is measured, never asserted in tests.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from . import pgadmin, venvs

HERE = Path(__file__).resolve().parent
PEERS = HERE / "peers"
SCHEMA = "startup"
PGQUEUER_VENV = HERE / ".venvs" / "pgqueuer"


@dataclass
class Arm:
    name: str
    cmd: list[str]
    env: dict[str, str]
    enqueue: list[str] | None = None  # a command that queues one job (else taskq's client)
    dsn: str = ""
    runs: list[dict[str, Any]] = field(default_factory=list)


def taskq_arm(name: str, dsn: str, src: str) -> Arm:
    path = [str(PEERS)] + ([src] if src else [])
    env = {
        "TASKQ_DSN": dsn,
        "TASKQ_SCHEMA": SCHEMA,
        "TASKQ_LOG_FORMAT": "json",
        "PYTHONPATH": os.pathsep.join(path),
    }
    cmd = [sys.executable, "-m", "taskq", "worker", "--actors", "startup_taskq:registry"]
    return Arm(name, cmd, env, dsn=dsn)


def pgqueuer_arm(dsn: str) -> Arm:
    python = str(PGQUEUER_VENV / "bin" / "python")
    script = str(PEERS / "startup_pgqueuer.py")
    return Arm(
        "pgqueuer", [python, script, "worker", dsn], {}, enqueue=[python, script, "enqueue", dsn]
    )


async def _enqueue_taskq(dsn: str, migrate: bool) -> None:
    import taskq  # the driver's own taskq: the schema is the same for every tree measured

    sys.path.insert(0, str(PEERS))
    import startup_taskq

    async with taskq.AsyncClient(dsn, schema=SCHEMA) as client:
        if migrate:
            await client.store.migrate()
        await client.enqueue(startup_taskq.first)


def byte_compile(src: str) -> None:
    """Bytecode for the taskq package in ``src`` (the installed one when empty) and the
    peer scripts' helpers, as an install has (``venvs.byte_compile``)."""
    venvs.byte_compile(PEERS, *([Path(src) / "taskq"] if src else []))


def enqueue(arm: Arm, migrate: bool = False) -> None:
    if arm.enqueue is not None:
        subprocess.run(arm.enqueue, check=True, capture_output=True)
    else:
        asyncio.run(_enqueue_taskq(arm.dsn, migrate))


def parse_importtime(stderr: str, loaded: set[str]) -> float:
    """Milliseconds of import (self times) of the modules in ``loaded``."""
    total = 0
    for line in stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        self_us, _, name = line[len("import time:") :].split("|")
        if name.strip() in loaded:
            total += int(self_us)
    return total / 1000.0


def worker_started(log: str) -> float | None:
    for line in log.splitlines():
        if '"worker-started"' in line:
            event = json.loads(line)
            return datetime.fromisoformat(event["timestamp"]).timestamp()
    return None


def instructions(valgrind_log: Path) -> float:
    """Millions of instructions callgrind counted (its ``Collected :`` line)."""
    for line in valgrind_log.read_text().splitlines():
        if "Collected :" in line:
            return int(line.rsplit(":", 1)[1]) / 1e6
    raise RuntimeError(f"no instruction count in {valgrind_log}")


def run_once(
    arm: Arm, workdir: Path, importtime: bool, timeout: float, callgrind: bool = False
) -> dict[str, Any]:
    record = workdir / f"{arm.name}.record"
    errlog = workdir / f"{arm.name}.stderr"
    vglog = workdir / f"{arm.name}.valgrind"
    record.unlink(missing_ok=True)
    env = {**os.environ, **arm.env, "STARTUP_RECORD": str(record)}
    cmd = arm.cmd
    if importtime:
        env["PYTHONPROFILEIMPORTTIME"] = "1"
    if callgrind:
        env["STARTUP_EXIT"] = "1"
        cmd = [
            "valgrind",
            "--tool=callgrind",
            "--callgrind-out-file=/dev/null",
            f"--log-file={vglog}",
            *cmd,
        ]
    with errlog.open("wb") as err:
        spawned = time.time()
        proc = subprocess.Popen(
            cmd, env=env, stdin=subprocess.DEVNULL, stdout=err, stderr=err, cwd=workdir
        )
        ran = False
        try:
            deadline = time.monotonic() + timeout
            while not (record.exists() and record.read_text().endswith("\n")):
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(
                        f"{arm.name}: no job ran (exit {proc.returncode}): "
                        + errlog.read_text(errors="replace")[-2000:]
                    )
                time.sleep(0.001)
            ran = True
        finally:
            if not (callgrind and ran):  # under callgrind the body exits the process
                proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    body = json.loads(record.read_text().splitlines()[0])
    stderr = errlog.read_text(errors="replace")
    result: dict[str, Any] = {
        "arm": arm.name,
        "wall_ms": (body["t"] - spawned) * 1000.0,
        "cpu_ms": body["cpu"] * 1000.0,
        "maxrss_kib": body["maxrss_kib"],
        "modules": len(body["modules"]),
        "importtime": importtime,
    }
    started = worker_started(stderr)
    if started is not None:
        result["ready_ms"] = (started - spawned) * 1000.0
    if importtime:
        result["imports_ms"] = parse_importtime(stderr, set(body["modules"]))
    if callgrind:
        result["instructions_m"] = instructions(vglog)
    return result


UNITS = {"wall_ms": "ms", "cpu_ms": "ms", "ready_ms": "ms", "imports_ms": "ms"}


def describe(result: dict[str, Any]) -> str:
    parts = [
        f"{key.split('_')[0]} {result[key]:7.1f} {unit}"
        for key, unit in (*UNITS.items(), ("instructions_m", "M"))
        if key in result
    ]
    parts.append(f"modules {result['modules']}  rss {result['maxrss_kib'] / 1024:.1f} MiB")
    return "  ".join(parts)


def summary(arms: list[Arm], key: str, ratios: list[tuple[str, str]]) -> list[str]:
    """Each arm's median of ``key``; then, for each (numerator, denominator) pair of arm
    names, the median of the per-round ratios."""
    lines = []
    for arm in arms:
        values = [r[key] for r in arm.runs if key in r]
        if values:
            lines.append(
                f"  {arm.name:<22} {key:<14} median {statistics.median(values):8.1f}"
                f"   [{', '.join(f'{v:.0f}' for v in values)}]"
            )
    by_name = {a.name: a for a in arms}
    for num, den in ratios:
        if num not in by_name or den not in by_name:
            continue
        pairs = [
            a[key] / b[key]
            for a, b in zip(by_name[num].runs, by_name[den].runs, strict=True)
            if key in a and key in b
        ]
        if pairs:
            lines.append(
                f"  {num + ' / ' + den:<37} {statistics.median(pairs):.2f}x"
                f" ({', '.join(f'{r:.2f}' for r in pairs)})"
            )
    return lines


def default_ratios(arms: list[Arm]) -> list[tuple[str, str]]:
    pairs = []
    for store in ("-pg", "-sqlite"):
        named = [a.name for a in arms if a.name.endswith(store)]
        pairs += [(n, named[0]) for n in named[1:]]
        if store == "-pg" and any(a.name == "pgqueuer" for a in arms):
            pairs += [(n, "pgqueuer") for n in named]
    return pairs


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--pg", default="", help="admin DSN of a Postgres server (an existing db)")
    p.add_argument("--sqlite", action="store_true", help="also the SQLite store")
    p.add_argument("--pgqueuer", action="store_true", help="also PgQueuer (needs --pg)")
    p.add_argument("--tree", action="append", default=[], metavar="NAME=SRC")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--importtime", action="store_true", help="runs with -X importtime")
    p.add_argument("--callgrind", action="store_true", help="runs under valgrind (slow)")
    p.add_argument(
        "--no-compile",
        action="store_true",
        help="do not byte-compile the trees first (to measure what compiling at start costs)",
    )
    p.add_argument("--db-prefix", default="bench_startup_")
    p.add_argument("--workdir", default="/tmp/startup-bench")
    p.add_argument("--timeout", type=float, default=120.0)
    p.add_argument(
        "--ratio",
        action="append",
        default=[],
        metavar="A/B",
        help="print the median per-round ratio of arm A to arm B (default: each arm to "
        "the first arm of its store, and each Postgres arm to pgqueuer)",
    )
    p.add_argument("--json", default="")
    args = p.parse_args()
    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    trees = [t.partition("=")[::2] for t in args.tree] or [("taskq", "")]
    for _, src in trees:
        if not args.no_compile:
            byte_compile(src)
    arms: list[Arm] = []
    if args.pg:
        dsn = pgadmin.recreate(args.pg, args.db_prefix + "taskq")
        for name, src in trees:
            arms.append(taskq_arm(f"{name}-pg", dsn, src))
    if args.sqlite:
        dsn = f"sqlite:///{workdir / 'startup.sqlite3'}"
        (workdir / "startup.sqlite3").unlink(missing_ok=True)
        for name, src in trees:
            arms.append(taskq_arm(f"{name}-sqlite", dsn, src))
    if args.pgqueuer:
        arms.append(pgqueuer_arm(pgadmin.recreate(args.pg, args.db_prefix + "pgqueuer")))
    if not arms:
        p.error("nothing to run: give --pg and/or --sqlite")
    migrated: set[str] = set()
    for n in range(args.rounds):
        order = arms[n % len(arms) :] + arms[: n % len(arms)]
        if n % 2:
            order.reverse()
        for arm in order:
            enqueue(arm, migrate=arm.dsn not in migrated)
            migrated.add(arm.dsn)
            result = run_once(arm, workdir, args.importtime, args.timeout, args.callgrind)
            result["round"] = n
            arm.runs.append(result)
            print(f"round {n} {arm.name:<22} {describe(result)}", flush=True)
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    ratios = [(r.partition("/")[0], r.partition("/")[2]) for r in args.ratio]
    ratios = ratios or default_ratios(arms)
    for key in ("wall_ms", "cpu_ms", "ready_ms", "imports_ms", "instructions_m", "modules"):
        for line in summary(arms, key, ratios):
            print(line)
    if args.json:
        Path(args.json).write_text(json.dumps([r for a in arms for r in a.runs], indent=1))


if __name__ == "__main__":
    main()
