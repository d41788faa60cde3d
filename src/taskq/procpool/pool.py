"""``ProcessPool``: the async facade of the CPU process pool: a part (``lifecycle.Part``:
``start``, ``run``, ``stop``) that runs jobs (``submit``, ``cancel``) and tells its state.

It builds a ``PoolConfig`` (checked at construction), and wires its pieces: the slot
supervisor (``supervisor.py``: every slot's state and restarts), the dispatcher
(``dispatch.py``: one job from admission to verdict) and the breaker (``breaker.py``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from uuid import UUID

from ..exceptions import PoolClosed
from ..registry import Registry, load_registry
from ..restart import RestartPolicy
from . import causes
from .breaker import Breaker, BreakerState, PoolBreaker
from .changes import Changes
from .config import PoolConfig
from .dispatch import Dispatcher, Job
from .limits import MAX_PAYLOAD_BYTES, MAX_TASKS_PER_CHILD
from .supervisor import SlotSupervisor


class ProcessPool:
    """A pool of processes for ``cpu_bound`` actors where one death fails one job."""

    def __init__(
        self,
        registry_ref: str,
        size: int | None = None,
        max_tasks_per_child: int | None = MAX_TASKS_PER_CHILD,
        max_memory_per_child_mib: int | None = None,
        max_payload_bytes: int = MAX_PAYLOAD_BYTES,
        start_method: str = "forkserver",
        breaker_threshold: int = 5,
        breaker_window: float = 60.0,
        breaker_cooldown: float = 30.0,
        *,
        max_result_bytes: int | None = None,
        initializer_timeout: float = 60.0,
        kill_grace: float = 1.0,
        stop_grace: float = 5.0,
        nice: int = 0,
        env: Mapping[str, str] | None = None,
        restart_policy: Callable[[], RestartPolicy] | None = None,
        clock: Callable[[], float] = time.monotonic,
        cgroup_root: Path = causes.CGROUP_ROOT,
        config: PoolConfig | None = None,
    ) -> None:
        """Either the settings one by one, or a ready ``config`` (then the rest is ignored)."""
        self.config = config or PoolConfig(
            registry_ref=registry_ref,
            size=size,
            max_tasks_per_child=max_tasks_per_child,
            max_memory_per_child_mib=max_memory_per_child_mib,
            max_payload_bytes=max_payload_bytes,
            start_method=start_method,
            breaker_threshold=breaker_threshold,
            breaker_window=breaker_window,
            breaker_cooldown=breaker_cooldown,
            max_result_bytes=max_result_bytes,
            initializer_timeout=initializer_timeout,
            kill_grace=kill_grace,
            stop_grace=stop_grace,
            nice=nice,
            env=env or {},
            restart_policy=restart_policy or RestartPolicy,
            clock=clock,
            cgroup_root=cgroup_root,
        )
        cfg = self.config
        self._registry: Registry | None = None
        self._changes = Changes()
        self._breaker = PoolBreaker(
            Breaker(
                threshold=cfg.breaker_threshold,
                window=cfg.breaker_window,
                cooldown=cfg.breaker_cooldown,
                clock=cfg.clock,
            ),
            self._changes,
            paused_actors=self._cpu_actor_names,
        )
        # threads are made on demand: spawns, waits for Ready, stops, large sends and dmesg
        # (the replies of jobs are read by the event loop: channel.py)
        self._executor = ThreadPoolExecutor(
            max_workers=2 * cfg.processes + 2, thread_name_prefix="taskq-procpool"
        )
        self._slots = SlotSupervisor(cfg, self._breaker, self._changes, self._executor)
        self._dispatcher = Dispatcher(
            cfg, self._slots, self._breaker, self._changes, self._executor
        )
        self._started = False
        self._running: asyncio.Task[None] | None = None  # ``async with``'s run

    # -- public state ---------------------------------------------------------------

    @property
    def size(self) -> int:
        return self.config.processes

    @property
    def registry_ref(self) -> str:
        return self.config.registry_ref

    @property
    def breaker_open(self) -> bool:
        """True while cpu jobs should stay queued (open, or half-open with its probe out)."""
        return self._breaker.refusing

    @property
    def breaker_state(self) -> BreakerState:
        return self._breaker.state

    @property
    def paused_actors(self) -> list[str]:
        """Names of the registry's cpu_bound actors while the breaker refuses work."""
        return self._cpu_actor_names() if self.breaker_open else []

    @property
    def processes_alive(self) -> int:
        return self._slots.processes_alive

    @property
    def processes_ready(self) -> int:
        """Processes past their initializers (idle or running a job)."""
        return self._slots.processes_ready

    @property
    def pids(self) -> list[int]:
        return self._slots.pids

    @property
    def generation(self) -> int:
        """Processes started so far, all slots together."""
        return self._slots.generation

    @property
    def running_jobs(self) -> dict[str, int]:
        """``job_id -> pid`` of every job running now (jobs given a ``job_id``)."""
        return {job_id: job.pid for job_id, job in self._dispatcher.running.items() if job.pid}

    @property
    def queued_jobs(self) -> dict[str, int]:
        """``job_id -> pid`` of every job waiting in a busy process's pipe for the job
        before it (not running yet: a job is queued only when no process is idle)."""
        return {job_id: job.pid for job_id, job in self._dispatcher.queued.items() if job.pid}

    def slot_generations(self) -> list[int]:
        return [s.generation for s in self._slots.slots]

    def _cpu_actor_names(self) -> list[str]:
        return [] if self._registry is None else [a.name for a in self._registry if a.cpu_bound]

    # -- the part (lifecycle.Part) ---------------------------------------------------
    #
    # The order, start to stop:
    #   start  the registry (a bad reference is a clear error here), then every slot's
    #          first process, in slot order, each past its initializers (or failed)
    #   run    the slot supervisor's tasks (one a slot: start a process, serve, reap,
    #          restart) until each has reaped its last process; then the threads, then
    #          the breaker
    #   stop   no new job (``submit`` raises ``PoolClosed``); every slot retired at once
    #          (busy processes SIGTERM now, idle ones EOF on their pipe), each process
    #          given ``stop_grace`` seconds before SIGKILL, none when hurried

    name = "process-pool"
    stop_timeout = None  # run's wind-down is bounded by stop_grace (an idle process that
    # ignores its EOF gets it twice: then SIGTERM, then SIGKILL)

    async def start(self) -> None:
        """Start every slot's process; returns once each ran its initializers (or failed).
        Idempotent; ``PoolClosed`` if stopped before it ever started."""
        if self._started:
            return
        if self._slots.closing:
            raise PoolClosed()
        self._registry = load_registry(self.config.registry_ref)  # a clear error here
        self._started = True
        await self._slots.start()

    async def run(self) -> None:
        """Supervise the slots until ``stop``; returns once every process is reaped, and
        then releases the pool's threads and its breaker (also when cancelled)."""
        try:
            await self._slots.run()
        finally:
            await asyncio.to_thread(self._executor.shutdown, True)
            self._breaker.close()

    def stop(self, *, hurry: bool = False) -> None:
        """Stop every process (busy ones SIGTERM, idle ones EOF, SIGKILL past
        ``stop_grace``; ``hurry``, now or in a later call: no grace for the processes not
        being stopped yet); ``run`` returns once each is reaped. A job running now raises
        ``PoolClosed``. Idempotent, never blocks."""
        self._slots.stop(0.0 if hurry else self.config.stop_grace)

    async def __aenter__(self) -> ProcessPool:
        """``async with pool:`` starts it, runs it (a task this block owns), and at the
        block's end stops it and waits until every process is reaped."""
        await self.start()
        self._running = asyncio.create_task(self.run(), name="taskq-process-pool")
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self.stop()
        if self._running is not None:
            await self._running

    # -- running a job --------------------------------------------------------------

    async def submit(
        self,
        actor_name: str,
        args_json: str,
        kwargs_json: str,
        *,
        timeout: float | None = None,
        job_id: UUID | str | None = None,
        attempt: int | None = None,
    ) -> str:
        """Run one job in a pool process; return its result as JSON text."""
        if not self._started or self._slots.closing:
            raise PoolClosed("the process pool is not running")
        job = Job(
            actor_name,
            args_json,
            kwargs_json,
            None if job_id is None else str(job_id),
            attempt,
            timeout,
        )
        return await self._dispatcher.run(job)

    async def cancel(self, job_id: UUID | str) -> bool:
        """Kill the process running ``job_id``: SIGTERM, ``kill_grace``, SIGKILL; returns
        once it is reaped. That job's ``submit`` raises ``JobCancelled``; it counts as no
        break (no metric, the breaker unmoved), no crash, and no failure of the slot,
        whose next process starts at once. False when no process is running that job."""
        return await self._dispatcher.cancel(str(job_id))
