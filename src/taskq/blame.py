"""Which deaths a job is to blame for: the rule behind ``dead/poison`` (docs/jobs.md).

A runner's death charges ``crash_count`` to every job it was running, but only a death
whose cause can point at a job counts toward poison:

* a fatal signal raised from inside: SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL;
* an exit code (``os._exit`` / ``sys.exit`` in the runner), except the exit codes taskq's
  own worker uses for its own decisions;
* an OOM kill (cgroup ``memory.events`` / kernel log evidence);
* a kill by taskq's own supervisor because the runner hung.

A SIGKILL or SIGTERM from outside with no OOM evidence (an operator, a deploy, an
orchestrator), a lost lease and any death whose cause cannot be read blame no job.
Pure functions, no I/O.
"""

from __future__ import annotations

from collections.abc import Collection

#: unproven deaths (blamed on no job, or shared) after which a job is poison anyway: the
#: default of the actor option ``max_unblamed_crashes`` (the store's SQL falls back to it
#: too, for an actor no worker has recorded)
DEFAULT_MAX_UNBLAMED_CRASHES = 5

#: signals a process raises against itself when the code it runs goes wrong
JOB_SIGNALS = frozenset({"SIGSEGV", "SIGABRT", "SIGBUS", "SIGFPE", "SIGILL"})


def blames_job(
    *,
    exit_signal: str | None,
    exit_code: int | None,
    oom_kill: bool = False,
    killed_for_hang: bool = False,
    own_exit_codes: Collection[int] = (),
) -> bool:
    """True if the death of a runner points at the job(s) it was running."""
    if oom_kill or killed_for_hang:
        return True
    if exit_signal is not None:
        return exit_signal in JOB_SIGNALS
    if exit_code is not None:
        return exit_code not in own_exit_codes
    return False  # the cause cannot be read
