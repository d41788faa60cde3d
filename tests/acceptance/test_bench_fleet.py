"""`python -m benchmarks.fleet --quick`: the fleet benchmark's harness, small (2 workgroups
of 5 real workers, 2,000 jobs, its own Postgres cluster and PgBouncer). Asserts what the
run must never show at any size (a job lost, run twice or dead, a connection error, the
role's limit passed, PgBouncer's restart losing work) and the shape of its results;
never a timing."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import pgbouncer

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from scripts.ensure_postgres import ThrowawayCluster  # noqa: E402

pytestmark = pytest.mark.slow


@pytest.fixture
def workdir() -> Iterator[Path]:
    """Outside pytest's tmp_path, whose root-only parent the cluster's postgres user
    cannot enter."""
    path = Path(tempfile.mkdtemp(prefix="taskq-fleet-smoke-"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def test_the_quick_fleet_runs_every_job_once_through_pgbouncer_and_direct(
    tmp_path: Path, workdir: Path
) -> None:
    if pgbouncer.installed() is None:
        pytest.skip(f"pgbouncer is not installed ({pgbouncer.INSTALL})")
    if not ThrowawayCluster(tmp_path, 0).available:
        pytest.skip("no initdb/pg_ctl here: the fleet benchmark builds a cluster of its own")
    out = tmp_path / "fleet.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks.fleet",
            "--quick",
            "--workdir",
            str(workdir / "work"),
            "--out",
            str(out),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    result = json.loads(out.read_text())
    pooled, direct = result["pooled"], result["direct"]
    jobs = result["params"]["jobs"]
    for drain in (pooled["drain"], pooled["drain_restart"], direct["drain"]):
        assert drain["runs"] == {"never": 0, "once": jobs, "twice_or_more": 0}
        assert drain["states"] == {"succeeded": jobs}
    assert pooled["drain_restart"]["pgbouncer_restart"]["at_finished"] >= jobs // 2
    assert pooled["connections"]["peak"] <= result["params"]["role_connection_limit"]
    assert pooled["too_many_connections"] == 0
    assert pooled["events_before_restart"]["store-unavailable"] == 0
    assert pooled["events"]["worker-cannot-start"] == 0
    assert pooled["events"]["listen-unavailable"] == 0  # the relay listens for them
    assert pooled["wakeups"]["n"] == result["params"]["wakeups"]
    assert {v["target"] for v in result["verdicts"]} >= {
        "a PgBouncer restart in the middle of the drain loses nothing"
    }
    # the cluster it built is gone
    assert not (workdir / "work" / "pg").exists()
