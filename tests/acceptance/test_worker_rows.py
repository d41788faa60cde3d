"""`taskq workers` tells the truth about a worker that was SIGKILLed: its row is shown
`stale` once it stops being touched, not as a live worker until it is pruned. Real
worker processes, real signals, both stores."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

from tests.acceptance.test_cli import taskq
from tests.support.helpers import wait_until
from tests.support.worker_harness import WorkerProcess

pytestmark = pytest.mark.slow


def _rows(target, *extra: str) -> dict[str, dict]:
    out = taskq(target, "workers", "--json", *extra).stdout
    return {row["id"]: row for row in json.loads(out)}


async def test_a_sigkilled_worker_is_shown_stale(target, store, tmp_path: Path) -> None:
    worker = WorkerProcess(target, log_path=tmp_path / "w.log")
    try:
        started = worker.wait_for_event("worker-started")
        worker_id = started["worker_id"]
        assert started["group"] == "default"  # --worker-group, as docs/worker.md says
        row = _rows(target)[worker_id]  # default --stale-after 30 s, heartbeats every 0.3 s
        assert row["status"] == "alive" and row["pid"] == worker.pid
        assert "alive" in taskq(target, "workers").stdout
        worker.signal(signal.SIGKILL)
        worker.wait()
        stale = wait_until(
            lambda: _rows(target, "--stale-after", "1")[worker_id]["status"] == "stale",
            timeout=30,
            what="the SIGKILLed worker's row to read stale",
        )
        assert stale
        assert _rows(target, "--stale-after", "1")[worker_id]["last_seen_seconds_ago"] > 1
        human = taskq(target, "workers", "--stale-after", "1").stdout.splitlines()
        (line,) = [h for h in human if h.startswith(worker_id)]
        assert line.split()[1] == "stale"
    finally:
        worker.stop()
