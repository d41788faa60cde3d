"""taskq under the shared scenarios, plus its own (claim scaling, RSS, workgroup recovery,
the pgbench ceiling, the pruning soak: ``taskq_soak``). Runs with the project's
interpreter (the harness passes ``sys.executable``), never in a peer's venv.

The worker is the real ``taskq worker`` command (``python -m taskq worker``) with its
defaults (``--max-concurrency``: 64 for its all-async registry, 2 s heartbeat, 10 s
lease); "at 32" passes ``--max-concurrency 32``. Producers use ``taskq.AsyncClient``:
``enqueue_many`` for batches, ``enqueue`` one at a time. ``--dsn sqlite:///...`` runs
the same scenarios on the SQLite store (scenario f).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from uuid import UUID

import _common
import _cpu
import _workflows
import taskq_actors
import taskq_cpu
import taskq_dashboard
import taskq_soak
import taskq_workflows

import taskq
from taskq.ids import uuid7
from taskq.jobs import Outcome, OutcomeKind

HERE = Path(__file__).resolve().parent
SCHEMA = "taskq"
ACTOR = taskq_actors.noop  # the Actor object: its options (idempotent) travel with the job


def taskq_env(dsn: str) -> dict[str, str]:
    return {
        "TASKQ_DSN": dsn,
        "TASKQ_SCHEMA": SCHEMA,
        "TASKQ_LOG_FORMAT": "json",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")])),
    }


class TaskqPeer(_common.Peer):
    def __init__(self, args: argparse.Namespace) -> None:
        self.script = __file__
        self.workdir = Path(args.path)
        self.dsn = args.dsn
        self.runner = asyncio.Runner()
        self.client = taskq.AsyncClient(args.dsn, schema=SCHEMA)
        self.runner.run(self.client.open())
        self.runner.run(self.client.store.migrate())
        # on SQLite against Huey, whose API is synchronous: taskq's synchronous client
        self.sync = taskq.Client(args.dsn) if args.dsn.startswith("sqlite:") else None

    @property
    def store(self):
        return self.client.store

    def enqueue_keys(self, keys: Sequence[str], batch: int) -> None:
        for start in range(0, len(keys), batch):
            self.enqueue_batch(keys[start : start + batch])

    def enqueue_batch(self, keys: Sequence[str]) -> None:
        if self.sync is not None:
            self.sync.enqueue_many(ACTOR, [((k,), {}) for k in keys])
            return
        self.runner.run(self.client.enqueue_many(ACTOR, [((k,), {}) for k in keys]))

    def enqueue_one(self, key: str) -> None:
        if self.sync is not None:
            self.sync.enqueue(ACTOR, key)
            return
        self.enqueue_one_async(key)

    def enqueue_one_async(self, key: str) -> None:
        self.runner.run(self.client.enqueue(ACTOR, key))

    def pending(self) -> int:
        counts = self.runner.run(self.client.stats())
        return counts["queued"] + counts["running"]

    def describe_stuck(self) -> str:
        return f"not re-run; states: {self.runner.run(self.client.stats())}"

    def worker_cmd(self, args: argparse.Namespace) -> list[str]:
        cmd = [sys.executable, "-m", "taskq", "worker", "--actors", "taskq_actors:registry"]
        if args.concurrency:
            cmd += ["--max-concurrency", str(args.concurrency)]
        return cmd

    def worker_env(self) -> dict[str, str]:
        return taskq_env(self.dsn)

    def close(self) -> None:
        if self.sync is not None:
            self.sync.close()
        self.runner.run(self.client.close())
        self.runner.close()


def sync_enqueue(peer: TaskqPeer, args: argparse.Namespace) -> dict:
    """The enqueue a web request pays: ``taskq.Client.enqueue`` (synchronous; on Postgres
    written on the calling thread's kept connection)."""
    with taskq.Client(args.dsn, schema=SCHEMA) as client:
        result = _common.sync_single(lambda key: client.enqueue(ACTOR, key), args)
    result["client"] = "taskq.Client"
    return result


def enqueue(peer: TaskqPeer, args: argparse.Namespace) -> dict:
    """The shared enqueue scenario; on SQLite (taskq.Client, synchronous, as Huey's API)
    the AsyncClient's single enqueue is measured after it too, for information."""
    result = _common.enqueue_rates(peer, args, peer.enqueue_batch, peer.enqueue_one)
    if peer.sync is not None:
        result["client"] = "taskq.Client"
        t0 = time.perf_counter()
        for i in range(args.single):
            peer.enqueue_one_async(f"a{i}")
        result["single_async_per_s"] = args.single / (time.perf_counter() - t0)
    return result


# -- (d) recovery under a workgroup -------------------------------------------------------
WORKGROUP_TOML = """\
actors = "taskq_actors:registry"

[defaults]
max_concurrency = {concurrency}

[supervisor]
http_port = 0

[[workers]]
name = "bench"
queues = ["default"]
"""


def recovery_workgroup(peer: TaskqPeer, args: argparse.Namespace) -> dict:
    """A workgroup with one child runs ``inflight`` blocking jobs; SIGKILL the child;
    time until every job has started again (in the replacement child)."""
    events = peer.workdir / "recovery-wg.events"
    events.unlink(missing_ok=True)
    toml = peer.workdir / "workgroup.toml"
    toml.write_text(WORKGROUP_TOML.format(concurrency=max(10, args.inflight)))
    keys = [f"r{i}" for i in range(args.inflight)]
    env = {_common.EVENTS_ENV: str(events), _common.HOLD_ENV: "3600", **peer.worker_env()}
    log = peer.workdir / "recovery-wg.log"
    sup = _common.spawn([sys.executable, "-m", "taskq", "workgroup", "start", str(toml)], env, log)
    try:
        peer.enqueue_keys(keys, len(keys))

        def starts() -> list[tuple[str, float, int]]:
            return [
                (key, t, pid)
                for kind, key, t, pid in _common.read_events(events)
                if kind == "start"
            ]

        try:
            _common.wait_for(
                lambda: len(starts()) >= len(keys) or sup.poll() is not None,
                60.0,
                "the workgroup child to start every job",
                0.05,
            )
        except TimeoutError as exc:
            raise TimeoutError(f"{exc}; log: {_common.tail(log)}") from None
        if sup.poll() is not None:
            raise RuntimeError(f"workgroup exited {sup.returncode}: {_common.tail(log)}")
        child = starts()[0][2]
        killed_at = time.time()
        os.kill(child, signal.SIGKILL)
        _common.wait_for(
            lambda: len({k for k, _t, pid in starts() if pid != child}) == len(keys),
            args.observe,
            "the jobs to run again",
            0.01,
        )
        again = {k: t for k, t, pid in starts() if pid != child}
    finally:
        _common.stop(sup, grace=15.0)
    delays = sorted(t - killed_at for t in again.values())
    return {
        "recovered": True,
        "inflight": len(keys),
        "first_s": delays[0],
        "all_s": delays[-1],
        "median_s": statistics.median(delays),
    }


# -- (e) claim latency against table size ---------------------------------------------------
FILL_SQL = """
INSERT INTO {schema}.jobs (id, actor, queue, args, kwargs, priority, state, attempt,
                           max_attempts, max_crashes, idempotent, run_at, created_at,
                           started_at, finished_at)
SELECT (substr(h, 1, 8) || '-' || substr(h, 9, 4) || '-7000-8000-' || h)::uuid,
       'noop', 'default', '["x"]', '{{}}', 0, %(state)s,
       CASE WHEN %(state)s = 'succeeded' THEN 1 ELSE 0 END, 3, 2, true,
       now() - interval '1 hour', now() - interval '1 hour',
       CASE WHEN %(state)s = 'succeeded' THEN now() - interval '1 hour' END,
       CASE WHEN %(state)s = 'succeeded' THEN now() - interval '1 hour' END
FROM generate_series(%(offset)s + 1, %(offset)s + %(n)s) AS g,
     LATERAL (SELECT lpad(to_hex(g), 12, '0') AS h) AS hex
"""

#: the rows that reference jobs (job_errors, ...) go with them
TRUNCATE_JOBS = f"TRUNCATE {SCHEMA}.jobs CASCADE"


def claim_scaling(peer: TaskqPeer, args: argparse.Namespace) -> dict:
    """Claim + complete batches of ``batch`` against tables of growing size: each of
    ``--sizes`` queued rows, then as many finished (succeeded) rows as the largest,
    retained beside the smallest number of queued ones.

    Rows are built with one ``INSERT ... SELECT generate_series`` (ids time-ordered, as
    taskq's UUIDv7 are, so claim order is heap order) and the table is VACUUM ANALYZEd,
    as autovacuum would have done on a live table. ``build_s`` is how long that took."""
    import psycopg

    queued = sorted(int(v) for v in args.sizes.split(","))
    smallest = queued[0]
    sizes = [*(("queued", n) for n in queued), ("finished", queued[-1])]
    rounds = min(args.single, smallest // args.batch)  # never claim the queue empty
    worker_id = uuid7()
    out = {}
    with psycopg.connect(peer.dsn, autocommit=True) as conn:
        for label, size in sizes:
            conn.execute(TRUNCATE_JOBS)
            t0 = time.perf_counter()
            if label == "queued":
                conn.execute(
                    FILL_SQL.format(schema=SCHEMA), {"state": "queued", "n": size, "offset": 0}
                )
            else:
                conn.execute(
                    FILL_SQL.format(schema=SCHEMA), {"state": "succeeded", "n": size, "offset": 0}
                )
                conn.execute(
                    FILL_SQL.format(schema=SCHEMA),
                    {"state": "queued", "n": smallest, "offset": size},
                )
            conn.execute(f"VACUUM ANALYZE {SCHEMA}.jobs")
            build_s = time.perf_counter() - t0
            claim_ms, complete_ms = peer.runner.run(
                _claim_rounds(peer.store, worker_id, rounds, args.batch)
            )
            key = f"{label}_{size}"
            out[key] = {
                "rows": size,
                "build_s": build_s,
                "claim_p50_ms": _common.percentile(claim_ms, 50),
                "claim_p99_ms": _common.percentile(claim_ms, 99),
                "complete_p50_ms": _common.percentile(complete_ms, 50),
                "complete_p99_ms": _common.percentile(complete_ms, 99),
                "cycle_p50_ms": _common.percentile(
                    [a + b for a, b in zip(claim_ms, complete_ms, strict=True)], 50
                ),
            }
        conn.execute(TRUNCATE_JOBS)
    return {"batch": args.batch, "rounds": rounds, "sizes": out}


async def _claim_rounds(
    store, worker_id: UUID, rounds: int, batch: int
) -> tuple[list[float], list[float]]:
    claim_ms, complete_ms = [], []
    for _ in range(rounds):
        t0 = time.perf_counter()
        jobs = await store.claim(worker_id, ["default"], batch, 10.0)
        t1 = time.perf_counter()
        await store.complete(
            worker_id,
            [Outcome(job_id=j.id, attempt=j.attempt, kind=OutcomeKind.SUCCEEDED) for j in jobs],
        )
        t2 = time.perf_counter()
        claim_ms.append((t1 - t0) * 1000.0)
        complete_ms.append((t2 - t1) * 1000.0)
    return claim_ms, complete_ms


# -- (g) the ceiling: pgbench running the store's own claim + complete SQL -------------------
def default_claim_size() -> int:
    """The most one claim of a ``taskq worker`` with its defaults takes: its default
    ``--max-concurrency`` for this benchmark's (all-async) registry."""
    from taskq.worker.config import default_concurrency

    return default_concurrency(taskq_actors.registry)


def pgbench_script(batch: int) -> str:
    """The store's ``claim`` and ``complete`` blocks from postgres.sql, verbatim, with
    psycopg parameters turned into pgbench variables. The claim's RETURNING rows are
    aggregated into two arrays (``\\gset``) that feed ``complete``, as the acker does; every
    outcome is a success with no result, error, meta or blame (a no-op job's). A
    parameter the store's SQL gained and this script does not know is an error, never a
    guess."""
    from taskq.store.sqlfile import parse_queries

    sql_path = Path(taskq.__file__).parent / "store" / "postgres" / "postgres.sql"
    queries = parse_queries(sql_path.read_text(), source=str(sql_path))
    # the statements name their schema (``{schema}.jobs``), as the store fills it in
    claim, complete = (queries[n].replace("{schema}", f'"{SCHEMA}"') for n in ("claim", "complete"))
    # the claim's answer (its last SELECT, commit mode included) aggregated into two arrays
    answer = claim.rindex("\nSELECT ")
    final = claim[answer:].split("\nORDER BY")[0]
    claim = (
        claim[:answer] + "\nSELECT coalesce(array_agg(a.id), '{}')::text AS ids, "
        "coalesce(array_agg(a.attempt), '{}')::text AS atts FROM (" + final + ") AS a"
    )
    count = "cardinality(:ids::uuid[])"

    def each(value: str) -> str:
        return f"array_fill({value}, ARRAY[{count}])"

    params = {
        "queues": "'{default}'",
        "exclude_actors": "'{}'",
        "limit": str(batch),
        "lease": "10",
        "worker_id": "'01890000-0000-7000-8000-000000000001'::uuid",
        "channel": f"'taskq_{SCHEMA}'",
        "ids": ":ids",
        "attempts": ":atts",
        "kinds": each("'succeeded'::text"),
        # as the worker sends a batch of plain successes (taskq.store.pgarray): the
        # all-NULL text columns as NULL arrays
        "results": "NULL",
        "errors": "NULL",
        "delays": each("0::float8"),
        "reasons": "NULL",
        "metas": "NULL",
        "blames": each("false"),
    }
    unknown = sorted(set(re.findall(r"%\((\w+)\)s", claim + complete)) - params.keys())
    if unknown:
        raise RuntimeError(
            f"pgbench_script: {sql_path.name} uses parameters this script does not fill: "
            f"{', '.join(unknown)}"
        )

    def fill(sql: str) -> str:
        sql = re.sub(r"%\((\w+)\)s", lambda m: params[m.group(1)], sql)
        return " ".join(line.split("--")[0].strip() for line in sql.splitlines()).strip()

    return f"{fill(claim)}\n\\gset\n{fill(complete)};\n"


def ceiling(peer: TaskqPeer, args: argparse.Namespace) -> dict:
    """pgbench, 1 client and ``concurrency`` clients, each transaction = one claim of
    ``batch`` (0: the default worker's claim size) + one complete, until ``n`` queued rows
    are gone. Jobs/s = rows finished / wall time; every claimed row must end
    ``succeeded`` (else the script did not do what the store does, and it says so)."""
    import psycopg

    pgbench = shutil.which("pgbench")
    if pgbench is None:
        return {"ok": False, "error": "pgbench not found on PATH"}
    batch = args.batch or default_claim_size()
    script = pgbench_script(batch)
    out: dict[str, object] = {"batch": batch, "script": script}
    for clients in sorted({1, max(1, args.concurrency or 2)}):
        with psycopg.connect(peer.dsn, autocommit=True) as conn:
            conn.execute(TRUNCATE_JOBS)
            conn.execute(
                FILL_SQL.format(schema=SCHEMA), {"state": "queued", "n": args.n, "offset": 0}
            )
            conn.execute(f"VACUUM ANALYZE {SCHEMA}.jobs")
        per_client = max(1, args.n // (clients * batch))
        with tempfile.NamedTemporaryFile("w", suffix=".sql", delete=False) as fh:
            fh.write(script)
        env = dict(os.environ, PGOPTIONS=f"-c search_path={SCHEMA}")
        t0 = time.perf_counter()
        proc = subprocess.run(
            [
                pgbench,
                "-n",
                "-M",
                "prepared",
                "-f",
                fh.name,
                "-c",
                str(clients),
                "-j",
                str(clients),
                "-t",
                str(per_client),
                peer.dsn,
            ],
            capture_output=True,
            text=True,
            env=env,
            timeout=args.timeout,
        )
        wall = time.perf_counter() - t0
        os.unlink(fh.name)
        if proc.returncode != 0:
            return {"ok": False, "error": "pgbench failed: " + proc.stderr.strip()[-400:]}
        with psycopg.connect(peer.dsn, autocommit=True) as conn:
            states = dict(conn.execute(f"SELECT state, count(*) FROM {SCHEMA}.jobs GROUP BY state"))
        claimed = min(args.n, per_client * clients * batch)
        done = states.get("succeeded", 0)
        if done != claimed or states.get("running"):
            return {
                "ok": False,
                "error": f"pgbench script: {claimed} rows claimed should have ended "
                f"succeeded; the table holds {states}",
            }
        tps = re.search(r"tps = ([\d.]+) \(without initial", proc.stdout)
        out[f"clients_{clients}"] = {
            "jobs": done,
            "wall_s": wall,
            "jobs_per_s": done / wall,
            "tps": float(tps.group(1)) if tps else None,
        }
    return out


# -- (h) worker RSS over a long drain ---------------------------------------------------------
def rss_kib(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def rss(peer: TaskqPeer, args: argparse.Namespace) -> dict:
    """Enqueue ``n`` jobs in chunks while one worker drains them; sample the worker's
    VmRSS every ``interval`` seconds. Progress comes from the job bodies' tick events
    (one line per 10,000 jobs), so the driver sends the database nothing but enqueues."""
    events = peer.workdir / "rss.events"
    events.unlink(missing_ok=True)
    env = {_common.EVENTS_ENV: str(events), _common.EXPECT_ENV: str(args.n), **peer.worker_env()}
    log = peer.workdir / "rss-worker.log"
    proc = _common.spawn(peer.worker_cmd(args), env, log)
    samples: list[tuple[float, int, int]] = []  # (seconds, done jobs, rss KiB)
    chunk = 10_000
    t0 = time.time()
    try:
        enqueued = 0
        next_sample = 0.0
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"worker exited {proc.returncode}: {_common.tail(log)}")
            rows = _common.read_events(events) if events.exists() else []
            done = max(
                [int(key) for kind, key, _t, _p in rows if kind in ("tick", "last")], default=0
            )
            if enqueued < args.n and enqueued - done < 3 * chunk:
                take = min(chunk, args.n - enqueued)
                peer.enqueue_keys([str(i) for i in range(enqueued, enqueued + take)], 1000)
                enqueued += take
            now = time.time() - t0
            if now >= next_sample or done >= args.n:
                kib = rss_kib(proc.pid)
                if kib is not None:
                    samples.append((now, done, kib))
                next_sample = now + args.interval
                if done >= args.n:
                    break
            if now > args.timeout:
                raise TimeoutError(f"{done}/{args.n} jobs after {args.timeout:.0f}s")
            time.sleep(0.2)
    finally:
        _common.stop(proc)
    kib = [s[2] for s in samples]
    # the tenths are of the jobs (progress comes in ticks of 10,000: at least one sample)
    first = [k for _t, done, k in samples if done <= args.n // 10] or kib[:1]
    last = [k for _t, done, k in samples if done >= args.n - args.n // 10] or kib[-1:]
    return {
        "jobs": args.n,
        "seconds": samples[-1][0],
        "samples": samples,
        "jobs_per_s": args.n / samples[-1][0],
        "rss_start_mib": statistics.median(first) / 1024,
        "rss_end_mib": statistics.median(last) / 1024,
        "rss_max_mib": max(kib) / 1024,
    }


def main() -> None:
    parser = _common.base_parser(
        [
            "enqueue",
            "drain",
            "latency",
            "recovery_bare",
            "recovery_workgroup",
            "claim_scaling",
            "ceiling",
            "rss",
            "soak",
            "cpu_drain",
            "sync_enqueue",
            "wf_fanin",
            "wf_enqueue",
            "mixed",
            "dashboard",
        ]
    )
    _cpu.add_arguments(parser)
    _workflows.add_arguments(parser)
    parser.add_argument(
        "--sizes", default="10000,100000", help="claim_scaling: queued rows, comma-separated"
    )
    parser.add_argument("--rate", type=float, default=5000.0, help="soak: jobs/s enqueued")
    parser.add_argument("--duration", type=float, default=600.0, help="soak: seconds")
    parser.add_argument(
        "--retention", type=float, default=60.0, help="soak: the worker's --keep-succeeded (s)"
    )
    parser.add_argument(
        "--prune-interval",
        type=float,
        default=0.0,
        help="soak: the worker's --prune-interval (0: its default)",
    )
    parser.add_argument(
        "--worker-args",
        default="",
        help="soak: more `taskq worker` flags, e.g. --worker-args=--vacuum-after-prune "
        "(default: none)",
    )
    args = parser.parse_args()
    _common.run_main(
        args,
        TaskqPeer,
        {
            **_common.SHARED,
            "enqueue": enqueue,
            "sync_enqueue": sync_enqueue,
            "recovery_workgroup": recovery_workgroup,
            "claim_scaling": claim_scaling,
            "ceiling": ceiling,
            "rss": rss,
            "soak": lambda peer, a: taskq_soak.soak(peer, a, SCHEMA),
            "cpu_drain": taskq_cpu.cpu_drain,
            "wf_fanin": taskq_workflows.fanin,
            "wf_enqueue": taskq_workflows.wf_enqueue,
            "mixed": taskq_cpu.mixed,
            "dashboard": taskq_dashboard.dashboard,
        },
    )


if __name__ == "__main__":
    main()
