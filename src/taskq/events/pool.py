"""The events of the CPU process pool (declared with ``declare``; listed in
docs/events.md)."""

from __future__ import annotations

from .declare import CRITICAL, ERROR, INFO, WARNING, Count, declare

# -- the CPU process pool ----------------------------------------------------------------
_e = declare("process pool")
PROCESS_POOL_STARTED = _e(
    "process-pool-started",
    INFO,
    "size late",
    "the CPU process pool started: with the worker (a consumed queue has a cpu_bound "
    "actor), or `late` at the first cpu_bound job that arrived on another queue",
)
PROCESS_POOL_PROCESS_READY = _e(
    "process-pool-process-ready",
    INFO,
    "pid slot slot_generation pool_generation",
    "a pool process started and is ready for a job",
)
PROCESS_POOL_BROKEN = _e(
    "process_pool_broken",
    ERROR,
    "job actor attempt payload_bytes pool_generation slot slot_generation "
    "worker_memory_limit_mib recent_oom_kills exit_signal exit_code pid cause",
    "a pool process died running a job: why, and the evidence",
)
PROCESS_POOL_PROCESS_LOST = _e(
    "process-pool-process-lost",
    WARNING,
    "pid slot job actor detail",
    "a pool process went away while idle or was found dead",
)
PROCESS_POOL_JOB_TIMED_OUT = _e(
    "process-pool-job-timed-out",
    WARNING,
    "job actor timeout pid",
    "a cpu_bound job overran its timeout; its process is killed",
)
PROCESS_POOL_JOB_CANCELLED = _e(
    "process-pool-job-cancelled",
    WARNING,
    "job actor pid",
    "a cancelled cpu_bound job's process is killed",
)
PROCESS_POOL_SIGNAL_IGNORED = _e(
    "process-pool-signal-ignored",
    WARNING,
    "pid sender",
    "a pool process ignored a SIGTERM its worker did not send (one to the whole process "
    "group or cgroup): its job goes on, and the worker, signalled too, stops it in turn",
)
PROCESS_POOL_RECYCLED = _e(
    "process-pool-recycled",
    INFO,
    "reason pid slot tasks_done",
    "a pool process is replaced between jobs (`reason`: max_tasks or max_memory)",
    Count("process_pool_recycles", ("reason",)),
)
PROCESS_POOL_RESTART_SCHEDULED = _e(
    "process-pool-restart-scheduled",
    INFO,
    "slot delay consecutive_failures reason",
    "a slot starts its next process after `delay` seconds",
)
PROCESS_POOL_SLOT_GAVE_UP = _e(
    "process-pool-slot-gave-up",
    CRITICAL,
    "slot recent_failures detail",
    "a slot's processes died too often in its window: the slot stays down",
)
PROCESS_POOL_SLOT_ERROR = _e(
    "process-pool-slot-error",
    ERROR,
    "slot",
    "the slot supervisor raised; the slot's process is stopped and restarted",
)
PROCESS_POOL_INITIALIZER_FAILED = _e(
    "process-pool-initializer-failed",
    ERROR,
    "pid slot slot_generation pool_generation exit_code exit_signal cause traceback",
    "a pool process's initializer raised or the process died before it was ready",
)
PROCESS_POOL_SUPERVISOR_DIED = _e(
    "process-pool-supervisor-died", CRITICAL, "task", "a slot supervisor's task raised"
)
PROCESS_POOL_BREAKER_OPEN = _e(
    "process-pool-breaker-open",
    CRITICAL,
    "breaks threshold window cooldown last_cause paused_actors",
    "too many breaks in the window: cpu_bound actors pause for `cooldown` seconds",
)
PROCESS_POOL_BREAKER_HALF_OPEN = _e(
    "process-pool-breaker-half-open",
    WARNING,
    "job actor",
    "the cooldown passed: one job tries the pool",
)
PROCESS_POOL_BREAKER_CLOSED = _e(
    "process-pool-breaker-closed", WARNING, "", "the trial job survived: the pool runs again"
)
