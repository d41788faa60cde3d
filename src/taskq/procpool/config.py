"""``PoolConfig``: every setting of a process pool, checked once, frozen.

A bad value raises ``ConfigError`` naming it when the config is built, so a pool never
starts half-configured. ``None`` and ``0`` mean "never" for the recycle limits; the
result limit defaults to the payload limit; ``size=None`` is ``os.cpu_count()``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

from ..exceptions import ConfigError
from ..restart import RestartPolicy
from .causes import CGROUP_ROOT
from .limits import MAX_PAYLOAD_BYTES, MAX_TASKS_PER_CHILD, pool_size

START_METHODS = ("forkserver", "spawn")


@dataclass(frozen=True, slots=True)
class PoolConfig:
    registry_ref: str
    size: int | None = None  # None: os.cpu_count()
    max_tasks_per_child: int | None = MAX_TASKS_PER_CHILD  # None or 0: never recycle by count
    max_memory_per_child_mib: int | None = None  # None or 0: never recycle by RSS
    max_payload_bytes: int = MAX_PAYLOAD_BYTES
    start_method: str = "forkserver"
    #: niceness the processes add to the worker's (0-19; above 0 long slices too,
    #: priority.py): they yield the cores to the worker's event loop, its heartbeats and
    #: I/O jobs, and the database (docs/cpu-bound.md, "Priority")
    nice: int = 0
    breaker_threshold: int = 5
    breaker_window: float = 60.0
    breaker_cooldown: float = 30.0
    max_result_bytes: int | None = None  # None: the payload limit
    initializer_timeout: float = 60.0
    kill_grace: float = 1.0  # TERM -> KILL for a timed-out or cancelled job
    stop_grace: float = 5.0  # at the pool's stop, each process's time to go before KILL
    env: Mapping[str, str] = field(default_factory=dict)
    # for tests: one RestartPolicy per slot, the breaker's clock, where cgroups live
    restart_policy: Callable[[], RestartPolicy] = RestartPolicy
    clock: Callable[[], float] = time.monotonic
    cgroup_root: Path = CGROUP_ROOT

    def __post_init__(self) -> None:
        if self.start_method not in START_METHODS:
            raise ConfigError(
                f"process pool start_method must be one of {START_METHODS}, got "
                f"{self.start_method!r} (never fork: the worker has threads and "
                "database connections)"
            )
        nice = self.nice
        if isinstance(nice, bool) or not isinstance(nice, int) or not 0 <= nice <= 19:
            raise ConfigError(f"process pool nice must be an integer 0-19, got {self.nice!r}")
        size = pool_size(None) if self.size is None else self.size
        if not isinstance(size, int) or isinstance(size, bool) or size < 1:
            raise ConfigError(f"process pool size must be an integer >= 1, got {size!r}")
        for name in ("max_tasks_per_child", "max_memory_per_child_mib"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or value < 0):
                raise ConfigError(f"process pool {name} must be None or an integer >= 0")
        result_limit = self.max_result_bytes
        if self.max_payload_bytes < 1 or (result_limit is not None and result_limit < 1):
            raise ConfigError("process pool payload and result limits must be >= 1 byte")
        if self.initializer_timeout <= 0 or self.kill_grace < 0 or self.stop_grace < 0:
            raise ConfigError(
                "process pool initializer_timeout must be > 0, kill_grace and stop_grace >= 0"
            )
        if self.breaker_threshold < 0 or self.breaker_window <= 0 or self.breaker_cooldown < 0:
            raise ConfigError(
                "process pool breaker_threshold must be >= 0, breaker_window > 0, "
                "breaker_cooldown >= 0"
            )
        # normalised once, here: the rest of the pool reads plain values
        object.__setattr__(self, "size", size)
        object.__setattr__(self, "max_tasks_per_child", self.max_tasks_per_child or None)
        object.__setattr__(self, "max_memory_per_child_mib", self.max_memory_per_child_mib or None)
        object.__setattr__(self, "max_result_bytes", result_limit or self.max_payload_bytes)
        object.__setattr__(self, "env", MappingProxyType(dict(self.env)))

    @property
    def processes(self) -> int:
        """``size`` after defaulting (always an int)."""
        assert self.size is not None
        return self.size

    @property
    def result_limit(self) -> int:
        """``max_result_bytes`` after defaulting (always an int)."""
        assert self.max_result_bytes is not None
        return self.max_result_bytes
