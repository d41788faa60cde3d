"""(i) the soak: does pruning keep pace with a sustained enqueue rate?

A producer enqueues at a steady ``--rate`` jobs/s for ``--duration`` seconds (batches
paced by the clock, every 0.1 s: whatever the clock says is owed, at most ``--batch``
per call) while one worker drains them and prunes: a real ``taskq worker`` process with
its defaults and ``--keep-succeeded`` ``--retention`` (plus ``--prune-interval`` when
given), as a user who keeps finished jobs briefly runs it. Every ``--interval`` seconds the driver
samples the jobs table: its size (total, heap, indexes), ``n_live_tup`` / ``n_dead_tup``
from pg_stat_user_tables, the queued and running backlog, and what was enqueued and
finished so far. The result keeps the samples and names three of them: ``start`` (the
first), ``ref`` (at 30% of the run: the first moment retention, one prune pass and one
autovacuum pass have all happened in a 10-minute run) and ``end`` (the last); the
targets compare the last tenth of the run with ``ref``. ``autovacuum`` is the server's
setting: with it off nothing reclaims the pruned rows' space, whatever the pruning does.
"""

from __future__ import annotations

import argparse
import shlex
import statistics
import time

import _common

TICK_S = 0.1
REF_AT = 0.3  # of the duration
END_TAIL = 0.1  # the last tenth of the run

SAMPLE_SQL = """
SELECT pg_total_relation_size(t.relid) AS total_bytes,
       pg_relation_size(t.relid) AS heap_bytes,
       pg_indexes_size(t.relid) AS index_bytes,
       t.n_live_tup, t.n_dead_tup, t.autovacuum_count, t.autoanalyze_count,
       (SELECT count(*) FROM {schema}.jobs WHERE state = 'queued') AS queued,
       (SELECT count(*) FROM {schema}.jobs WHERE state = 'running') AS running
FROM pg_stat_user_tables t
WHERE t.relid = '{schema}.jobs'::regclass
"""

MIB = 1024 * 1024


def _sample(conn, schema: str, elapsed: float, enqueued: int) -> dict:
    row = conn.execute(SAMPLE_SQL.format(schema=schema)).fetchone()
    (total, heap, index, live, dead, vacuums, analyzes, queued, running) = row
    return {
        "t_s": elapsed,
        "enqueued": enqueued,
        "finished": enqueued - queued - running,
        "queued": queued,
        "running": running,
        "total_mib": total / MIB,
        "heap_mib": heap / MIB,
        "index_mib": index / MIB,
        "n_live_tup": live,
        "n_dead_tup": dead,
        "autovacuum_count": vacuums,
        "autoanalyze_count": analyzes,
    }


def _window(samples: list[dict], start: float, end: float) -> list[dict]:
    return [s for s in samples if start <= s["t_s"] <= end] or samples[-1:]


def soak(peer, args: argparse.Namespace, schema: str) -> dict:
    import psycopg

    worker = worker_cmd(peer, args)
    log = peer.workdir / "soak-worker.log"
    proc = _common.spawn(worker, peer.worker_env(), log)
    samples: list[dict] = []
    sent = 0
    try:
        with psycopg.connect(peer.dsn, autocommit=True) as conn:
            _common.wait_for(
                lambda: (
                    proc.poll() is not None
                    or conn.execute(f"SELECT count(*) FROM {schema}.workers").fetchone()[0] > 0
                ),
                60.0,
                "the soak worker to register",
                0.05,
            )
            if proc.poll() is not None:
                raise RuntimeError(f"worker exited {proc.returncode}: {_common.tail(log)}")
            autovacuum = conn.execute("SHOW autovacuum").fetchone()[0]
            t0 = time.monotonic()
            samples.append(_sample(conn, schema, 0.0, 0))
            next_sample, next_tick = args.interval, TICK_S
            while (elapsed := time.monotonic() - t0) < args.duration:
                if proc.poll() is not None:
                    raise RuntimeError(f"worker exited {proc.returncode}: {_common.tail(log)}")
                owed = min(args.batch, int(args.rate * elapsed) - sent)
                if owed > 0:
                    peer.enqueue_batch([str(i) for i in range(sent, sent + owed)])
                    sent += owed
                if elapsed >= next_sample:
                    samples.append(_sample(conn, schema, elapsed, sent))
                    next_sample += args.interval
                pause = t0 + next_tick - time.monotonic()
                next_tick += TICK_S
                if pause > 0:
                    time.sleep(pause)
            samples.append(_sample(conn, schema, time.monotonic() - t0, sent))
    finally:
        _common.stop(proc, grace=30.0)
    return {
        **summarise(samples, args),
        "autovacuum": autovacuum,
        "worker": " ".join(["taskq", *worker[worker.index("worker") :]]),
    }


def worker_cmd(peer, args: argparse.Namespace) -> list[str]:
    """``taskq worker`` with its defaults and the soak's retention, as a user runs it."""
    cmd = [*peer.worker_cmd(args), "--keep-succeeded", f"{args.retention:g}"]
    if args.prune_interval:
        cmd += ["--prune-interval", f"{args.prune_interval:g}"]
    return cmd + shlex.split(args.worker_args)


def summarise(samples: list[dict], args: argparse.Namespace) -> dict:
    duration = samples[-1]["t_s"]
    ref_t = REF_AT * duration
    ref = min(samples, key=lambda s: abs(s["t_s"] - ref_t))
    tail = _window(samples, (1.0 - END_TAIL) * duration, duration)
    around_ref = _window(samples, ref_t - END_TAIL * duration / 2, ref_t + END_TAIL * duration / 2)
    end = samples[-1]
    return {
        "target_rate": args.rate,
        "target_duration_s": args.duration,
        "retention_s": args.retention,
        "prune_interval_s": args.prune_interval or None,
        "duration_s": duration,
        "enqueued": end["enqueued"],
        "finished": end["finished"],
        "enqueue_per_s": end["enqueued"] / duration,
        "drain_per_s": end["finished"] / duration,
        "start": samples[0],
        "ref": ref,
        "end": end,
        "backlog": {
            "ref": statistics.median(s["queued"] for s in around_ref),
            "end": statistics.median(s["queued"] for s in tail),
            "max": max(s["queued"] for s in samples),
        },
        "size": {
            "ref_mib": ref["total_mib"],
            "end_mib": max(s["total_mib"] for s in tail),
            "max_mib": max(s["total_mib"] for s in samples),
        },
        "samples": samples,
    }
