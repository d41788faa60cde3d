"""``python -m benchmarks.run [--quick] [--only SYSTEMS] [--scenarios FAMILIES] [--runs N]``

Runs every scenario case for taskq and each peer against the same Postgres (the server
of ``TASKQ_BENCH_PG_DSN``; each system gets a fresh ``bench_<system>`` database per
run), interleaving the systems and rotating their order from run to run, then prints
medians and taskq/peer ratios (the median of the pairwise per-run ratios), writes the
JSON results and the plots. ``--quick``: tiny sizes, one run, the slow cases skipped; it
asserts nothing about timings.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from . import machine, pgadmin, report, servers, targets, venvs
from .adapters import ALL, Adapter
from .adapters.base import Prepared
from .scenarios import CASES, FAMILIES, Case

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
RAW = RESULTS / "raw"
DOCS = HERE.parent / "docs"
DOCS_IMG = DOCS / "img"
DOC_START, DOC_END = "<!-- bench:results:start -->", "<!-- bench:results:end -->"
REDIS_HOST = "redis://127.0.0.1:6379"
PLOT_REQUIREMENTS = ("matplotlib>=3.8,<4",)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.run", description=__doc__.split("\n\n")[0]
    )
    p.add_argument("--quick", action="store_true", help="tiny sizes, one run, fast cases only")
    p.add_argument(
        "--only",
        default="",
        help="comma-separated systems (taskq = both stores); "
        f"known: {', '.join(a.name for a in ALL)}",
    )
    p.add_argument(
        "--scenarios", default="", help=f"comma-separated families: {', '.join(FAMILIES)}"
    )
    p.add_argument("--runs", type=int, default=3, help="runs per case (default 3; --quick: 1)")
    p.add_argument(
        "--out",
        type=Path,
        default=None,
        help="JSON results (default results/latest.json; --quick: results/raw/quick.json)",
    )
    p.add_argument("--no-plots", action="store_true")
    p.add_argument(
        "--workdir",
        type=Path,
        default=RAW,
        help="per-run logs and SQLite files (default results/raw)",
    )
    p.add_argument(
        "--db-prefix", default="bench_", help="prefix of the per-system databases (default bench_)"
    )
    p.add_argument(
        "--offline",
        action="store_true",
        help="never install: peers without a ready venv are 'unavailable'",
    )
    ns = p.parse_args(argv)
    if ns.runs < 1:
        p.error("--runs must be >= 1")
    return ns


def select_systems(only: str) -> list[Adapter]:
    if not only:
        return list(ALL)
    chosen = []
    for name in (s.strip() for s in only.split(",") if s.strip()):
        matches = [a for a in ALL if a.name == name or a.name.startswith(name + "-")]
        if not matches:
            raise SystemExit(
                f"benchmarks: unknown system {name!r} (known: {', '.join(a.name for a in ALL)})"
            )
        chosen.extend(m for m in matches if m not in chosen)
    return chosen


def select_cases(families: str, quick: bool) -> list[Case]:
    wanted = [f.strip() for f in families.split(",") if f.strip()]
    unknown = [f for f in wanted if f not in FAMILIES]
    if unknown:
        raise SystemExit(
            f"benchmarks: unknown scenario family {unknown[0]!r} (known: {', '.join(FAMILIES)})"
        )
    return [c for c in CASES if (not wanted or c.family in wanted) and c.params(quick) is not None]


def db_name(prefix: str, adapter: Adapter) -> str:
    return prefix + adapter.name.replace("-", "_")


def fresh_target(adapter: Adapter, admin_dsn: str | None, workdir: Path, prefix: str) -> str:
    """A clean store for one run of one system."""
    if workdir.exists():
        shutil.rmtree(workdir)
    workdir.mkdir(parents=True)
    if adapter.backend == "postgres":
        if not admin_dsn:
            raise RuntimeError("TASKQ_BENCH_PG_DSN is not set")
        return pgadmin.recreate(admin_dsn, db_name(prefix, adapter))
    if adapter.backend == "sqlite":
        return f"sqlite:///{workdir / 'store.sqlite3'}"
    if adapter.backend == "redis":
        url = f"{REDIS_HOST}/{adapter.redis_db}"
        return f"{url}#{prefix}" if adapter.redis_key_prefix else url
    return ""


def run_case(
    case: Case,
    adapters: dict[str, Adapter],
    prepared: dict[str, Prepared],
    admin_dsn: str | None,
    args: argparse.Namespace,
) -> dict:
    quick, runs = args.quick, args.runs
    params = case.params(quick) or {}
    systems = [s for s in case.systems if s in adapters]
    results: dict[str, list[dict]] = {s: [] for s in systems}
    notes: dict[str, str] = {}
    for s in systems:
        adapter, prep = adapters[s], prepared[s]
        if prep.python is None:
            notes[s] = f"unavailable: {prep.error}"
        elif case.id in adapter.not_applicable:
            notes[s] = adapter.not_applicable[case.id]
    runnable = [s for s in systems if s not in notes]
    n_runs = 1 if quick else (case.full_runs or runs)
    for i in range(n_runs):
        shift = i % max(1, len(runnable))
        for s in runnable[shift:] + runnable[:shift]:
            adapter = adapters[s]
            if i >= adapter.max_runs.get(case.id, n_runs):
                continue
            workdir = args.workdir / case.id / s / f"run{i}"
            started = time.perf_counter()
            try:
                dsn = fresh_target(adapter, admin_dsn, workdir, args.db_prefix)
                result = adapter.run(
                    prepared[s].python,
                    case.script_scenario,
                    dsn,
                    workdir,
                    {**params, **adapter.overrides.get(case.id, {})},
                    case.timeout,
                )
            except Exception as exc:
                result = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
            result["wall_s"] = time.perf_counter() - started
            results[s].append(result)
            print(
                f"  {case.id:<20} run {i + 1}/{n_runs}  {s:<14} "
                f"{report.one_line(case, result, quick)}",
                flush=True,
            )
        for s in runnable:
            if adapters[s].backend == "postgres" and admin_dsn:
                pgadmin.drop(admin_dsn, db_name(args.db_prefix, adapters[s]))
    return {
        "title": case.title,
        "family": case.family,
        "subject": case.subject,
        "script_scenario": case.script_scenario,
        "params": params,
        "runs": n_runs,
        "notes": notes,
        "case_notes": case.notes,
        "results": results,
        "metrics": [m.__dict__ for m in case.metrics_for(quick)],
        "summary": report.summarise(case, results, quick),
        "ratios": report.ratios(case, results, quick),
    }


def make_plots(out_json: Path, img_dir: Path, offline: bool) -> str:
    built = venvs.ensure("plot", PLOT_REQUIREMENTS, offline=offline)
    if built.python is None:
        return f"plots skipped: matplotlib unavailable ({built.error})"
    proc = subprocess.run(
        [str(built.python), str(HERE / "plot.py"), str(out_json), str(img_dir)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if proc.returncode != 0:
        return "plots failed: " + (proc.stderr.strip().splitlines() or ["?"])[-1]
    return proc.stdout.strip()


def update_docs(generated: str) -> str:
    """Replace the generated section of docs/benchmarks.md (between the markers)."""
    doc = DOCS / "benchmarks.md"
    if not doc.exists() or DOC_START not in doc.read_text():
        return f"{doc}: no '{DOC_START}' marker; results not pasted"
    text = doc.read_text()
    head, rest = text.split(DOC_START, 1)
    _, tail = rest.split(DOC_END, 1) if DOC_END in rest else ("", "")
    doc.write_text(f"{head}{DOC_START}\n{generated}\n{DOC_END}{tail}")
    return f"{doc}: results section regenerated"


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    systems = select_systems(args.only)
    cases = select_cases(args.scenarios, args.quick)
    wanted = {s for c in cases for s in c.systems}
    adapters = {a.name: a for a in systems if a.name in wanted}
    admin_dsn = os.environ.get("TASKQ_BENCH_PG_DSN")
    needs_pg = any(a.backend == "postgres" for a in adapters.values())
    if needs_pg and not admin_dsn:
        print(
            "benchmarks: TASKQ_BENCH_PG_DSN is not set (e.g. "
            "postgresql://root@127.0.0.1:5432/test); `make bench` sets it",
            file=sys.stderr,
        )
        return 2
    pg_version, pg_settings = None, None
    if needs_pg:
        try:
            pg_version = pgadmin.server_version(admin_dsn)
            pg_settings = pgadmin.settings(admin_dsn)
        except Exception as exc:
            print(
                f"benchmarks: cannot reach Postgres at {admin_dsn}: {exc}".splitlines()[0],
                file=sys.stderr,
            )
            return 2

    started_at = datetime.now(UTC)
    print(
        f"taskq benchmarks ({'quick' if args.quick else 'full'}): "
        f"{len(cases)} cases, systems: {', '.join(adapters)}",
        flush=True,
    )
    prepared: dict[str, Prepared] = {}
    for name, adapter in adapters.items():
        prepared[name] = adapter.prepare(offline=args.offline)
        state = prepared[name].version or f"unavailable: {prepared[name].error}"
        print(f"  {name:<14} {state}", flush=True)

    out: dict[str, object] = {
        "mode": "quick" if args.quick else "full",
        "runs": 1 if args.quick else args.runs,
        "started_at": started_at.isoformat(timespec="seconds"),
        "command": "python -m benchmarks.run "
        + " ".join(argv if argv is not None else sys.argv[1:]),
        "machine": machine.describe(pg_version, pg_settings),
        "systems": {
            n: {
                "label": a.label,
                "version": prepared[n].version,
                "available": prepared[n].python is not None,
                "error": prepared[n].error,
                "defaults": a.defaults,
                "backend": a.backend,
                "requirements": list(a.requirements),
            }
            for n, a in adapters.items()
        },
        "cases": {},
    }
    for case in cases:
        print(f"{case.title}", flush=True)
        if case.default_server and needs_pg:
            with servers.default_vacuum_server(admin_dsn, pg_settings) as (dsn, server):
                print(f"  on {server['where']} ({server['why']})", flush=True)
                result = run_case(case, adapters, prepared, dsn, args)
            out["cases"][case.id] = {**result, "server": server}
            continue
        out["cases"][case.id] = run_case(case, adapters, prepared, admin_dsn, args)
    out["finished_at"] = datetime.now(UTC).isoformat(timespec="seconds")
    out["derived"] = report.derived(out["cases"])
    out["targets"] = targets.evaluate(out["cases"], out["derived"])

    print()
    print(report.table(out, args.quick))
    for line in report.server_lines(out):
        print(line.removeprefix("- ").replace("**", ""))
    print()
    print(report.targets_table(out["targets"]))
    out_json = args.out or (args.workdir / "quick.json" if args.quick else RESULTS / "latest.json")
    out_json.parent.mkdir(parents=True, exist_ok=True)
    out_json.write_text(json.dumps(out, indent=1, sort_keys=True, default=str) + "\n")
    print(f"\nresults: {out_json}")
    if not args.quick and args.out is None:
        print(update_docs(report.markdown(out, args.quick)))
    if not args.no_plots:
        img_dir = DOCS_IMG if not args.quick else args.workdir / "img"
        print(make_plots(out_json, img_dir, offline=args.offline or args.quick))
    return 0


if __name__ == "__main__":
    sys.exit(main())
