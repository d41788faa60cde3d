"""A pool process ends on its own worker's SIGTERM, and on no one else's.

A SIGTERM sent to a worker's whole process group or cgroup (systemd's default
``KillMode=control-group``, ``kill -TERM -<pgid>``, a supervisor that signals every
process it finds) reaches the pool processes and the fork server too. The worker handles
its copy: a graceful shutdown in which the running CPU jobs may finish within
``--shutdown-grace``. Were the pool processes to die of theirs, those jobs would end as
crashes (charged by the crash rules: a job that is not idempotent dead) on a routine
stop. So:

* the fork server ignores SIGTERM (``ignore_in_fork_server``, run by ``preload.py``,
  which multiprocessing imports there before it forks a pool process). taskq never
  signals it; it exits when its worker does (multiprocessing closes its pipe);
* a pool process blocks SIGTERM before it starts a thread (``block``), and a thread of
  its own takes each one with ``sigwaitinfo`` (``watch``): sent by its worker (a job's
  timeout or cancel, the pool's hard stop) it ends the process as SIGTERM always did
  (the same exit status, so the same cause in the logs); sent by anyone else it is
  logged (``process-pool-signal-ignored``) and the job goes on. SIGKILL still ends the
  process, and so does its worker's death (``child._die_with_owner``).

Where ``sigwaitinfo`` is missing (not Linux) the default stands: a SIGTERM ends the
process, whoever sent it.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable

_TERM = {signal.SIGTERM}


def ignore_in_fork_server() -> None:
    """The fork server's SIGTERM disposition: ignored (its pool processes inherit it
    until ``block`` takes over)."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)


def block() -> bool:
    """Hold every SIGTERM for ``watch`` (this thread and the threads it starts later).
    Call first thing in a pool process. False where SIGTERMs cannot be told apart."""
    if not hasattr(signal, "sigwaitinfo"):
        return False
    signal.pthread_sigmask(signal.SIG_BLOCK, _TERM)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # the fork server left it ignored
    return True


def watch(owner_pid: int, ignored: Callable[[int], None]) -> None:
    """A daemon thread that takes each SIGTERM held by ``block``: from ``owner_pid`` it
    ends this process by it; from any other sender it calls ``ignored(sender_pid)``."""

    def take() -> None:
        while True:
            sender = signal.sigwaitinfo(_TERM).si_pid
            if sender == owner_pid:
                signal.pthread_sigmask(signal.SIG_UNBLOCK, _TERM)
                signal.pthread_kill(threading.get_ident(), signal.SIGTERM)  # ends the process
                return  # (not reached)
            ignored(sender)

    threading.Thread(target=take, name="taskq-sigterm-watch", daemon=True).start()
