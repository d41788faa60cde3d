"""`python -m benchmarks.run --quick --only taskq` runs offline against the test Postgres
and writes its JSON results. A smoke test of the harness: it asserts the shape of the
results (every issue-13 target present, the scale and soak fields), never a timing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from benchmarks import targets
from benchmarks.scenarios import claims

from taskq.worker.config import DEFAULT_ASYNC_CONCURRENCY

ROOT = Path(__file__).resolve().parents[2]


def quick_run(pg_dsn: str, tmp_path: Path, scenarios: str, only: str = "taskq") -> tuple[dict, str]:
    out = tmp_path / "quick.json"
    env = dict(os.environ, TASKQ_BENCH_PG_DSN=pg_dsn)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks.run",
            "--quick",
            "--only",
            only,
            "--scenarios",
            scenarios,
            "--out",
            str(out),
            "--workdir",
            str(tmp_path / "raw"),
            "--db-prefix",
            f"bench_smoke_{os.getpid()}_",
            "--no-plots",
            "--offline",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=280,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return json.loads(out.read_text()), proc.stdout


def only_run(results: dict, case: str, system: str = "taskq") -> dict:
    (run,) = results["cases"][case]["results"][system]
    assert run["ok"], run
    return run


def test_quick_taskq_bench_writes_results(pg_dsn: str, tmp_path: Path) -> None:
    results, stdout = quick_run(pg_dsn, tmp_path, "enqueue,drain")
    assert results["mode"] == "quick"
    assert {"machine", "systems", "cases", "targets", "derived"} <= results.keys()
    assert "autovacuum" in results["machine"]["postgres_settings"]
    assert set(results["systems"]) == {"taskq"}
    assert set(results["cases"]) == {"enqueue", "sync_enqueue", "drain_default", "drain_32"}
    enqueue = only_run(results, "enqueue")
    assert enqueue["batch_jobs"] > 0 and enqueue["single_jobs"] > 0
    assert {"batch_per_s", "single_per_s"} <= enqueue.keys()
    web = only_run(results, "sync_enqueue")  # taskq.Client, after its untimed warm-up
    assert web["client"] == "taskq.Client" and web["warmup"] > 0
    assert web["single_jobs"] == results["cases"]["sync_enqueue"]["params"]["single"]
    for case in ("drain_default", "drain_32"):
        run = only_run(results, case)
        assert run["jobs"] == results["cases"][case]["params"]["n"]
        assert {"jobs_per_s", "jobs_per_s_with_startup"} <= results["cases"][case]["summary"][
            "taskq"
        ].keys()
    assert "batch enqueue" in stdout  # the printed table
    # every target is listed; with no peer in the run, the ratios are not measured
    listed = {t["target"]: t for t in results["targets"]}
    assert listed.keys() == {t["target"] for t in targets.evaluate({}, {})}
    peer_targets = [t for name, t in listed.items() if "PgQueuer" in name or "Huey" in name]
    assert len(peer_targets) == 8
    for t in peer_targets:
        assert t == {**t, "value": targets.NOT_MEASURED, "met": None}
    assert "targets (issues 13, 24, 26):" in stdout


def test_quick_cpu_drains_beside_the_bare_executor(pg_dsn: str, tmp_path: Path) -> None:
    """The CPU-bound cases (issue 24) run taskq's cpu_bound actor and the bare
    ProcessPoolExecutor (no venv: offline) and report the figures the targets need."""
    results, stdout = quick_run(pg_dsn, tmp_path, "cpu,mixed", only="taskq,executor")
    assert set(results["cases"]) == {"cpu_drain", "cpu_drain_short", "mixed"}
    for case in ("cpu_drain", "cpu_drain_short"):
        params = results["cases"][case]["params"]
        for system in ("taskq", "executor"):
            run = only_run(results, case, system)
            assert run["jobs"] == params["n"]
            assert run["cpu_ms_per_job"] > 0  # the job bodies ran and reported their CPU
            assert {"jobs_per_s", "jobs_per_s_with_startup", "startup_ms"} <= run.keys()
        assert "jobs_per_s_with_startup" in results["cases"][case]["ratios"]["executor"]
    listed = {t["target"]: t for t in results["targets"]}
    cpu_targets = [t for name, t in listed.items() if name.startswith("CPU-bound drain")]
    assert len(cpu_targets) == 3
    for t in cpu_targets:  # a quick run is smaller than the targets' 3,000 jobs
        assert t["met"] is None
    assert "CPU drain 3,000 x 2 ms" in stdout
    # mixed work: the I/O jobs' latency idle and with the pool saturated, reported
    mixed = only_run(results, "mixed")
    assert mixed["idle"]["samples"] == mixed["busy"]["samples"] == mixed["io_jobs"]
    assert mixed["p50_ratio"] > 0 and mixed["backlog"] > 0
    # and, of that latency, the enqueue call's own time in each phase
    assert mixed["idle_enqueue"]["samples"] == mixed["busy_enqueue"]["samples"] == mixed["io_jobs"]
    assert mixed["idle_enqueue"]["p50_ms"] > 0 and mixed["busy_enqueue"]["p50_ms"] > 0
    (mixed_target,) = [t for n, t in listed.items() if n.startswith("mixed work")]
    assert mixed_target["met"] is None and "not judged" in mixed_target["value"]


@pytest.mark.timeout(300)
def test_quick_scale_ceiling_and_soak_have_their_fields(pg_dsn: str, tmp_path: Path) -> None:
    results, stdout = quick_run(pg_dsn, tmp_path, "claim,ceiling,soak")
    assert set(results["cases"]) == {"claim_scaling", "ceiling", "soak"}

    scaling = only_run(results, "claim_scaling")
    expected = [f"queued_{n}" for n in claims.QUICK_SIZES] + [f"finished_{claims.QUICK_SIZES[-1]}"]
    assert set(scaling["sizes"]) == set(expected)
    for size in scaling["sizes"].values():
        assert {"rows", "build_s", "claim_p50_ms", "claim_p99_ms", "complete_p50_ms"} <= (
            size.keys()
        )

    ceiling = only_run(results, "ceiling")
    assert ceiling["batch"] == DEFAULT_ASYNC_CONCURRENCY  # the default worker's claim
    for clients in ("clients_1", "clients_2"):
        # the case is ok only if every claimed row ended succeeded
        assert ceiling[clients]["jobs"] > 0
        assert "jobs_per_s" in ceiling[clients]

    soak = only_run(results, "soak")
    assert soak["target_rate"] == results["cases"]["soak"]["params"]["rate"]
    assert 0 < soak["enqueued"] and 0 <= soak["finished"] <= soak["enqueued"]
    assert {"enqueue_per_s", "drain_per_s", "duration_s", "retention_s"} <= soak.keys()
    assert soak["autovacuum"] in ("on", "off")  # the server's, as the judgement needs it
    # the worker is a real `taskq worker` with the soak's retention, as a user runs it
    assert soak["worker"].startswith("taskq worker --actors taskq_actors:registry")
    assert "--keep-succeeded 2 --prune-interval 4" in soak["worker"]
    # on a server with autovacuum: a throwaway cluster when the bench server has it off
    server = results["cases"]["soak"]["server"]
    bench_autovacuum = results["machine"]["postgres_settings"]["autovacuum"]["value"]
    assert server["settings"]["autovacuum"]["value"] == soak["autovacuum"]
    if bench_autovacuum == "off" and server["where"] != "the bench server":
        assert server["where"].startswith("a throwaway cluster")
        assert soak["autovacuum"] == "on" and "autovacuum off" in server["why"]
    else:  # the bench server runs autovacuum, or no cluster could be started (it says why)
        assert server["where"] == "the bench server" and server["why"]
    assert "(i) pruning soak" in stdout and f"on {server['where']}" in stdout
    assert not list((ROOT / ".pgtmp").glob("bench-*")), "the throwaway cluster was left behind"
    for point in ("start", "ref", "end"):
        assert {
            "t_s",
            "total_mib",
            "heap_mib",
            "index_mib",
            "n_live_tup",
            "n_dead_tup",
            "queued",
        } <= soak[point].keys()
    assert soak["start"]["t_s"] < soak["ref"]["t_s"] < soak["end"]["t_s"]
    assert {"ref", "end", "max"} <= soak["backlog"].keys()
    assert {"ref_mib", "end_mib"} <= soak["size"].keys()
    assert len(soak["samples"]) >= 3

    # a quick run reports the scale and soak figures but judges none of them
    listed = {t["target"]: t for t in results["targets"]}
    judged_by_size = [n for n in listed if n.startswith(("claim latency", "soak:"))]
    assert len(judged_by_size) == 4
    for name in judged_by_size:
        assert listed[name]["met"] is None and "not judged" in listed[name]["value"]
    # the ceiling fraction needs the drain, which this run did not have
    (ceiling_target,) = [t for n, t in listed.items() if "pgbench" in n]
    assert ceiling_target["value"] == targets.NOT_MEASURED
    assert "ceiling: drain_default vs ceiling" not in stdout


def test_unknown_scenario_family_is_one_clear_line(tmp_path: Path) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks.run",
            "--quick",
            "--scenarios",
            "nope",
            "--out",
            str(tmp_path / "x.json"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode != 0
    assert "unknown scenario family 'nope'" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "x.json").exists()


def test_quick_dashboard_bench_measures_every_page_on_both_stores(
    pg_dsn: str, tmp_path: Path
) -> None:
    """(n): the dashboard's pages against a filled store, Postgres and SQLite: every
    page answered (a page that is not 200 fails the run) and timed, the charts' counts
    timed. Shape only, never a timing."""
    from benchmarks.scenarios import dashboard

    results, _ = quick_run(pg_dsn, tmp_path, "dashboard")
    for case, system in (("dashboard", "taskq"), ("dashboard_sqlite", "taskq-sqlite")):
        run = only_run(results, case, system)
        assert set(run["pages"]) == set(dashboard.PAGES), case
        assert all(page["p50_ms"] > 0 for page in run["pages"].values())
        assert run["rows"] == 20_000 and run["worst_p50_ms"] > 0
        assert run["first_count_s"] >= 0 and run["minute_count_ms"] > 0
