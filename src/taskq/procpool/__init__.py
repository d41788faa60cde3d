"""The CPU process pool for ``cpu_bound=True`` actors: one dead process fails one job.

The interface the worker uses::

    from taskq.procpool import ProcessPool, JobFailed, PayloadUndecodable

    pool = ProcessPool(registry_ref="pkg.mod:registry", size=None,  # None: os.cpu_count()
                       max_tasks_per_child=..., max_memory_per_child_mib=None,
                       max_payload_bytes=..., start_method="forkserver",
                       breaker_threshold=5, breaker_window=60.0, breaker_cooldown=30.0)
                              # the defaults: PoolConfig's (config.py, limits.py)
    # a part (taskq.lifecycle.Part) like everything else that runs: start, run, stop
    await pool.start()        # every process imports registry_ref and runs
                              # Registry.initializer, then each cpu_bound Actor.initializer,
                              # before it takes a job
    running = asyncio.create_task(pool.run())  # supervises the slots until stop
    result_json: str = await pool.submit(actor_name, args_json, kwargs_json,
                                         timeout=None, job_id=job.id, attempt=job.attempt)
    pool.breaker_open         # True while cpu jobs should stay queued
    pool.paused_actors        # cpu actor names to exclude from claims while it is open
    await pool.cancel(job_id)     # kill the process running that job (TERM, kill_grace,
                                  # KILL, reaped); its submit raises JobCancelled; False
                                  # if no process runs it
    pool.stop(hurry=False)    # idempotent, never blocks: TERM, stop_grace (hurry: none),
    await running             # KILL; run returns once no process is left behind

    async with pool: ...      # the same: start, run (a task it owns), stop, wait

Keyword-only extras (defaults are fine in production): ``max_result_bytes`` (default: the
payload limit), ``initializer_timeout`` (60 s), ``kill_grace`` (1 s between TERM and KILL
for a timed-out job), ``stop_grace`` (5 s a process gets at ``stop`` before KILL; the
worker gives 1), ``nice`` (0: added to the processes' niceness, 0-19, and above 0 long
scheduler slices, ``priority.py``; the worker passes ``--cpu-nice``, 10), ``env`` (extra
environment for the pool processes), and, for tests, ``restart_policy`` (a factory of
``RestartPolicy``, one per slot), ``clock`` (the breaker's) and ``cgroup_root``. The
same settings as one frozen, self-checking value: ``ProcessPool(config=PoolConfig(...))``;
``pool.config`` is always set. Introspection:
``pids``, ``running_jobs`` (job_id -> pid), ``processes_alive``, ``processes_ready``,
``generation`` (processes started so far), ``slot_generations()``, ``breaker_state``.

What ``submit`` raises, and what the worker does with it:

=============================  ===========================================================
``JobFailed``                  the job raised in its process (``error_type``,
                               ``error_message``, ``remote_traceback``): a failure,
                               normal retry rules
``ResultDropped``              the job ran, but its result is not JSON-serialisable or
                               over ``max_result_bytes`` (``reason``): succeeded with no
                               result, never re-run (the result rule of docs/jobs.md)
``JobTimedOut``                ran past ``timeout``; its process was killed (TERM, grace,
                               KILL) and replaced: a failure, normal retry rules
``ProcessDied``                the process running THIS job died (signal, exit code,
                               ``sys.exit``, OOM kill; ``cause``, ``exit_code``,
                               ``exit_signal``, ``pid``): a crash, crash rules
``JobCancelled``               ``cancel(job_id)`` killed its process on purpose: no break,
                               no crash, not charged; the worker records it cancelled
``BreakerOpen``                not run: give the job back uncharged
``PayloadTooLarge``            over ``max_payload_bytes``; nothing was sent: dead, no retry
``PayloadUndecodable``         the child could not decode the JSON: dead, never a crash
``PoolClosed``                 the pool is stopped (or stopped while the job ran): give back
=============================  ===========================================================

Layout, one idea a module: ``pool.py`` the facade; ``config.py`` ``PoolConfig``;
``dispatch.py`` one job from admission to verdict; ``supervisor.py`` the slot supervisor
(the only owner of slot states, ``slot.py``, and of restarts); ``restarts.py`` when a
slot may start its next process (breaker, ``RestartPolicy``); ``process.py`` one
process: spawn, wait ready, send, stop, reap (blocking, run in threads); ``channel.py``
the parent's end of a pipe, read by the event loop; ``protocol.py`` the messages on
the pipe; ``child.py`` the pool process's main loop; ``forkserver.py`` the fork
server's preload and its early start; ``causes.py`` naming a death; ``breaker.py`` the
circuit breaker; ``changes.py`` the pool's one wake-up.
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..exceptions import JobFailed, PayloadUndecodable
    from .breaker import BreakerState
    from .config import PoolConfig
    from .pool import ProcessPool

__all__ = ["BreakerState", "JobFailed", "PayloadUndecodable", "PoolConfig", "ProcessPool"]

_WHERE = {
    "BreakerState": ".breaker",
    "JobFailed": "..exceptions",
    "PayloadUndecodable": "..exceptions",
    "PoolConfig": ".config",
    "ProcessPool": ".pool",
}


def __getattr__(name: str) -> Any:
    """The package's names, imported on first use: a worker reads ``procpool.limits``
    (its ``--cpu-*`` options' defaults) without loading the pool it may never start."""
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(_WHERE[name], __name__), name)
