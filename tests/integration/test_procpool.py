"""The process pool beyond the matrix: seed 002's Verify lines, recycling, limits, lifecycle.

Tests named ``test_verify_*`` carry a "Verify" line of seed 002 (process pool recovery).
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import os
import signal
import subprocess
import sys
import textwrap
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

import pytest

from taskq.exceptions import (
    ActorNotFound,
    ConfigError,
    JobCancelled,
    JobTimedOut,
    PayloadTooLarge,
    PoolClosed,
    ProcessDied,
    ResultDropped,
)
from taskq.procpool import BreakerState, JobFailed, PayloadUndecodable, ProcessPool, causes
from taskq.procpool.priority import SLICE_NS
from tests.support import procpool_actors
from tests.support.helpers import wait_until
from tests.support.procpool_support import (
    CONTROL_ENV,
    REGISTRY_REF,
    all_breaks,
    assert_no_process_left,
    capture_taskq_logs,
    events,
    gauge,
    gone,
    holding,
    make_pool,
    parent_of,
    recycle_count,
    running_pid,
    started,
    until,
)


async def pid_of_next_job(pool: ProcessPool) -> int:
    return int(json.loads(await pool.submit("whoami", "[]", "{}"))["pid"])


# -- seed 002, section 1: the stdlib executor's blast radius ----------------------------


def test_verify_stdlib_submissions_after_a_crash_raise_broken_process_pool() -> None:
    """What we replace: after one crash every later submission fails, for good. (Under
    spawn: a fork server started here, not by a pool, would be the one every later pool
    in this process forks from, without the pool's preload.)"""
    executor = ProcessPoolExecutor(max_workers=2, mp_context=multiprocessing.get_context("spawn"))
    try:
        assert executor.submit(pow, 2, 5).result(timeout=30) == 32
        with pytest.raises(BrokenProcessPool):
            executor.submit(procpool_actors.perform, "os_exit", "job").result(timeout=30)
        for _ in range(3):  # it never recovers by itself
            with pytest.raises(BrokenProcessPool):
                executor.submit(pow, 2, 5).result(timeout=30)
    finally:
        executor.shutdown(wait=True, cancel_futures=True)


async def test_verify_a_crash_does_not_end_the_service_the_next_request_succeeds(
    tmp_path: Path,
) -> None:
    pool = make_pool(tmp_path, size=1)
    running = await started(pool)
    try:
        with pytest.raises(ProcessDied):
            await pool.submit("fail_in_job", '["os_exit"]', "{}")
        for _ in range(3):
            assert await pool.submit("add", "[20, 22]", "{}") == "42"
    finally:
        await running.stop()
    assert_no_process_left()


# -- seed 002, section 2: rebuilds are single ------------------------------------------


async def test_verify_first_call_raises_next_call_succeeds_and_generation_is_two(
    tmp_path: Path,
) -> None:
    pool = make_pool(tmp_path, size=1)
    running = await started(pool)
    try:
        assert pool.generation == 1
        with pytest.raises(ProcessDied):
            await pool.submit("fail_in_job", '["segfault"]', "{}")
        assert await pool.submit("add", "[1, 1]", "{}") == "2"
        assert pool.generation == 2  # one replacement, not one per caller
    finally:
        await running.stop()


async def test_verify_rebuilds_are_single_n_concurrent_failures_n_replacements(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    capture_taskq_logs(caplog)
    pool = make_pool(tmp_path, size=3)
    running = await started(pool)
    breaks_before = all_breaks()
    try:
        first_pids = set(pool.pids)
        outcomes = await asyncio.gather(
            *(pool.submit("fail_in_job", '["segfault"]', "{}", job_id=f"c{i}") for i in range(3)),
            return_exceptions=True,
        )
        assert all(isinstance(o, ProcessDied) for o in outcomes), outcomes
        assert {o.pid for o in outcomes} == first_pids  # one death per process, each named
        await until(lambda: pool.processes_ready == 3, what="three replacements")
        assert pool.generation == 6
        assert pool.slot_generations() == [2, 2, 2]
        assert not first_pids & set(pool.pids)
        assert all_breaks() == breaks_before + 3
        broken = events(caplog, "process_pool_broken")
        assert sorted(b["job"] for b in broken) == ["c0", "c1", "c2"]
        ready = events(caplog, "process-pool-process-ready")
        assert len(ready) == 6  # three first processes + exactly three replacements
    finally:
        await running.stop()
    assert_no_process_left()


# -- seed 002, section 3: retries are deliberate ---------------------------------------


async def test_verify_a_job_that_always_crashes_propagates_after_one_retry(tmp_path: Path) -> None:
    """The worker retries an idempotent crash once on a fresh process; the pool gives
    each attempt its own process and names each death; ordinary jobs still succeed."""
    pool = make_pool(tmp_path, size=1)
    running = await started(pool)
    try:
        deaths = []
        for attempt in (1, 2):
            with pytest.raises(ProcessDied) as died:
                await pool.submit(
                    "fail_in_job", '["segfault"]', "{}", job_id="poison", attempt=attempt
                )
            deaths.append(died.value)
        assert deaths[0].pid != deaths[1].pid  # the retry ran on a fresh process
        assert all(d.exit_signal == "SIGSEGV" for d in deaths)
        assert await pool.submit("add", "[3, 4]", "{}") == "7"
    finally:
        await running.stop()


# -- seed 002, section 4: causes are prevented ---------------------------------------


async def test_verify_six_jobs_run_in_three_distinct_worker_processes(tmp_path: Path) -> None:
    before = recycle_count("max_tasks")
    pool = make_pool(tmp_path, size=1, max_tasks_per_child=2)
    running = await started(pool)
    try:
        results = [json.loads(await pool.submit("whoami", "[]", "{}")) for _ in range(6)]
        pids = [r["pid"] for r in results]
        assert len(set(pids)) == 3
        assert pids[0] == pids[1] and pids[2] == pids[3] and pids[4] == pids[5]
        assert all(r["warm_pid"] == r["pid"] for r in results)  # initializers replayed
        assert recycle_count("max_tasks") == before + 3
    finally:
        await running.stop()
    assert_no_process_left()


async def test_verify_the_oversized_payload_raises_payload_too_large_without_breaking_the_pool(
    tmp_path: Path,
) -> None:
    # max_tasks_per_child=1: had the payload been sent, the next job would meet a new pid
    pool = make_pool(tmp_path, size=1, max_tasks_per_child=1, max_payload_bytes=1000)
    running = await started(pool)
    try:
        await pid_of_next_job(pool)
        await until(
            lambda: pool.generation == 2 and pool.processes_ready == 1,
            what="the recycled process's replacement",
        )
        ready_pid = pool.pids[0]
        breaks_before = all_breaks()
        with pytest.raises(PayloadTooLarge, match="1000 bytes"):
            await pool.submit("echo_size", json.dumps(["x" * 1000]), "{}")
        with pytest.raises(PayloadTooLarge):  # bytes, not characters: 400 x 3-byte "€"
            await pool.submit("echo_size", json.dumps(["€" * 400], ensure_ascii=False), "{}")
        assert await pid_of_next_job(pool) == ready_pid  # nothing reached the process
        assert await pool.submit("echo_size", json.dumps(["x" * 900]), "{}") == "900"
        assert all_breaks() == breaks_before
    finally:
        await running.stop()


async def test_recycles_by_memory_between_jobs(tmp_path: Path) -> None:
    before = recycle_count("max_memory")
    pool = make_pool(tmp_path, size=1, max_memory_per_child_mib=150)
    running = await started(pool)
    try:
        small = await pid_of_next_job(pool)
        assert await pid_of_next_job(pool) == small  # under the limit: no recycling
        grown = int(await pool.submit("grow", "[200]", "{}"))  # the job itself completes
        assert grown == small
        assert recycle_count("max_memory") == before + 1
        assert await pid_of_next_job(pool) != grown
    finally:
        await running.stop()


# -- seed 002, section 5: breaks are observable ----------------------------------------


async def test_verify_the_event_includes_job_name_payload_size_and_pool_generation(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    capture_taskq_logs(caplog)
    (tmp_path / "init-rlimit-8192").touch()  # every process: RLIMIT_AS soft 8 GiB
    pool = make_pool(tmp_path, size=1)
    running = await started(pool)
    args = json.dumps(["segfault"])
    try:
        await pool.submit("add", "[1, 2]", "{}")
        with pytest.raises(ProcessDied) as died:
            await pool.submit("fail_in_job", args, "{}", job_id="job-1", attempt=2)
    finally:
        await running.stop()
    [event] = events(caplog, "process_pool_broken")
    assert event["level"] == "ERROR"
    assert event["actor"] == "fail_in_job" and event["job"] == "job-1"
    assert event["attempt"] == 2
    assert event["payload_bytes"] == len(args) + len("{}")
    assert event["pool_generation"] == 1 and event["slot_generation"] == 1
    assert event["worker_memory_limit_mib"] == 8192
    assert event["exit_signal"] == "SIGSEGV" and event["exit_code"] is None
    assert event["pid"] == died.value.pid
    assert event["cause"] == f"process {died.value.pid} killed by SIGSEGV while running fail_in_job"
    assert isinstance(event["recent_oom_kills"], int) and event["recent_oom_kills"] >= -1


def test_verify_running_it_here_shows_whether_dmesg_is_readable() -> None:
    try:
        done = subprocess.run(
            ["dmesg", "--since", "-5min"], capture_output=True, timeout=5, check=False
        )
        readable = done.returncode == 0
    except OSError:
        readable = False
    found = causes.dmesg_oom_kills()
    assert (found >= 0) == readable


async def test_an_oom_kill_is_named_from_the_cgroup_counter(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, cgroup: tuple[Path, Path]
) -> None:
    """The kernel is not asked to OOM-kill here: a copy of this process's memory cgroup
    files stands in for /sys/fs/cgroup, its oom_kill counter goes up, and the job's process
    is SIGKILLed from outside, as the OOM killer would."""
    capture_taskq_logs(caplog)
    root, counter = cgroup
    before = all_breaks()
    pool = make_pool(tmp_path, size=1, cgroup_root=root)
    running = await started(pool)
    try:
        job, pid = await holding(pool, tmp_path / "never", "victim")
        counter.write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 8\n")
        os.kill(pid, signal.SIGKILL)
        with pytest.raises(ProcessDied) as died:
            await job
    finally:
        await running.stop()
    assert "OOM kill" in died.value.cause and "oom_kill +1" in died.value.cause
    assert died.value.exit_signal == "SIGKILL"
    [event] = events(caplog, "process_pool_broken")
    assert event["recent_oom_kills"] == 1
    assert all_breaks() == before + 1


async def test_without_a_cgroup_counter_recent_oom_kills_come_from_dmesg_or_are_minus_one(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    capture_taskq_logs(caplog)
    pool = make_pool(tmp_path, size=1, cgroup_root=tmp_path / "no-cgroup-here")
    running = await started(pool)
    try:
        with pytest.raises(ProcessDied):
            await pool.submit("fail_in_job", '["segfault"]', "{}")
    finally:
        await running.stop()
    [event] = events(caplog, "process_pool_broken")
    dmesg_readable = causes.dmesg_oom_kills() >= 0
    assert (event["recent_oom_kills"] >= 0) == dmesg_readable


def test_this_machine_exposes_a_readable_oom_counter_or_none() -> None:
    counter = causes.OomCounter.for_pid(os.getpid())
    if counter is None:
        pytest.skip("no memory cgroup counter readable here")
    assert isinstance(counter.read(), int)


# -- the payload and the result -------------------------------------------------------


async def test_an_undecodable_payload_is_its_own_error_never_a_crash(tmp_path: Path) -> None:
    pool = make_pool(tmp_path, size=1)
    running = await started(pool)
    breaks_before = all_breaks()
    try:
        pid = await pid_of_next_job(pool)
        with pytest.raises(PayloadUndecodable, match="cannot be decoded"):
            await pool.submit("add", "[1, 2", "{}")
        with pytest.raises(PayloadUndecodable, match="JSON array"):
            await pool.submit("add", '{"a": 1}', "{}")
        assert await pid_of_next_job(pool) == pid  # the same process serves on
        assert all_breaks() == breaks_before
    finally:
        await running.stop()


async def test_a_result_that_is_not_json_is_dropped_not_a_failure_nor_a_crash(
    tmp_path: Path,
) -> None:
    pool = make_pool(tmp_path, size=1)
    running = await started(pool)
    breaks_before = all_breaks()
    try:
        pid = await pid_of_next_job(pool)
        with pytest.raises(ResultDropped, match="not JSON-serialisable") as dropped:
            await pool.submit("not_json", "[]", "{}")
        assert "TypeError" in dropped.value.reason
        assert await pid_of_next_job(pool) == pid  # the process lives on
        assert all_breaks() == breaks_before
    finally:
        await running.stop()


async def test_a_result_over_the_limit_is_dropped_not_a_failure_nor_a_crash(
    tmp_path: Path,
) -> None:
    pool = make_pool(tmp_path, size=1, max_result_bytes=10_000)
    running = await started(pool)
    try:
        pid = await pid_of_next_job(pool)
        with pytest.raises(ResultDropped, match="20002 bytes, over the limit of 10000"):
            await pool.submit("huge_result", "[20000]", "{}")
        assert await pool.submit("huge_result", "[100]", "{}") == json.dumps("x" * 100)
        assert await pid_of_next_job(pool) == pid
    finally:
        await running.stop()


async def test_job_failed_carries_the_remote_type_message_and_traceback(tmp_path: Path) -> None:
    pool = make_pool(tmp_path, size=1)
    running = await started(pool)
    try:
        with pytest.raises(JobFailed) as failed:
            await pool.submit("fail_in_job", '["exception"]', "{}")
    finally:
        await running.stop()
    assert failed.value.error_type == "ValueError"
    assert failed.value.error_message == "boom in the job"
    assert "Traceback (most recent call last)" in failed.value.remote_traceback
    assert "procpool_actors.py" in failed.value.remote_traceback
    assert str(failed.value).endswith("ValueError: boom in the job")


# -- lifecycle -----------------------------------------------------------------------


async def test_an_idle_process_killed_from_outside_is_replaced_and_nobody_is_charged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    capture_taskq_logs(caplog)
    pool = make_pool(tmp_path, size=2)
    running = await started(pool)
    breaks_before = all_breaks()
    try:
        victim = pool.pids[0]
        os.kill(victim, signal.SIGKILL)
        await until(
            lambda: victim not in pool.pids and pool.processes_ready == 2,
            what="the idle process to be replaced",
        )
        results = await asyncio.gather(*(pool.submit("add", "[1, 1]", "{}") for _ in range(4)))
        assert results == ["2"] * 4
        assert all_breaks() == breaks_before
        assert events(caplog, "process-pool-process-lost")
    finally:
        await running.stop()
    assert_no_process_left([victim])


async def test_a_cancelled_job_takes_its_process_down_and_the_pool_replaces_it(
    tmp_path: Path,
) -> None:
    pool = make_pool(tmp_path, size=1)
    running = await started(pool)
    breaks_before = all_breaks()
    try:
        job = asyncio.create_task(
            pool.submit("hold", json.dumps([str(tmp_path / "never")]), "{}", job_id="slow")
        )
        pid = await running_pid(pool, "slow")
        job.cancel()
        with pytest.raises(asyncio.CancelledError):
            await job
        await until(lambda: gone(pid), what="the cancelled job's process to end")
        assert await pid_of_next_job(pool) != pid
        assert all_breaks() == breaks_before
    finally:
        await running.stop()


async def test_cancel_kills_that_jobs_process_only_and_is_no_break(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The hook job cancellation builds on: the job's process gets SIGTERM, the grace,
    SIGKILL (this job ignores SIGTERM) and is reaped before ``cancel`` returns; its
    ``run`` raises JobCancelled; a bystander runs on; nothing counts as a break (with a
    threshold of 0, one break would open the breaker); the slot restarts with no backoff."""
    capture_taskq_logs(caplog)
    pool = make_pool(tmp_path, size=2, breaker_threshold=0, kill_grace=0.3)
    running = await started(pool)
    breaks_before = all_breaks()
    try:
        release = tmp_path / "release"
        bystander = asyncio.create_task(
            pool.submit("hold", json.dumps([str(release)]), "{}", job_id="bystander")
        )
        bystander_pid = await running_pid(pool, "bystander")
        pid_file = tmp_path / "stubborn.pid"
        victim = asyncio.create_task(
            pool.submit("stubborn", json.dumps([str(pid_file)]), "{}", job_id="victim")
        )
        await until(pid_file.exists, what="the victim to ignore SIGTERM")
        victim_pid = pool.running_jobs["victim"]
        assert victim_pid == int(pid_file.read_text())
        generation = pool.generation

        assert await pool.cancel("victim") is True
        assert gone(victim_pid)  # killed and reaped before cancel returned
        with pytest.raises(JobCancelled, match="stubborn was cancelled"):
            await victim
        assert await pool.cancel("victim") is False  # no longer running
        assert await pool.cancel("never-ran") is False

        # the bystander on the other process was running all along and is unharmed
        assert not bystander.done()
        assert pool.running_jobs == {"bystander": bystander_pid}
        release.touch()
        assert await bystander == str(bystander_pid)

        # no break, the breaker unmoved, no crash report, no backoff before the restart
        assert all_breaks() == breaks_before
        assert pool.breaker_state is BreakerState.CLOSED and not pool.breaker_open
        assert events(caplog, "process_pool_broken") == []
        assert events(caplog, "process-pool-restart-scheduled") == []
        [cancelled] = events(caplog, "process-pool-job-cancelled")
        assert cancelled["job"] == "victim" and cancelled["pid"] == victim_pid
        await until(
            lambda: pool.processes_ready == 2 and pool.generation == generation + 1,
            what="the cancelled job's slot to be replaced",
        )
        assert victim_pid not in pool.pids
        assert await pool.submit("add", "[2, 3]", "{}") == "5"
    finally:
        await running.stop()
    assert_no_process_left([victim_pid])


async def test_stop_is_idempotent_stops_running_jobs_and_leaves_no_process(tmp_path: Path) -> None:
    pool = make_pool(tmp_path, size=2, stop_grace=1.0)
    await pool.start()
    running = asyncio.create_task(pool.run())
    breaks_before = all_breaks()
    alive_before = gauge("taskq_process_pool_processes_alive")
    pids = list(pool.pids)
    job = asyncio.create_task(
        pool.submit("hold", json.dumps([str(tmp_path / "never")]), "{}", job_id="busy")
    )
    await running_pid(pool, "busy")
    pool.stop()
    pool.stop()  # idempotent, never blocks
    await running  # run returns once every process is reaped
    with pytest.raises(PoolClosed):
        await job  # stopped under it: given back, not a crash
    with pytest.raises(PoolClosed):
        await pool.submit("add", "[1, 2]", "{}")
    assert all_breaks() == breaks_before
    assert gauge("taskq_process_pool_processes_alive") == alive_before - 2
    assert_no_process_left(pids)


async def test_a_timed_out_job_that_ignores_sigterm_is_killed_after_the_grace(
    tmp_path: Path,
) -> None:
    pool = make_pool(tmp_path, size=1, kill_grace=0.3)
    running = await started(pool)
    try:
        pid_file = tmp_path / "stubborn.pid"
        job = asyncio.create_task(
            pool.submit("stubborn", json.dumps([str(pid_file)]), "{}", timeout=2.0)
        )
        await until(pid_file.exists, what="the job to ignore SIGTERM")
        with pytest.raises(JobTimedOut):
            await job
        assert gone(int(pid_file.read_text()))  # reaped before JobTimedOut was raised
        assert await pool.submit("add", "[1, 2]", "{}") == "3"
    finally:
        await running.stop()
    assert_no_process_left()


@pytest.mark.parametrize(
    ("stop_grace", "hurry"), [(0.3, False), (3600.0, True)], ids=["after-the-grace", "hurried"]
)
async def test_stop_kills_a_job_that_ignores_sigterm(
    tmp_path: Path, stop_grace: float, hurry: bool
) -> None:
    """``stop``: SIGTERM, SIGKILL after ``stop_grace``; ``stop(hurry=True)``: no grace (the
    hour of ``stop_grace`` is not waited for)."""
    pool = make_pool(tmp_path, size=1, stop_grace=stop_grace)
    await pool.start()
    running = asyncio.create_task(pool.run())
    pid_file = tmp_path / "stubborn.pid"
    job = asyncio.create_task(pool.submit("stubborn", json.dumps([str(pid_file)]), "{}"))
    await until(pid_file.exists, what="the stubborn job to start")
    pool.stop(hurry=hurry)
    await until(running.done, what="the pool to reap its process")
    await running  # returned, raised nothing
    with pytest.raises(PoolClosed):
        await job
    assert gone(int(pid_file.read_text()))
    assert_no_process_left()


async def test_async_with_starts_runs_and_stops_the_pool(tmp_path: Path) -> None:
    async with make_pool(tmp_path, size=2) as pool:
        assert pool.processes_ready == 2
        assert await pool.submit("add", "[1, 2]", "{}") == "3"
        pids = list(pool.pids)
    assert pool.processes_alive == 0
    with pytest.raises(PoolClosed):
        await pool.submit("add", "[1, 2]", "{}")
    assert_no_process_left(pids)


async def test_processes_alive_gauge_tracks_live_processes(tmp_path: Path) -> None:
    before = gauge("taskq_process_pool_processes_alive")
    pool = make_pool(tmp_path, size=2)
    running = await started(pool)
    try:
        assert gauge("taskq_process_pool_processes_alive") == before + 2
        with pytest.raises(ProcessDied):
            await pool.submit("fail_in_job", '["os_exit"]', "{}")
        await until(lambda: pool.processes_ready == 2, what="the replacement")
        assert gauge("taskq_process_pool_processes_alive") == before + 2
    finally:
        await running.stop()
    assert gauge("taskq_process_pool_processes_alive") == before


def test_pool_processes_exit_when_their_worker_is_killed(tmp_path: Path) -> None:
    """SIGKILL the parent (nothing runs its cleanup): its pool processes go too."""
    script = tmp_path / "owner.py"
    script.write_text(
        textwrap.dedent(f"""
        import asyncio, json, sys
        from taskq.procpool import ProcessPool

        async def main():
            pool = ProcessPool({REGISTRY_REF!r}, size=2,
                               env={{{CONTROL_ENV!r}: {str(tmp_path)!r}}})
            await pool.start()
            busy = asyncio.ensure_future(pool.submit("hold", json.dumps([{str(tmp_path / "x")!r}]),
                                                  "{{}}", job_id="busy"))
            while "busy" not in pool.running_jobs:
                await asyncio.sleep(0.01)
            print(json.dumps(pool.pids), flush=True)
            await busy

        if __name__ == "__main__":
            asyncio.run(main())
    """)
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    owner = subprocess.Popen(
        [sys.executable, str(script)], stdout=subprocess.PIPE, env=env, text=True
    )
    try:
        assert owner.stdout is not None
        pids = json.loads(owner.stdout.readline())
        assert len(pids) == 2 and not any(gone(p) for p in pids)
        owner.kill()
        owner.wait(timeout=30)
        wait_until(
            lambda: all(gone(p) for p in pids),
            timeout=30,
            what="the orphaned pool processes to exit",
        )
    finally:
        if owner.poll() is None:
            owner.kill()
            owner.wait(timeout=30)
        if owner.stdout is not None:
            owner.stdout.close()


async def test_fork_is_refused_and_a_bad_registry_is_named_at_start(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="never fork"):
        ProcessPool(REGISTRY_REF, start_method="fork")
    with pytest.raises(ConfigError, match="size"):
        ProcessPool(REGISTRY_REF, size=0)
    pool = ProcessPool("tests.integration.no_such_module:registry", size=1)
    with pytest.raises(ActorNotFound, match="no_such_module"):
        await pool.start()
    assert_no_process_left()  # a refused start leaves nothing to stop


async def test_nice_puts_every_process_below_its_owner_replacements_too(tmp_path: Path) -> None:
    own = os.getpriority(os.PRIO_PROCESS, 0)
    pool = make_pool(tmp_path, size=2, nice=7)
    running = await started(pool)
    try:
        assert {os.getpriority(os.PRIO_PROCESS, pid) for pid in pool.pids} == {min(own + 7, 19)}
        reply = json.loads(await pool.submit("niceness", "[]", "{}"))
        assert reply["nice"] == min(own + 7, 19)  # the job runs at it, not only the process
        # and in long slices: a waking worker or Postgres backend preempts it at once
        if procpool_actors.kernel_takes_custom_slices():
            assert reply["slice_ns"] == SLICE_NS
        with pytest.raises(ProcessDied):
            await pool.submit("fail_in_job", '["os_exit"]', "{}")
        await until(lambda: pool.processes_ready == 2 and pool.generation == 3, what="a new one")
        assert {os.getpriority(os.PRIO_PROCESS, pid) for pid in pool.pids} == {min(own + 7, 19)}
    finally:
        await running.stop()
    assert_no_process_left()


def test_request_slice_sets_the_threads_slice_and_keeps_its_policy_and_niceness() -> None:
    """In a process of its own (a slice stays with the thread): ``give_way(0)`` changes
    nothing; ``request_slice`` changes the slice alone."""
    script = textwrap.dedent(
        """
        import json, os
        from taskq.procpool.priority import give_way, request_slice
        from tests.support.procpool_actors import scheduler_slice

        def now():
            return [scheduler_slice(), os.getpriority(os.PRIO_PROCESS, 0),
                    os.sched_getscheduler(0)]

        before = now()
        not_asked = give_way(0)
        after_zero = now()
        why = request_slice(5_000_000)
        print(json.dumps([before, not_asked, after_zero, why, now()]))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
        cwd=Path(__file__).parents[2],  # where `tests` imports from
    )
    before, not_asked, after_zero, why, after = json.loads(out.stdout)
    assert not_asked == "not asked" and after_zero == before
    assert why is None  # Linux on x86_64 or aarch64: asked
    assert after[1:] == before[1:]  # niceness and policy as they were
    if procpool_actors.kernel_takes_custom_slices():
        assert after[0] == 5_000_000 != before[0]


def test_nice_outside_0_to_19_is_refused_before_any_process_starts() -> None:
    for bad in (-1, 20, True, 1.5):
        with pytest.raises(ConfigError, match="nice must be an integer 0-19"):
            ProcessPool(REGISTRY_REF, nice=bad)  # type: ignore[arg-type]


async def test_a_sigterm_the_owner_did_not_send_ends_neither_a_pool_process_nor_the_fork_server(
    tmp_path: Path,
) -> None:
    """A SIGTERM to the worker's whole process group (systemd's default stop) reaches the
    pool too. A pool process ignores one its owner did not send and its job finishes; the
    fork server ignores it and forks the next process; the owner's own SIGTERM (a cancel)
    still ends a process at once, with no SIGKILL after a grace. (The line the pool
    process logs is checked with a real worker, tests/acceptance/test_worker_process.py:
    here it goes to the stderr of whichever test started the fork server.)"""
    pool = make_pool(tmp_path, size=1, kill_grace=60.0)
    running = await started(pool)
    try:
        release = tmp_path / "release"
        held, pid = await holding(pool, release, "held")
        fork_server = parent_of(pid)
        assert fork_server is not None and fork_server != os.getpid()
        kill = await asyncio.create_subprocess_exec("kill", "-TERM", str(pid), str(fork_server))
        assert await kill.wait() == 0  # sent by another process than the pool's owner
        # taken (by the pool process's watcher, or by the kernel's default action)
        await until(lambda: not sigterm_pending(pid) or gone(pid), what="the SIGTERM taken")
        release.touch()
        assert await held == str(pid)  # finished in the process that was signalled
        assert not gone(fork_server)

        generation = pool.generation
        cancelled, victim = await holding(pool, tmp_path / "never", "cancelled")
        # the owner's SIGTERM ends it: cancel returns long before kill_grace's SIGKILL
        assert await asyncio.wait_for(pool.cancel("cancelled"), timeout=30) is True
        assert gone(victim)
        with pytest.raises(JobCancelled):
            await cancelled
        await until(lambda: pool.processes_ready == 1 and pool.generation == generation + 1)
        [replacement] = pool.pids
        assert parent_of(replacement) == fork_server  # the fork server lived on to fork it
        assert await pool.submit("add", "[1, 2]", "{}") == "3"
    finally:
        await running.stop()
    assert_no_process_left()


def sigterm_pending(pid: int) -> bool:
    """SIGTERM waits in the process's shared pending set (``ShdPnd`` of its status)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    [mask] = [line.split()[1] for line in status.splitlines() if line.startswith("ShdPnd:")]
    return bool(int(mask, 16) & (1 << (signal.SIGTERM - 1)))


async def test_spawn_works_too(tmp_path: Path) -> None:
    pool = make_pool(tmp_path, size=1, start_method="spawn")
    running = await started(pool)
    try:
        with pytest.raises(ProcessDied) as died:
            await pool.submit("fail_in_job", '["sys_exit"]', "{}")
        assert died.value.exit_code == 4
        assert await pool.submit("add", "[1, 2]", "{}") == "3"
    finally:
        await running.stop()
    assert_no_process_left()
