"""The fleet benchmark's verdicts (issue 19 item 5) and its section of docs/benchmarks.md."""

from __future__ import annotations

from pathlib import Path
from typing import Any

START, END = "<!-- bench:fleet:start -->", "<!-- bench:fleet:end -->"
WAKEUP_P50_MS = 20.0


def _exactly_once(drain: dict[str, Any] | None) -> bool:
    if not drain:
        return False
    runs, states = drain["runs"], drain["states"]
    return (
        runs["once"] == drain["jobs"]
        and states.get("succeeded", 0) == drain["jobs"]
        and not states.get("dead")
    )


def _runs(drain: dict[str, Any] | None) -> str:
    if not drain:
        return "-"
    r = drain["runs"]
    return f"{r['once']:,} run once ({r['never']} never, {r['twice_or_more']} twice or more)"


def verdicts(out: dict[str, Any]) -> list[dict[str, Any]]:
    pooled, direct = out.get("pooled") or {}, out.get("direct") or {}
    p = out["params"]
    workers = p["workgroups"] * p["children"]
    before = pooled.get("events_before_restart") or {}
    connection_errors = (
        before.get("store-unavailable", 0)
        + before.get("worker-cannot-start", 0)
        + pooled.get("too_many_connections", 0)
    )
    wake = (pooled.get("wakeups") or {}).get("p50_ms")
    restart = pooled.get("drain_restart")
    return [
        {
            "target": ">= 100 worker processes in several workgroups",
            "value": f"{workers} in {p['workgroups']}",
            "met": workers >= 100 and p["workgroups"] > 1,
        },
        {
            "target": f"under a role with CONNECTION LIMIT {p['role_connection_limit']}",
            "value": f"peak {(pooled.get('connections') or {}).get('peak')} sessions",
            "met": (pooled.get("connections") or {}).get("peak", 10**6)
            <= p["role_connection_limit"],
        },
        {
            "target": f"{p['jobs']:,} jobs each run exactly once, none dead (through PgBouncer)",
            "value": _runs(pooled.get("drain")),
            "met": _exactly_once(pooled.get("drain")),
        },
        {
            "target": "no connection errors (through PgBouncer)",
            "value": f"{connection_errors}",
            "met": connection_errors == 0,
        },
        {
            "target": f"idle wake-up p50 <= {WAKEUP_P50_MS:g} ms (through PgBouncer)",
            "value": f"{wake} ms",
            "met": wake is not None and wake <= WAKEUP_P50_MS,
        },
        {
            "target": "a PgBouncer restart in the middle of the drain loses nothing",
            "value": _runs(restart),
            "met": _exactly_once(restart),
        },
        {
            "target": "the same fleet direct: every job once, none dead",
            "value": _runs(direct.get("drain")),
            "met": _exactly_once(direct.get("drain")),
        },
    ]


#: the table's rows: a label and the paths into each mode's results (several: "a / b")
ROWS: tuple[tuple[str, tuple[tuple[str, ...], ...]], ...] = (
    ("workers started in (s)", (("startup_s",),)),
    (
        "Postgres sessions of the role (peak / median)",
        (("connections", "peak"), ("connections", "median")),
    ),
    (
        "worker RSS / PSS, median (MiB)",
        (("memory", "worker_rss_mib_median"), ("memory", "worker_pss_mib_median")),
    ),
    ("whole fleet PSS (MiB)", (("memory", "fleet_pss_mib"),)),
    ("idle: Postgres transactions/s", (("idle", "xacts_per_s"),)),
    ("idle: Postgres CPU (% of a core)", (("idle", "postgres_cpu_pct"),)),
    ("idle: PgBouncer CPU (% of a core)", (("idle", "pgbouncer_cpu_pct"),)),
    ("idle: workers' CPU (% of a core)", (("idle", "workers_cpu_pct"),)),
    ("idle: supervisors' CPU (% of a core)", (("idle", "supervisors_cpu_pct"),)),
    (
        "idle wake-up p50 / p90 / max (ms)",
        (("wakeups", "p50_ms"), ("wakeups", "p90_ms"), ("wakeups", "max_ms")),
    ),
    ("drain: jobs/s", (("drain", "jobs_per_s"),)),
    ("drain: Postgres CPU (% of a core)", (("drain", "cost", "postgres_cpu_pct"),)),
    ("drain: workers' CPU (% of a core)", (("drain", "cost", "workers_cpu_pct"),)),
    ("drain: jobs per Postgres CPU-second", (("drain", "jobs_per_postgres_cpu_s"),)),
    (
        "WAL per job: enqueue / claim to ack (bytes)",
        (("drain", "wal_bytes_per_job", "enqueue"), ("drain", "wal_bytes_per_job", "claim_to_ack")),
    ),
    ("drain with PgBouncer restarted halfway: jobs/s", (("drain_restart", "jobs_per_s"),)),
    (
        "... PgBouncer down (s)",
        (("drain_restart", "pgbouncer_restart", "pgbouncer_down_s"),),
    ),
)


def _get(value: Any, keys: tuple[str, ...]) -> Any:
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    return "-" if value is None else value


def _cell(mode: dict[str, Any], paths: tuple[tuple[str, ...], ...]) -> str:
    values = [_get(mode, path) for path in paths]
    return "-" if all(v == "-" for v in values) else " / ".join(str(v) for v in values)


def markdown(out: dict[str, Any]) -> str:
    pooled, direct = out.get("pooled") or {}, out.get("direct") or {}
    p, pg, load = out["params"], out.get("postgres") or {}, out["machine"]
    pj, dj = _get(pooled, ("drain", "jobs_per_s")), _get(direct, ("drain", "jobs_per_s"))
    ratio = f"{pj / dj:.2f}" if isinstance(pj, float) and isinstance(dj, float) and dj else "-"
    lines = [
        f"Fleet benchmark ({out['mode']}, {out['started_at']} - {out.get('finished_at')}): "
        f"{p['workgroups']} workgroups x {p['children']} workers (max_concurrency "
        f"{p['concurrency']}, poll_interval {p.get('poll_interval') or 'the default'}), "
        f"{p['jobs']:,} jobs a drain, Postgres "
        f"{pg.get('server_version', '?')} (max_connections {pg.get('max_connections', '?')}, "
        f"shared_buffers {pg.get('shared_buffers', '?')}), PgBouncer transaction mode, "
        f"default_pool_size {p['pool_size']}, role CONNECTION LIMIT "
        f"{p['role_connection_limit']}; {load['nproc']} cores, load average "
        f"{_load(load.get('loadavg_before'))} before, {_load(load.get('loadavg_after'))} after.",
        "",
        "| | through PgBouncer | direct |",
        "|---|---|---|",
        *(
            f"| {label} | {_cell(pooled, paths)} | {_cell(direct, paths)} |"
            for label, paths in ROWS
        ),
        f"| drain: PgBouncer / direct | {ratio} | 1 |",
        "",
        "| target (issue 19 item 5) | measured | met |",
        "|---|---|---|",
        *(
            f"| {v['target']} | {v['value']} | {'yes' if v['met'] else '**no**'} |"
            for v in out.get("verdicts", [])
        ),
        "",
        f"Log events of the fleet through PgBouncer: {_events(pooled.get('events'))}; "
        f"direct: {_events(direct.get('events'))}.",
    ]
    return "\n".join(lines)


def _load(value: Any) -> str:
    return " / ".join(f"{x:.1f}" for x in value) if value else "?"


def _events(counts: dict[str, int] | None) -> str:
    found = {k: v for k, v in (counts or {}).items() if v}
    return ", ".join(f"`{k}` {v}" for k, v in found.items()) or "none of the listed ones"


def update_docs(doc: Path, generated: str) -> str:
    text = doc.read_text()
    if START not in text:
        return f"{doc}: no '{START}' marker; results not pasted"
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1) if END in rest else ("", "")
    doc.write_text(f"{head}{START}\n{generated}\n{END}{tail}")
    return f"{doc}: fleet section regenerated"
