"""Actors for the process pool tests: every way a pool process can fail, at every stage.

The pool processes find their instructions in the directory named by the environment
variable ``TASKQ_PROCPOOL_TEST_DIR`` (the tests pass it through ``ProcessPool(env=...)``):

* ``init-<failure>``: the next initializer run that removes this file (one process, once)
  performs ``<failure>``; ``init-always-raise`` is never removed (every process fails);
  ``init-rlimit-<mib>``: every process sets its ``RLIMIT_AS`` soft limit to <mib> MiB.
* ``inits.log``: every initializer run appends "registry <pid>" / "actor <pid>".

Failures: segfault, os_exit, sys_exit, exception, sigkill (write ``<stage>.pid`` and wait
to be killed from outside), memory (allocate past an ``RLIMIT_AS`` set for the purpose),
timeout (sleep forever). Stages: the initializer, the job body (``fail_in_job``), and
returning the result (``fail_in_return``: the result is a dict whose ``items()``, called
by the JSON encoder after the job returned, performs the failure).
"""

from __future__ import annotations

import ctypes
import os
import platform
import resource
import signal
import sys
import time
from pathlib import Path
from typing import Any

import taskq

FAILURES = ("segfault", "os_exit", "sys_exit", "exception", "sigkill", "memory", "timeout")


def control_dir() -> Path | None:
    """The test's control directory; None in a pool started without one (a worker's)."""
    value = os.environ.get("TASKQ_PROCPOOL_TEST_DIR")
    return Path(value) if value else None


def _log_init(kind: str) -> None:
    directory = control_dir()
    if directory is not None:
        with open(directory / "inits.log", "a") as fh:
            fh.write(f"{kind} {os.getpid()}\n")


def _exhaust_memory() -> None:
    """Allocate far past an RLIMIT_AS set just above the current size: MemoryError."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    with open("/proc/self/statm") as fh:
        size = int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    resource.setrlimit(resource.RLIMIT_AS, (size + 64 * 1024 * 1024, hard))
    try:
        hog = bytearray(1024 * 1024 * 1024)
        hog[0] = 1
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def perform(failure: str, stage: str) -> None:
    if failure == "segfault":
        ctypes.string_at(0)
    elif failure == "os_exit":
        os._exit(3)
    elif failure == "sys_exit":
        sys.exit(4)
    elif failure == "exception":
        raise ValueError(f"boom in the {stage}")
    elif failure == "sigkill":
        directory = control_dir()
        assert directory is not None, "sigkill needs a control directory"
        (directory / f"{stage}.pid").write_text(str(os.getpid()))
        time.sleep(3600)
    elif failure == "memory":
        _exhaust_memory()
    elif failure == "timeout":
        time.sleep(3600)
    else:
        raise AssertionError(f"unknown failure {failure!r}")


def _registry_initializer() -> None:
    _log_init("registry")
    directory = control_dir()
    if directory is None:
        return
    for path in sorted(directory.glob("init-rlimit-*")):
        mib = int(path.name.rsplit("-", 1)[1])
        _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        resource.setrlimit(resource.RLIMIT_AS, (mib * 1024 * 1024, hard))
    if (directory / "init-always-raise").exists():
        raise RuntimeError("this initializer always fails")
    for failure in FAILURES:
        token = directory / f"init-{failure}"
        try:
            token.unlink()  # whoever removes it performs the failure: exactly one process
        except FileNotFoundError:
            continue
        perform(failure, "initializer")


registry = taskq.Registry(initializer=_registry_initializer)
_warm: dict[str, Any] = {}


def _actor_initializer() -> None:
    _log_init("actor")
    _warm["pid"] = os.getpid()


@registry.actor(cpu_bound=True, idempotent=True, initializer=_actor_initializer)
def whoami() -> dict[str, int | None]:
    """This process's pid and what the actor initializer left behind."""
    return {"pid": os.getpid(), "warm_pid": _warm.get("pid")}


@registry.actor(cpu_bound=True)
def niceness() -> dict[str, int | None]:
    """This process's pid, its nice value and its scheduler slice (ns; None where the
    kernel does not show it)."""
    return {
        "pid": os.getpid(),
        "nice": os.getpriority(os.PRIO_PROCESS, 0),
        "slice_ns": scheduler_slice(),
    }


def scheduler_slice() -> int | None:
    """The calling thread's EEVDF slice in ns, from ``/proc/thread-self/sched``."""
    try:
        with open("/proc/thread-self/sched") as lines:
            for line in lines:
                if line.startswith("se.slice"):
                    return int(line.split(":")[1])
    except OSError:
        pass
    return None


def kernel_takes_custom_slices() -> bool:
    """Linux >= 6.12 runs a fair task in the slice ``sched_setattr`` asks for, and
    ``/proc`` shows it (elsewhere the pool's request is a documented no-op)."""
    if scheduler_slice() is None:
        return False
    major, minor = (int(part) for part in platform.release().split(".")[:2])
    return (major, minor) >= (6, 12)


@registry.actor(cpu_bound=True)
def add(a: int, b: int) -> int:
    return a + b


@registry.actor(cpu_bound=True)
def hold(release: str, timeout: float = 30.0) -> int:
    """Run until the file ``release`` exists (a bystander kept busy on purpose)."""
    deadline = time.monotonic() + timeout
    while not os.path.exists(release):
        if time.monotonic() > deadline:
            raise TimeoutError(f"{release} never appeared")
        time.sleep(0.01)
    return os.getpid()


@registry.actor(cpu_bound=True)
def fail_in_job(failure: str) -> str:
    perform(failure, "job")
    return "survived"


class _FailingResult(dict):  # type: ignore[type-arg]
    """A result that fails while the pool encodes it (the encoder calls ``items()``)."""

    def __init__(self, failure: str) -> None:
        super().__init__(value=1)
        self.failure = failure

    def items(self):  # type: ignore[override]
        perform(self.failure, "return")
        return super().items()


@registry.actor(cpu_bound=True)
def fail_in_return(failure: str) -> dict[str, int]:
    return _FailingResult(failure)


@registry.actor(cpu_bound=True, idempotent=True)
def crash_idempotent(failure: str) -> str:
    perform(failure, "job")
    return "survived"


@registry.actor(
    cpu_bound=True,
    timeout=0.5,
    max_attempts=2,
    retry_backoff=taskq.RetryBackoff(initial=0.01, maximum=0.05),
)
def spin_past_timeout() -> str:
    time.sleep(3600)
    return "never"


@registry.actor(cpu_bound=True)
def stubborn(pid_file: str) -> str:
    """Ignore SIGTERM and sleep: only SIGKILL ends this one."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    Path(pid_file).write_text(str(os.getpid()))
    time.sleep(3600)
    return "never"


@registry.actor(cpu_bound=True)
def not_json() -> object:
    return {"when": object()}


@registry.actor(cpu_bound=True)
def huge_result(n_bytes: int) -> str:
    return "x" * n_bytes


_hoard: list[bytearray] = []


@registry.actor(cpu_bound=True)
def grow(mib: int) -> int:
    """Keep ``mib`` MiB resident (touched) in this process; return the pid."""
    block = bytearray(mib * 1024 * 1024)
    for i in range(0, len(block), 4096):
        block[i] = 1
    _hoard.append(block)
    return os.getpid()


@registry.actor(cpu_bound=True)
def echo_size(blob: str) -> int:
    return len(blob)
