"""``python benchmarks/plot.py RESULTS.json OUT_DIR``: the PNG plots of docs/benchmarks.md.

Runs in the bench-only venv ``benchmarks/.venvs/plot`` (matplotlib), which the harness
creates; it reads nothing but the JSON results.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

COLOURS = {
    "taskq": "#1b7837",
    "taskq-sqlite": "#5aae61",
    "pgqueuer": "#2166ac",
    "procrastinate": "#b2182b",
    "dramatiq": "#e08214",
    "huey": "#8073ac",
    "celery": "#35978f",
    "executor": "#777777",
}


def _label(out: dict, system: str) -> str:
    info = out["systems"].get(system, {})
    version = info.get("version")
    return f"{info.get('label', system)} {version}" if version else info.get("label", system)


def _summary(out: dict, case: str, system: str, key: str) -> float | None:
    return out["cases"].get(case, {}).get("summary", {}).get(system, {}).get(key)


def _save(fig, ax, path: Path, *, legend: bool = False) -> bool:
    if ax is not None:
        ax.grid(True, alpha=0.3)
        if legend:
            ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def throughput_vs_concurrency(out: dict, path: Path) -> bool:
    sweep = sorted(
        (c for c in out["cases"] if c.startswith("sweep_c")),
        key=lambda c: int(c.removeprefix("sweep_c")),
    )
    if not sweep:
        return False
    fig, ax = plt.subplots(figsize=(7, 4.2))
    systems = {s for c in sweep for s in out["cases"][c]["summary"]}
    for system in [s for s in COLOURS if s in systems]:
        xs, ys = [], []
        for c in sweep:
            v = _summary(out, c, system, "jobs_per_s")
            if v is not None:
                xs.append(int(c.removeprefix("sweep_c")))
                ys.append(v)
        if xs:
            ax.plot(xs, ys, marker="o", label=_label(out, system), color=COLOURS[system])
    ax.set_xscale("log", base=2)
    ax.set_xticks([int(c.removeprefix("sweep_c")) for c in sweep])
    ax.get_xaxis().set_major_formatter(matplotlib.ticker.ScalarFormatter())
    ax.set_xlabel("concurrency (one worker process)")
    ax.set_ylabel("drain throughput (jobs/s)")
    ax.set_title("Drain of 5,000 no-op jobs vs concurrency")
    return _save(fig, ax, path, legend=True)


def drain_and_enqueue(out: dict, path: Path) -> bool:
    bars = [
        ("enqueue", "batch_per_s", "batch enqueue"),
        ("enqueue", "single_per_s", "single enqueue"),
        ("drain_default", "jobs_per_s_with_startup", "drain, default conc.\n(with start-up)"),
        ("drain_32", "jobs_per_s_with_startup", "drain, conc. 32\n(with start-up)"),
    ]
    bars = [b for b in bars if b[0] in out["cases"]]
    if not bars:
        return False
    systems = [
        s
        for s in COLOURS
        if s != "taskq-sqlite" and s != "huey" and any(_summary(out, c, s, k) for c, k, _ in bars)
    ]
    fig, axes = plt.subplots(1, len(bars), figsize=(3.2 * len(bars), 4))
    axes = axes if len(bars) > 1 else [axes]
    for ax, (case, key, title) in zip(axes, bars, strict=True):
        vals = [(_summary(out, case, s, key) or 0.0) for s in systems]
        ax.bar(range(len(systems)), vals, color=[COLOURS[s] for s in systems])
        ax.set_xticks(range(len(systems)))
        ax.set_xticklabels(
            [out["systems"][s]["label"] for s in systems], rotation=30, ha="right", fontsize=8
        )
        ax.set_title(title, fontsize=10)
        ax.set_ylabel("jobs/s")
        ax.grid(True, axis="y", alpha=0.3)
    fig.suptitle(f"Medians of {out['runs']} run(s)")
    return _save(fig, None, path)


def cpu_drains(out: dict, path: Path) -> bool:
    """The CPU-bound drains (issue 24): taskq, Celery and the bare executor, with start-up
    and after the first second, for each job size."""
    cases = [c for c in ("cpu_drain", "cpu_drain_short") if c in out["cases"]]
    if not cases:
        return False
    keys = (("jobs_per_s_with_startup", "with start-up"), ("jobs_per_s_after_1s", "after 1 s"))
    fig, axes = plt.subplots(1, len(cases), figsize=(5 * len(cases), 4.2))
    axes = axes if len(cases) > 1 else [axes]
    for ax, case in zip(axes, cases, strict=True):
        summary = out["cases"][case]["summary"]
        systems = [s for s in COLOURS if s in summary and summary[s].get(keys[0][0])]
        values = {s: [summary[s].get(key) or 0.0 for key, _ in keys] for s in systems}
        _grouped_bars(ax, out, values, [name for _, name in keys])
        ax.set_ylabel("jobs/s")
        ax.set_title(out["cases"][case]["title"].removeprefix("(j) "), fontsize=10)
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(f"CPU-bound drains, {os_cpus(out)} CPUs; medians of {out['runs']} run(s)")
    return _save(fig, None, path)


def os_cpus(out: dict) -> object:
    return out.get("machine", {}).get("nproc", "?")


def _grouped_bars(ax, out: dict, values: dict[str, list[float]], groups: list[str]) -> None:
    """One bar per system (``values``: system -> one value per group) in each group."""
    width = 0.8 / max(1, len(values))
    for i, (system, vals) in enumerate(values.items()):
        ax.bar(
            [k + i * width for k in range(len(groups))],
            vals,
            width,
            label=_label(out, system),
            color=COLOURS[system],
        )
    ax.set_xticks([k + width * (len(values) - 1) / 2 for k in range(len(groups))])
    ax.set_xticklabels(groups)


def latency_percentiles(out: dict, path: Path) -> bool:
    case = out["cases"].get("latency")
    if not case:
        return False
    systems = [s for s in COLOURS if s in case["summary"] and "p50_ms" in case["summary"][s]]
    keys = [("p50_ms", "p50"), ("p90_ms", "p90"), ("p99_ms", "p99")]
    fig, ax = plt.subplots(figsize=(7, 4.2))
    values = {}
    for system in systems:
        runs = [r for r in case["results"][system] if r.get("ok")]
        vals = []
        for key, _ in keys:
            per_run = sorted(r[key] for r in runs if key in r)
            vals.append(per_run[len(per_run) // 2] if per_run else 0.0)
        values[system] = vals
    _grouped_bars(ax, out, values, [name for _, name in keys])
    ax.set_yscale("log")
    ax.set_ylabel("enqueue -> start (ms, log scale)")
    params = case.get("params", {})
    ax.set_title(
        f"Latency to an idle worker ({params.get('n', '?')} jobs, "
        f"{float(params.get('interval', 0)) * 1000:.0f} ms apart)"
    )
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    return _save(fig, None, path)


def claim_scaling(out: dict, path: Path) -> bool:
    runs = [
        r
        for r in out["cases"].get("claim_scaling", {}).get("results", {}).get("taskq", [])
        if r.get("ok")
    ]
    if not runs:
        return False
    # queued tables by size, then the finished one (JSON keys come back sorted)
    sizes = sorted(runs[0]["sizes"], key=lambda k: (k.startswith("finished"), int(k.split("_")[1])))
    labels = [k.replace("_", " ") for k in sizes]
    fig, ax = plt.subplots(figsize=(7, 4))
    for key, name in (
        ("claim_p50_ms", "claim p50"),
        ("claim_p99_ms", "claim p99"),
        ("complete_p50_ms", "complete p50"),
    ):
        vals = []
        for size in sizes:
            per_run = sorted(r["sizes"][size][key] for r in runs)
            vals.append(per_run[len(per_run) // 2])
        ax.plot(labels, vals, marker="o", label=name)
    ax.set_ylabel("ms per batch of 10")
    ax.set_title("taskq claim / complete latency vs table size")
    return _save(fig, ax, path, legend=True)


def rss_over_time(out: dict, path: Path) -> bool:
    runs = [
        r for r in out["cases"].get("rss", {}).get("results", {}).get("taskq", []) if r.get("ok")
    ]
    if not runs:
        return False
    samples = runs[0]["samples"]
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot([s[1] for s in samples], [s[2] / 1024 for s in samples], color=COLOURS["taskq"])
    ax.set_xlabel("jobs done")
    ax.set_ylabel("worker VmRSS (MiB)")
    ax.set_ylim(bottom=0)
    ax.set_title(f"taskq worker RSS over {runs[0]['jobs']:,} jobs")
    ax.grid(True, alpha=0.3)
    return _save(fig, None, path)


def soak_over_time(out: dict, path: Path) -> bool:
    runs = [
        r for r in out["cases"].get("soak", {}).get("results", {}).get("taskq", []) if r.get("ok")
    ]
    if not runs:
        return False
    r = runs[0]
    minutes = [s["t_s"] / 60 for s in r["samples"]]
    fig, (size, rows) = plt.subplots(2, 1, figsize=(7, 6), sharex=True)
    for key, name in (("total_mib", "total"), ("heap_mib", "heap"), ("index_mib", "indexes")):
        size.plot(minutes, [s[key] for s in r["samples"]], label=name)
    size.set_ylabel("jobs table (MiB)")
    size.set_ylim(bottom=0)
    size.legend(fontsize=8)
    size.grid(True, alpha=0.3)
    for key, name in (("n_live_tup", "live"), ("n_dead_tup", "dead"), ("queued", "queued")):
        rows.plot(minutes, [s[key] for s in r["samples"]], label=name)
    rows.set_xlabel("minutes")
    rows.set_ylabel("rows")
    rows.set_ylim(bottom=0)
    rows.legend(fontsize=8)
    rows.grid(True, alpha=0.3)
    size.set_title(
        f"Soak: {r['target_rate']:,.0f} jobs/s asked, {r['enqueue_per_s']:,.0f} enqueued, "
        f"{r['drain_per_s']:,.0f} finished; retention {r['retention_s']:.0f} s"
    )
    return _save(fig, None, path)


PLOTS = {
    "throughput_vs_concurrency.png": throughput_vs_concurrency,
    "enqueue_and_drain.png": drain_and_enqueue,
    "latency_percentiles.png": latency_percentiles,
    "cpu_drains.png": cpu_drains,
    "claim_scaling.png": claim_scaling,
    "rss.png": rss_over_time,
    "soak.png": soak_over_time,
}


def main() -> int:
    if len(sys.argv) != 3:
        print("usage: plot.py RESULTS.json OUT_DIR", file=sys.stderr)
        return 2
    out = json.loads(Path(sys.argv[1]).read_text())
    target = Path(sys.argv[2])
    target.mkdir(parents=True, exist_ok=True)
    written = [name for name, plot in PLOTS.items() if plot(out, target / name)]
    print(f"plots: {', '.join(written) or 'none'} in {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
