"""`taskq worker`'s pruning flags as a user meets them: bad values end in one line and a
non-zero exit, and a real worker process started with a short retention prunes what it
was told to, and keeps what it was told to keep. Both stores."""

from __future__ import annotations

from pathlib import Path

import pytest

from taskq import AsyncClient
from tests.acceptance.test_cli import assert_one_line_error, taskq
from tests.support import worker_actors as actors
from tests.support.helpers import async_wait_until
from tests.support.worker_harness import WorkerProcess, wait_for_states


@pytest.mark.parametrize(
    ("flags", "fragment"),
    [
        (["--keep-succeeded", "-1"], "argument --keep-succeeded: expected a finite number"),
        (["--keep-succeeded", "a week"], "argument --keep-succeeded: expected a number of seconds"),
        (["--keep-succeeded", "forever"], "argument --keep-succeeded: expected a number"),
        (["--keep-dead", "never"], "argument --keep-dead: expected a number of seconds >= 0 or"),
        (["--keep-cancelled", "-3"], "argument --keep-cancelled: expected a number of seconds"),
        (["--prune-interval", "0"], "argument --prune-interval: expected a number of seconds > 0"),
        (["--prune-interval", "nan"], "argument --prune-interval: expected a finite number"),
        (["--keep-silent-workers", "0"], "argument --keep-silent-workers: expected a number"),
    ],
)
def test_bad_pruning_flags_give_one_line_and_exit_2(
    sqlite_target, flags: list[str], fragment: str
) -> None:
    proc = taskq(
        sqlite_target, "worker", "--actors", actors.__name__ + ":registry", *flags, check=False
    )
    assert proc.returncode == 2
    assert_one_line_error(proc, fragment)


def test_silent_worker_rows_must_outlive_a_heartbeat(sqlite_target) -> None:
    proc = taskq(
        sqlite_target,
        "worker",
        "--actors",
        actors.__name__ + ":registry",
        "--heartbeat-interval",
        "2",
        "--keep-silent-workers",
        "2",
        check=False,
    )
    assert proc.returncode == 1
    assert_one_line_error(
        proc, "--keep-silent-workers (2) must be longer than --heartbeat-interval (2)"
    )


async def test_a_worker_with_a_short_retention_prunes_succeeded_jobs_and_keeps_dead_ones(
    target, store, tmp_path: Path
) -> None:
    worker = WorkerProcess(
        target,
        "--keep-succeeded",
        "0",
        "--keep-dead",
        "forever",
        "--prune-interval",
        "0.3",
        log_path=tmp_path / "worker.log",
    )
    try:
        worker.wait_for_event("worker-started")
        async with AsyncClient(store=store) as client:
            dead = await client.enqueue(actors.async_too_slow, "d")  # times out: dead
            await wait_for_states(store, [dead], {"dead"})
            done = await client.enqueue_many(actors.noop, [((), {}) for _ in range(20)])

            async def pruned() -> bool:
                return all([await store.get_job(i) is None for i in done])

            # the pass that pruned them ran after the dead job ended, and kept it
            await async_wait_until(pruned, timeout=30, what="the succeeded jobs pruned")
            kept = await store.get_job(dead)
            assert kept is not None and kept.state == "dead"
        assert sum(e["jobs"] for e in worker.events("jobs-pruned")) >= len(done)
    finally:
        worker.stop()
