"""(e) taskq claim latency against table size: 10k, 100k, 1M and 10M queued rows, then
10M finished rows retained beside 10k queued (rows built with INSERT ... SELECT
generate_series, then VACUUM ANALYZE; claim + complete of batches of 10)."""

from __future__ import annotations

from .base import Case, Metric

FULL_SIZES = (10_000, 100_000, 1_000_000, 10_000_000)
QUICK_SIZES = (1000, 10_000, 100_000)


def _metrics(queued: tuple[int, ...]) -> tuple[Metric, ...]:
    out = []
    for label, size in [*(("queued", n) for n in queued), ("finished", queued[-1])]:
        key = f"sizes.{label}_{size}"
        name = f"{size:,} {label}"
        out.append(Metric(f"{key}.claim_p50_ms", f"claim p50, {name}", "ms", False, 2))
        out.append(Metric(f"{key}.claim_p99_ms", f"claim p99, {name}", "ms", False, 2))
        out.append(Metric(f"{key}.complete_p50_ms", f"complete p50, {name}", "ms", False, 2))
    return tuple(out)


def _sizes(queued: tuple[int, ...]) -> str:
    return ",".join(str(n) for n in queued)


CASES = (
    Case(
        id="claim_scaling",
        family="claim",
        title="(e) claim latency vs table size",
        script_scenario="claim_scaling",
        subject="taskq",
        peers=(),
        full={"sizes": _sizes(FULL_SIZES), "batch": 10, "single": 1000},
        quick={"sizes": _sizes(QUICK_SIZES), "batch": 10, "single": 30},
        metrics=_metrics(FULL_SIZES),
        timeout=3600,
        full_runs=1,
        extra={"quick_metrics": _metrics(QUICK_SIZES)},
    ),
)
