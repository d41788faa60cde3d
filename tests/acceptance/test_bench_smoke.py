"""`python -m benchmarks.run --quick --only taskq` runs offline against the test Postgres
and writes its JSON results. A smoke test of the harness: it asserts the shape of the
results, never a timing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_quick_taskq_bench_writes_results(pg_dsn: str, tmp_path: Path) -> None:
    out = tmp_path / "quick.json"
    env = dict(os.environ, TASKQ_BENCH_PG_DSN=pg_dsn)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks.run",
            "--quick",
            "--only",
            "taskq",
            "--scenarios",
            "enqueue,drain",
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
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]

    results = json.loads(out.read_text())
    assert results["mode"] == "quick"
    assert {"machine", "systems", "cases", "targets", "derived"} <= results.keys()
    assert set(results["systems"]) == {"taskq"}
    assert set(results["cases"]) == {"enqueue", "drain_default", "drain_32"}
    enqueue = results["cases"]["enqueue"]["results"]["taskq"][0]
    assert enqueue["ok"], enqueue
    assert enqueue["batch_jobs"] > 0 and enqueue["single_jobs"] > 0
    assert {"batch_per_s", "single_per_s"} <= enqueue.keys()
    for case in ("drain_default", "drain_32"):
        (run,) = results["cases"][case]["results"]["taskq"]
        assert run["ok"], run
        assert run["jobs"] == results["cases"][case]["params"]["n"]
        assert "jobs_per_s" in results["cases"][case]["summary"]["taskq"]
    assert "batch enqueue" in proc.stdout  # the printed table


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
