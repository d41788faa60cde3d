"""A rolling deploy: workers of the old and the new code run at once (issue 20 item 1,
docs/jobs.md "Actor options and deploys").

Two real ``taskq worker`` processes run two versions of one actor
(``tests.support.deploy_actors``): v1 with ``max_attempts=2`` and no timeout, v2 with
``max_attempts=4``, a 0.5 s timeout and priority 5. v1 starts first; v2 starts beside it
and takes its options on (``actor-config-updated``, logged once), without
``--force-update-actor-config``. Each worker consumes a queue of its own, so the test
sends each job to the version it names (``queue=``). Whoever runs a job:

- its attempts are the ones it was enqueued with (written on its row): a job of the v1
  code run by v2 gets 2 attempts, one of the v2 code run by v1 gets 4;
- how one attempt runs (the timeout) is the running code's: a 1 s job of the v1 code
  times out under v2, a 1 s job of the v2 code does not under v1;
- a job enqueued by name, by a process without the code, gets the options the last
  worker to start recorded: v2's.
"""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from taskq import AsyncClient, exit_codes
from tests.support.deploy_actors import make_registry
from tests.support.worker_harness import WorkerProcess, wait_for_states

pytestmark = pytest.mark.slow

ACTORS = "tests.support.deploy_actors:registry"


def start(target, tmp_path: Path, version: int, queue: str) -> WorkerProcess:
    return WorkerProcess(
        target,
        "--actors",
        ACTORS,
        "--queues",
        queue,
        env={**target.env, "TASKQ_TEST_CODE_VERSION": str(version)},
        log_path=tmp_path / f"v{version}.log",
    )


async def test_old_and_new_code_run_side_by_side(target, store, tmp_path: Path):
    v1_code, v2_code = make_registry(1).get("flaky"), make_registry(2).get("flaky")
    old = start(target, tmp_path, 1, "old")
    new: WorkerProcess | None = None
    try:
        old.wait_for_event("worker-started")
        new = start(target, tmp_path, 2, "new")
        new.wait_for_event("worker-started")
        (updated,) = new.events("actor-config-updated")
        assert sorted(updated["differences"]) == [
            "flaky: max_attempts 2 -> 4",
            "flaky: priority 0 -> 5",
            "flaky: timeout None -> 0.5",
        ]
        assert old.events("actor-config-updated") == []
        async with AsyncClient(store=store) as client:
            jobs = {
                "v1 code, v2 runs": await client.enqueue_with(v1_code, ("a",), {}, queue="new"),
                "v2 code, v1 runs": await client.enqueue_with(v2_code, ("b",), {}, queue="old"),
                "v1 code, 1 s, v2 runs": await client.enqueue_with(
                    v1_code, ("c",), {"hold": 1.0}, queue="new"
                ),
                "v2 code, 1 s, v1 runs": await client.enqueue_with(
                    v2_code, ("d",), {"hold": 1.0}, queue="old"
                ),
                "by name, v1 runs": await client.enqueue_with("flaky", ("e",), {}, queue="old"),
            }
            done = await wait_for_states(store, list(jobs.values()), {"dead"}, timeout=60)
            errors = {
                name: [e.error for e in await store.insight.job_errors(job_id)]
                for name, job_id in jobs.items()
            }
        assert old.proc.poll() is None and new.proc.poll() is None  # side by side throughout
    finally:
        for worker in (old, new):
            if worker is not None:
                worker.signal(signal.SIGTERM)
                assert worker.wait() == exit_codes.OK
    by_name = dict(zip(jobs, done, strict=True))
    # the budget is the one the job was enqueued with, whichever code runs it
    assert [by_name[n].attempts for n in jobs] == [2, 4, 2, 4, 4]
    assert all(j.dead_reason == "failed" for j in done)
    # each attempt ran under the code of the worker that claimed it
    assert all(e.startswith("RuntimeError: v2 ran attempt") for e in errors["v1 code, v2 runs"])
    assert all(e.startswith("RuntimeError: v1 ran attempt") for e in errors["v2 code, v1 runs"])
    # ... with that code's timeout
    assert all(
        e.startswith("JobTimedOut: job ran past its timeout of 0.5s")
        for e in errors["v1 code, 1 s, v2 runs"]
    )
    assert all(e.startswith("RuntimeError: v1 ran") for e in errors["v2 code, 1 s, v1 runs"])
    # enqueued by name: the options the last worker to start recorded (v2's)
    assert by_name["by name, v1 runs"].priority == 5
