"""The failure x stage matrix (issue 4, item 9), with real processes and real signals.

Failures: segfault, ``os._exit``, ``sys.exit``, an exception, SIGKILL from outside, memory
exhaustion under ``RLIMIT_AS``, a timeout. Stages: in the initializer, in the job body,
while returning the result. Every case asserts which job failed and how, that a bystander
running at the same time on the other process succeeded and was not charged, that the pool
still serves, and that no process is left behind after ``close``.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
from pathlib import Path

import pytest

from taskq.exceptions import JobTimedOut, ProcessDied, ResultDropped
from taskq.procpool import JobFailed
from tests.support.procpool_actors import FAILURES
from tests.support.procpool_support import (
    all_breaks,
    assert_no_process_left,
    break_count,
    capture_taskq_logs,
    events,
    make_pool,
    running_pid,
    started,
    until,
)

JOB_TIMEOUT = 0.5

# failure -> (exit_signal, exit_code, metric cause) of a crash in the job body or the return
CRASHES = {
    "segfault": ("SIGSEGV", None, "SIGSEGV"),
    "os_exit": (None, 3, "exit_code_3"),
    "sys_exit": (None, 4, "exit_code_4"),
    "sigkill": ("SIGKILL", None, "SIGKILL"),
}

# failure -> metric cause of a failing initializer
INITIALIZER_CAUSES = {
    "segfault": "SIGSEGV",
    "os_exit": "exit_code_3",
    "sys_exit": "exit_code_4",
    "exception": "initializer_failed",
    "sigkill": "SIGKILL",
    "memory": "initializer_failed",
    "timeout": "initializer_timeout",
}


@pytest.mark.parametrize("stage", ["job", "return"])
@pytest.mark.parametrize("failure", FAILURES)
async def test_matrix_failure_in_job_or_result(
    failure: str, stage: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    capture_taskq_logs(caplog)
    actor = "fail_in_job" if stage == "job" else "fail_in_return"
    pool = make_pool(tmp_path)
    running = await started(pool)
    pids = list(pool.pids)
    breaks_before = all_breaks()
    causes_before = {cause: break_count(cause) for _s, _c, cause in CRASHES.values()}
    try:
        release = tmp_path / "release"
        bystander = asyncio.create_task(
            pool.submit("hold", json.dumps([str(release)]), "{}", job_id="bystander", attempt=1)
        )
        bystander_pid = await running_pid(pool, "bystander")
        culprit = asyncio.create_task(
            pool.submit(
                actor,
                json.dumps([failure]),
                "{}",
                job_id="culprit",
                attempt=1,
                timeout=JOB_TIMEOUT if failure == "timeout" else 30.0,
            )
        )
        if failure == "sigkill":
            pid_file = tmp_path / f"{stage}.pid"
            await until(pid_file.exists, what="the culprit to write its pid")
            culprit_pid = int(pid_file.read_text())
            assert pool.running_jobs["culprit"] == culprit_pid  # the pool knows who runs it
            os.kill(culprit_pid, signal.SIGKILL)

        with pytest.raises(Exception) as raised:
            await culprit
        error = raised.value
        if failure in CRASHES:
            exit_signal, exit_code, cause = CRASHES[failure]
            assert break_count(cause) == causes_before[cause] + 1
            assert isinstance(error, ProcessDied)
            assert (error.exit_signal, error.exit_code) == (exit_signal, exit_code)
            assert error.pid != bystander_pid
            assert f"while running {actor}" in error.cause
            assert all_breaks() == breaks_before + 1  # the culprit's break, nobody else's
            [broken] = events(caplog, "process_pool_broken")
            assert broken["job"] == "culprit" and broken["actor"] == actor
            assert broken["level"] == "ERROR" and broken["cause"] == error.cause
            pids.append(error.pid)
        elif failure == "timeout":
            assert isinstance(error, JobTimedOut)
            assert all_breaks() == breaks_before  # a timeout is a failure, not a crash
        else:  # exception, memory: the job failed cleanly; its process lives on
            expected_type = "MemoryError" if failure == "memory" else "ValueError"
            if stage == "job":
                assert isinstance(error, JobFailed)
                assert error.error_type == expected_type
                assert f"{expected_type}" in error.remote_traceback
            else:  # the job ran; only its result cannot be stored: dropped, not failed
                assert isinstance(error, ResultDropped)
                assert "not JSON-serialisable" in error.reason and expected_type in error.reason
            assert all_breaks() == breaks_before
            assert events(caplog, "process_pool_broken") == []

        # the bystander on the other process was running all along and is unharmed
        assert not bystander.done()
        assert pool.running_jobs.get("bystander") == bystander_pid
        release.touch()
        assert await bystander == str(bystander_pid)

        # the pool still serves, with a full complement of processes
        await until(lambda: pool.processes_ready == 2, what="the replacement")
        assert await pool.submit("add", "[2, 3]", "{}") == "5"
        pids.extend(pool.pids)
    finally:
        await running.stop()
    assert pool.processes_alive == 0
    assert_no_process_left(pids)


@pytest.mark.parametrize("failure", FAILURES)
async def test_matrix_failure_in_the_initializer(
    failure: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """One process's initializer fails: no job fails, the slot is replaced, jobs run."""
    capture_taskq_logs(caplog)
    (tmp_path / f"init-{failure}").touch()  # exactly one process claims it
    cause = INITIALIZER_CAUSES[failure]
    before = break_count(cause)
    # the hanging initializer costs this timeout; every other process must start within
    # it, on a loaded machine too (at 1 s, healthy starts timed out under load)
    pool = make_pool(tmp_path, initializer_timeout=6.0 if failure == "timeout" else 20.0)
    starting = asyncio.create_task(pool.start())
    pids: list[int] = []
    try:
        if failure == "sigkill":
            pid_file = tmp_path / "initializer.pid"
            await until(pid_file.exists, what="the initializer to write its pid")
            pids.append(int(pid_file.read_text()))
            os.kill(pids[0], signal.SIGKILL)
        await starting

        # jobs submitted while the slot is being replaced all succeed
        results = await asyncio.gather(
            *(pool.submit("whoami", "[]", "{}", job_id=f"j{i}") for i in range(4))
        )
        served_by = {json.loads(r)["pid"] for r in results}
        for result in results:  # and every process that served ran the actor initializer
            assert json.loads(result)["warm_pid"] == json.loads(result)["pid"]

        await until(
            lambda: pool.processes_ready == 2 and sum(pool.slot_generations()) == 3,
            what="the failed slot to be replaced",
        )
        assert break_count(cause) == before + 1
        [failed] = events(caplog, "process-pool-initializer-failed")
        assert failed["level"] == "ERROR"
        if cause == "initializer_failed":
            expected = "MemoryError" if failure == "memory" else "ValueError: boom"
            assert expected in failed["traceback"]
        assert events(caplog, "process_pool_broken") == []  # no job was running

        # state replay: every process that took jobs ran both initializers first
        inits = (tmp_path / "inits.log").read_text().split("\n")
        for pid in set(pool.pids) | served_by:
            assert f"registry {pid}" in inits and f"actor {pid}" in inits
        assert await pool.submit("add", "[2, 3]", "{}") == "5"
        pids.extend(pool.pids)
    finally:
        pool.stop()  # started or still starting
        await pool.run()
    assert_no_process_left(pids)
