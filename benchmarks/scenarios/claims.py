"""(e) taskq claim latency with 10k, 100k and 1M queued rows, and with 1M finished rows
retained (rows built with INSERT ... SELECT generate_series; claim + complete of
batches of 10)."""

from __future__ import annotations

from .base import Case, Metric


def _metrics(n: int) -> tuple[Metric, ...]:
    sizes = [("queued", n // 100), ("queued", n // 10), ("queued", n), ("finished", n)]
    out = []
    for label, size in sizes:
        key = f"sizes.{label}_{size}"
        name = f"{size:,} {label}"
        out.append(Metric(f"{key}.claim_p50_ms", f"claim p50, {name}", "ms", False, 2))
        out.append(Metric(f"{key}.claim_p99_ms", f"claim p99, {name}", "ms", False, 2))
        out.append(Metric(f"{key}.complete_p50_ms", f"complete p50, {name}", "ms", False, 2))
    return tuple(out)


FULL_N = 1_000_000
QUICK_N = 100_000

CASES = (
    Case(
        id="claim_scaling",
        family="claim",
        title="(e) claim latency vs table size",
        script_scenario="claim_scaling",
        subject="taskq",
        peers=(),
        full={"n": FULL_N, "batch": 10, "single": 300},
        quick={"n": QUICK_N, "batch": 10, "single": 30},
        metrics=_metrics(FULL_N),
        timeout=1200,
        extra={"quick_metrics": _metrics(QUICK_N)},
    ),
)
