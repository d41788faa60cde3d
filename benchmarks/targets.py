"""Issue 6 item 3: each target, checked against the same run's numbers."""

from __future__ import annotations

from collections.abc import Callable


def _ratio(cases: dict, cid: str, peer: str, key: str) -> float | None:
    return cases.get(cid, {}).get("ratios", {}).get(peer, {}).get(key)


def _value(cases: dict, cid: str, system: str, key: str) -> float | None:
    return cases.get(cid, {}).get("summary", {}).get(system, {}).get(key)


def _check(target: str, value: float | None, ok: Callable[[float], bool], fmt: str) -> dict:
    if value is None:
        return {"target": target, "value": "not measured in this run", "met": None, "number": None}
    return {"target": target, "value": fmt.format(value), "met": bool(ok(value)), "number": value}


def _claim_flatness(cases: dict) -> float | None:
    sizes = cases.get("claim_scaling", {}).get("results", {}).get("taskq", [])
    runs = [r for r in sizes if r.get("ok")]
    if not runs:
        return None
    ratios = []
    for r in runs:
        by_size = r["sizes"]
        keys = list(by_size)
        small, largest = by_size[keys[0]], max(by_size[k]["claim_p50_ms"] for k in keys)
        ratios.append(largest / small["claim_p50_ms"])
    return sorted(ratios)[len(ratios) // 2]


def _rss_growth(cases: dict) -> float | None:
    start = _value(cases, "rss", "taskq", "rss_start_mib")
    end = _value(cases, "rss", "taskq", "rss_end_mib")
    return end / start if start and end else None


def evaluate(cases: dict, derived: dict) -> list[dict]:
    fraction = [d["fraction"] for d in derived.values()]
    return [
        _check(
            "drain >= 2x PgQueuer (default concurrency)",
            _ratio(cases, "drain_default", "pgqueuer", "jobs_per_s"),
            lambda v: v >= 2.0,
            "{:.2f}x",
        ),
        _check(
            "drain >= 2x PgQueuer (concurrency 32)",
            _ratio(cases, "drain_32", "pgqueuer", "jobs_per_s"),
            lambda v: v >= 2.0,
            "{:.2f}x",
        ),
        _check(
            "SQLite drain >= 2x Huey",
            _ratio(cases, "sqlite_drain", "huey", "jobs_per_s"),
            lambda v: v >= 2.0,
            "{:.2f}x",
        ),
        _check(
            "batch enqueue >= 2x PgQueuer",
            _ratio(cases, "enqueue", "pgqueuer", "batch_per_s"),
            lambda v: v >= 2.0,
            "{:.2f}x",
        ),
        _check(
            "single enqueue >= PgQueuer",
            _ratio(cases, "enqueue", "pgqueuer", "single_per_s"),
            lambda v: v >= 1.0,
            "{:.2f}x",
        ),
        _check(
            "latency p50 <= 3 ms",
            _value(cases, "latency", "taskq", "p50_ms"),
            lambda v: v <= 3.0,
            "{:.2f} ms",
        ),
        _check(
            "latency p99 <= 6 ms",
            _value(cases, "latency", "taskq", "p99_ms"),
            lambda v: v <= 6.0,
            "{:.2f} ms",
        ),
        _check(
            "observed-death recovery <= 1 s",
            _value(cases, "recovery_workgroup", "taskq", "all_s"),
            lambda v: v <= 1.0,
            "{:.3f} s",
        ),
        _check(
            "lease-expiry recovery <= 15 s (defaults)",
            _value(cases, "recovery_bare", "taskq", "all_s"),
            lambda v: v <= 15.0,
            "{:.2f} s",
        ),
        _check(
            "claim latency flat from 10k to 1M rows (largest p50 <= 1.5x the smallest)",
            _claim_flatness(cases),
            lambda v: v <= 1.5,
            "{:.2f}x",
        ),
        _check(
            "RSS flat (last tenth <= 1.2x first tenth)",
            _rss_growth(cases),
            lambda v: v <= 1.2,
            "{:.2f}x",
        ),
        _check(
            ">= 70% of the pgbench ceiling (best of batch 10, 32)",
            max(fraction) if fraction else None,
            lambda v: v >= 0.7,
            "{:.0%}",
        ),
    ]
