"""Which deaths blame a job (taskq.blame) and how a workgroup child's exit maps onto it."""

from __future__ import annotations

import signal

import pytest

from taskq import exit_codes
from taskq.blame import JOB_SIGNALS, blames_job
from taskq.workgroup.children import _blames_job


@pytest.mark.parametrize("name", sorted(JOB_SIGNALS))
def test_fatal_signals_from_inside_blame_the_job(name):
    assert blames_job(exit_signal=name, exit_code=None)


@pytest.mark.parametrize("name", ["SIGKILL", "SIGTERM", "SIGINT", "SIGHUP"])
def test_outside_kills_blame_no_job_unless_there_is_oom_evidence(name):
    assert not blames_job(exit_signal=name, exit_code=None)
    assert blames_job(exit_signal=name, exit_code=None, oom_kill=True)


def test_exit_codes_blame_the_job_except_the_runners_own():
    assert blames_job(exit_signal=None, exit_code=3)
    assert blames_job(exit_signal=None, exit_code=0)  # sys.exit(0) mid-job still ended it
    assert not blames_job(exit_signal=None, exit_code=3, own_exit_codes={3})


def test_an_unreadable_cause_blames_nobody_and_a_kill_for_a_hang_does():
    assert not blames_job(exit_signal=None, exit_code=None)
    assert blames_job(exit_signal="SIGKILL", exit_code=None, killed_for_hang=True)


def test_a_workgroup_child_exit():
    assert not _blames_job(-signal.SIGKILL, None)  # an operator, a deploy
    assert not _blames_job(-signal.SIGTERM, None)
    assert _blames_job(-signal.SIGSEGV, None)
    assert _blames_job(70, None)  # a job's os._exit(70)
    for own in exit_codes.WORKER_OWN:  # the worker's own decisions
        assert not _blames_job(own, None)
    assert _blames_job(-signal.SIGKILL, "health check failed 3 times")  # killed for a hang


def test_an_oom_killed_workgroup_child_blames_its_jobs():
    assert _blames_job(-signal.SIGKILL, None, oom_kill=True)


def test_the_kernel_log_names_the_pids_the_oom_killer_killed():
    from taskq.workgroup.oom import killed_pids

    log = (
        "[ 12.3] Out of memory: Killed process 4242 (python) total-vm:1024kB\n"
        "[ 14.1] Memory cgroup out of memory: Killed process 77 (taskq) anon-rss:9kB\n"
        "[ 15.0] oom_reaper: reaped process 4242 (python), now anon-rss:0kB\n"
    )
    assert killed_pids(log) == {4242, 77}
    assert killed_pids("nothing here") == set()
