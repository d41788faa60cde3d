"""Every log event taskq emits, declared once: its name, level, fields, meaning, and the
metric it counts (Oban's telemetry events read side by side: names in one module, the
logger one consumer of them, the docs a listing of them).

A module logs an event through its logger's one method::

    log = get_logger(__name__)
    log.event(JOB_DEAD, job=str(job.id), actor=job.actor, reason=reason, error=first_line)

which writes the line at the event's level and, when the event counts a metric
(``Count``), increments it with labels taken from the fields. A new event is a new
constant here (``docs/events.md`` is generated from this module: ``make docs``; a test
fails when it drifts, and another when a call passes a field the event does not declare).

The rules of the vocabulary:

- **Names** are kebab-case, the thing first, then what happened (``job-dead``,
  ``store-unavailable``, ``workgroup-child-started``). ``FROZEN`` names keep the spelling
  the public contract gives them (dashboards and alert rules match them):
  ``workgroup.restart_scheduled``, ``workgroup.stream_pump_failed``, ``process_pool_broken``,
  ``worker died``, ...
- **Fields** mean one thing everywhere: ``error`` is the error text (``Type: message``;
  a traceback, when there is one, comes as ``exception`` from ``exc_info``); ``job`` a job
  id and ``actor`` its actor's name; ``worker_id`` a worker's UUID; ``worker`` the name of
  a workgroup's ``[[workers]]`` entry (a child); ``consumer`` a consumer task's index in
  one worker; ``part`` a worker's part (``fetcher``, ``acker``, ...); ``reason`` a word
  from a small set (``child_exit``, ``SIGTERM``, ``failed``), never error text.
- A worker's consumer tasks are **consumers** (the seed calls them a "worker pool", and so
  do the frozen ``worker died`` and the ``taskq_pool_workers_*`` metrics).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

DEBUG, INFO, WARNING, ERROR, CRITICAL = (
    logging.DEBUG,
    logging.INFO,
    logging.WARNING,
    logging.ERROR,
    logging.CRITICAL,
)


class Count:
    """A metric an event counts: the attribute of ``taskq.metrics``, the fields whose
    values are its labels (in order), and a field that must be set for it to count."""

    __slots__ = ("labels", "metric", "when")

    def __init__(self, metric: str, labels: tuple[str, ...] = (), when: str | None = None) -> None:
        self.metric = metric
        self.labels = labels
        self.when = when

    def add(self, fields: Mapping[str, Any]) -> None:
        if self.when is not None and not fields.get(self.when):
            return
        from . import metrics

        family = getattr(metrics, self.metric)
        (family.labels(*(fields[k] for k in self.labels)) if self.labels else family).inc()


class Event:
    """One event: what ``log.event`` writes (plain slots, not a dataclass: this module is
    imported by every taskq process, and its import time counts at start-up)."""

    __slots__ = ("area", "counts", "doc", "fields", "level", "name")

    def __init__(
        self,
        name: str,
        level: int,
        fields: tuple[str, ...],
        doc: str,
        area: str,
        counts: tuple[Count, ...] = (),
    ) -> None:
        self.name = name
        self.level = level
        self.fields = fields
        self.doc = doc
        self.area = area
        self.counts = counts

    def __repr__(self) -> str:
        return f"Event({self.name!r})"


ALL: dict[str, Event] = {}

#: names the public contract spells its own way; they never change
FROZEN = frozenset(
    {
        "workgroup.restart_scheduled",
        "workgroup-burst-limit-exceeded",
        "workgroup-reload-signal",
        "workgroup.stream_pump_failed",
        "credentials-reload-failed",
        "process_pool_broken",
        "worker died",
        "actor-config-updated",
        "listen-unavailable",
    }
)

_area = "worker"


def _e(name: str, level: int, fields: str, doc: str, *counts: Count) -> Event:
    if name in ALL:
        raise ValueError(f"event {name!r} declared twice")
    event = Event(name, level, tuple(fields.split()), doc, _area, counts)
    ALL[name] = event
    return event


# -- a worker's life ----------------------------------------------------------------------
_area = "worker"
WORKER_STARTED = _e(
    "worker-started",
    INFO,
    "worker_id pid queues concurrency label group store actors",
    "the worker's parts started; it claims from now on",
)
WORKER_STOPPING = _e(
    "worker-stopping",
    INFO,
    "worker_id reason grace",
    "a graceful stop began (reason: the signal or why); running jobs get `grace` seconds",
)
WORKER_STOP_HURRIED = _e(
    "worker-stop-hurried",
    INFO,
    "worker_id reason",
    "a second stop request: the parts stopping now skip the grace that is left",
)
WORKER_STOPPED = _e(
    "worker-stopped", INFO, "worker_id exit_code reason", "the worker ended with `exit_code`"
)
WORKER_CANNOT_START = _e(
    "worker-cannot-start",
    ERROR,
    "error error_type",
    "the worker refused to start (JSON logs only; the `taskq:` line says the same)",
)
WORKER_PART_DIED = _e(
    "worker-part-died",
    ERROR,
    "part during error",
    "a part's `run` ended before it was asked to stop (the worker exits 4), or raised "
    "while stopping (`during`: `shutdown`)",
)
WORKER_TASK_FAILED = _e(
    "worker-task-failed", ERROR, "task error", "a task the worker owns (a reload) raised"
)
WORKER_UNREGISTER_FAILED = _e(
    "worker-unregister-failed",
    WARNING,
    "worker_id error",
    "the worker row could not be removed at the end; the pruner removes it later",
)
PART_STOP_TIMED_OUT = _e(
    "part-stop-timed-out",
    WARNING,
    "part timeout note",
    "a part did not wind down within its stop timeout and was cancelled",
)
QUEUES_WITHOUT_ACTORS = _e(
    "queues-without-actors",
    WARNING,
    "queues note",
    "the worker consumes queues no actor of its registry sends jobs to",
)
ACTOR_CONFIG_UPDATED = _e(
    "actor-config-updated",
    WARNING,
    "differences",
    "stored actor options differed from the registry's and were overwritten",
)
HEALTH_SERVER_STARTED = _e(
    "health-server-started",
    INFO,
    "host port socket_path",
    "the worker's `/live` `/ready` `/metrics` listen (a port or a Unix socket)",
)
HTTP_REQUEST_FAILED = _e(
    "http-request-failed",
    ERROR,
    "server",
    "a health or status endpoint raised; the request is answered no further",
)
EVENT_LOOP_BLOCKED = _e(
    "event-loop-blocked",
    WARNING,
    "blocked_for running_actors",
    "the event loop has not answered for over a second; the actors running then",
)
PARENT_GONE = _e(
    "parent-gone",
    WARNING,
    "parent_pid now_parent pid note",
    "a workgroup child's supervisor died: the child stops gracefully (exits 5 when it died "
    "before the child started)",
)
PARENT_DEATH_SIGNAL_UNAVAILABLE = _e(
    "parent-death-signal-unavailable",
    WARNING,
    "error",
    "the kernel's parent-death signal could not be set; the parent watch still polls",
)
MIDDLEWARE_HOOK_FAILED = _e(
    "middleware-hook-failed",
    ERROR,
    "hook method error job actor not_logged_since_last note",
    "a middleware hook raised (rate-limited per hook); the job goes on",
)

# -- credentials ------------------------------------------------------------------------
_area = "credentials"
CREDENTIALS_FILE_CHANGED = _e(
    "credentials-file-changed",
    INFO,
    "dsn_file",
    "`TASKQ_DSN_FILE` changed on disk (`TASKQ_DSN_FILE_POLL`): the worker reloads as on SIGHUP",
)
CREDENTIALS_RELOADED = _e(
    "credentials-reloaded",
    INFO,
    "dsn dsn_file",
    "SIGHUP: the store connections were rebuilt with the DSN re-read from the file",
)
CREDENTIALS_RELOAD_FAILED = _e(
    "credentials-reload-failed",
    ERROR,
    "error dsn_file",
    "SIGHUP: re-reading the DSN or reconnecting failed; the old connections are kept",
)

# -- consumers (the task supervisor) -------------------------------------------------------
_area = "consumers"
WORKER_DIED = _e(
    "worker died",
    ERROR,
    "consumer error alive during",
    "a consumer task died (a name dashboards match); it is restarted after a backoff",
)
CONSUMER_RESTART_SCHEDULED = _e(
    "consumer-restart-scheduled",
    WARNING,
    "consumer delay attempt restarts_in_window",
    "a dead consumer is replaced after `delay` seconds",
)
CONSUMER_RESTARTED = _e(
    "consumer-restarted",
    INFO,
    "consumer alive",
    "a dead consumer was replaced",
    Count("consumer_restarts"),
)
CONSUMER_GAVE_UP = _e(
    "consumer-gave-up",
    ERROR,
    "consumer restarts_in_window window_seconds limit alive note",
    "a consumer died too often in its window and is not replaced",
)
CRASH_LOOP_GUARD_TRIPPED = _e(
    "crash-loop-guard-tripped",
    CRITICAL,
    "consumers restarts_in_window window_seconds limit action",
    "every consumer gave up: the worker stops claiming, gives jobs back and exits 3",
)

# -- jobs -----------------------------------------------------------------------------------
_area = "jobs"
JOB_RETRY_SCHEDULED = _e(
    "job-retry-scheduled",
    WARNING,
    "job actor attempt max_attempts delay error",
    "an attempt raised and the job runs again after `delay` seconds",
)
JOB_DEAD = _e(
    "job-dead",
    WARNING,
    "job actor reason attempt error",
    "the job ended dead (`reason`: its dead reason)",
    Count("jobs_dead_lettered", ("actor", "reason")),
)
JOB_RESULT_DROPPED = _e(
    "job-result-dropped",
    WARNING,
    "job actor error",
    "the job succeeded but its result cannot be stored (not JSON, too large)",
)
JOB_RESCUED = _e(
    "job-rescued",
    WARNING,
    "job actor detected_by result state dead_reason crash_count",
    "a running job whose runner died was re-queued or ended (`detected_by`: how)",
    Count("jobs_rescued", ("detected_by", "result")),
    Count("jobs_dead_lettered", ("actor", "dead_reason"), when="dead_reason"),
)
JOB_WAITS_TO_RUN_ALONE = _e(
    "job-waits-to-run-alone",
    INFO,
    "job actor",
    "a job blamed for a shared death waits until it can run with nothing beside it",
)
JOBS_GIVEN_BACK = _e(
    "jobs-given-back", INFO, "count why", "claimed jobs no consumer started went back queued"
)
SYNC_JOB_TIMED_OUT = _e(
    "sync-job-timed-out",
    WARNING,
    "job actor timeout note",
    "a sync actor overran its timeout; its thread cannot be stopped and is left to finish",
)
JOB_CANCEL_REQUESTED = _e(
    "job-cancel-requested",
    INFO,
    "job actor runner",
    "a running job was asked to stop (a cancel)",
    Count("job_cancels", ("actor", "runner")),
)
JOB_CANCEL_OVERDUE = _e(
    "job-cancel-overdue",
    WARNING,
    "job actor seconds note",
    "a cancelled job is still running `seconds` after it was asked to stop",
)
JOB_CANCEL_FAILED = _e(
    "job-cancel-failed", ERROR, "job actor error", "stopping a cancelled job's runner raised"
)
ACKS_NOT_WRITTEN = _e(
    "acks-not-written",
    ERROR,
    "outcomes give_backs note",
    "the acker stopped with outcomes it could not write; their leases expire and they are rescued",
)
ACKS_FENCED_OUT = _e(
    "acks-fenced-out",
    WARNING,
    "count note",
    "outcomes of jobs whose leases were taken over changed nothing",
)

# -- store ------------------------------------------------------------------------------
_area = "store"
STORE_UNAVAILABLE = _e(
    "store-unavailable",
    WARNING,
    "part error",
    "a part's store calls fail: it backs off and retries (once per outage)",
)
STORE_RECOVERED = _e(
    "store-recovered",
    INFO,
    "part down_for attempts",
    "a part's store calls go through again after an outage",
)
STORE_MIGRATED = _e(
    "store-migrated", INFO, "dsn schema versions", "`taskq migrate` applied migrations"
)
STORE_LISTEN_FAILED = _e(
    "store-listen-failed",
    WARNING,
    "dsn error",
    "LISTEN could not be set up; the worker polls until it can",
)

# -- maintenance: rescue, prune, vacuum, schedules -----------------------------------------
_area = "maintenance"
JOBS_PRUNED = _e(
    "jobs-pruned",
    INFO,
    "jobs worker_rows",
    "a prune pass deleted finished jobs past their keep and silent worker rows",
)
AUTOVACUUM_OFF = _e(
    "autovacuum-off",
    WARNING,
    "table problem fix vacuum_after_prune",
    "autovacuum does not reach the jobs table (Postgres): the problem and the fix",
)
AUTOVACUUM_OFF_VACUUMING = _e(
    "autovacuum-off-vacuuming",
    INFO,
    "table problem handling",
    "autovacuum does not reach the jobs table and this worker vacuums it after each prune "
    "(`--vacuum-after-prune`)",
)
JOBS_VACUUMED = _e("jobs-vacuumed", INFO, "seconds", "the jobs table was vacuumed after a prune")
JOBS_VACUUM_FAILED = _e(
    "jobs-vacuum-failed", WARNING, "error note", "the VACUUM after a prune failed or was refused"
)
BACKLOG_METRICS = _e(
    "backlog-metrics",
    INFO,
    "leader holder",
    "this worker (outside a workgroup) took (`leader` true) or lost the backlog-metrics "
    "lease: while it holds it, it exports the fleet's `taskq_queue_*` backlog metrics",
)
SCHEDULER_STARTED = _e(
    "scheduler-started", INFO, "schedules", "the registry's periodic schedules were recorded"
)
SCHEDULER_LOOK_FAILED = _e(
    "scheduler-look-failed",
    WARNING,
    "error",
    "the scheduler could not look for due ticks; it retries, the ticks stay owed",
)
PERIODIC_ENQUEUED = _e(
    "periodic-enqueued",
    INFO,
    "schedule tick job duplicate",
    "a due tick's job was enqueued (`duplicate`: another worker already had)",
)
PERIODIC_TICKS_MISSED = _e(
    "periodic-ticks-missed",
    WARNING,
    "schedule skipped policy note",
    "ticks passed while no worker looked; the missed-tick policy decided what runs",
)

# -- the CPU process pool ----------------------------------------------------------------
_area = "process pool"
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

# -- the workgroup supervisor ------------------------------------------------------------
_area = "workgroup"
WORKGROUP_STARTED = _e(
    "workgroup-started",
    INFO,
    "instance config workers shutdown_grace",
    "the supervisor started its children",
)
WORKGROUP_CONFIG_WARNING = _e(
    "workgroup-config-warning",
    WARNING,
    "warning",
    "a workgroup setting works but is risky (the grace arithmetic)",
)
WORKGROUP_HTTP_LISTENING = _e(
    "workgroup-http-listening", INFO, "host port", "`/live` `/ready` `/metrics` `/status` listen"
)
WORKGROUP_STORE_OPENED = _e(
    "workgroup-store-opened", INFO, "dsn", "the supervisor's store (rescue, health) is open"
)
WORKGROUP_STORE_UNAVAILABLE = _e(
    "workgroup-store-unavailable",
    WARNING,
    "error detail",
    "the supervisor cannot open its store; dead children's jobs wait for lease expiry",
)
WORKGROUP_CHILD_STARTED = _e(
    "workgroup-child-started", INFO, "worker child_pid restarts", "a child process started"
)
WORKGROUP_CHILD_EXITED = _e(
    "workgroup-child-exited",
    WARNING,
    "worker child_pid exit_cause exit_code exit_signal",
    "a child exited when it was not asked to stop",
)
WORKGROUP_CHILD_STOPPED = _e(
    "workgroup-child-stopped",
    INFO,
    "worker child_pid exit_cause exit_code exit_signal",
    "a child exited after it was asked to stop",
)
WORKGROUP_JOBS_RESCUED = _e(
    "workgroup-jobs-rescued",
    WARNING,
    "worker child_pid worker_id count exit_cause requeued dead jobs",
    "the jobs a dead child was running were rescued at once (no lease wait)",
)
WORKGROUP_SPAWN_FAILED = _e(
    "workgroup-spawn-failed", ERROR, "worker error argv0", "a child process could not be started"
)
WORKGROUP_RESTART_SCHEDULED = _e(
    "workgroup.restart_scheduled",
    WARNING,
    "worker reason delay exit_cause attempt restarts_in_window",
    "a child is restarted after `delay` seconds (`reason`: child_exit, spawn_failed, unhealthy)",
    Count("workgroup_child_restarts", ("worker", "reason")),
)
WORKGROUP_BURST_LIMIT_EXCEEDED = _e(
    "workgroup-burst-limit-exceeded",
    CRITICAL,
    "worker reason exit_cause restarts_in_window burst_limit burst_window detail",
    "a child restarted too often in the burst window: it is latched (not restarted)",
)
WORKGROUP_CHILD_UNHEALTHY = _e(
    "workgroup-child-unhealthy",
    ERROR,
    "worker child_pid problem action",
    "a child failed its database health check and is killed",
)
WORKGROUP_HEALTH_QUERY_FAILED = _e(
    "workgroup-health-query-failed",
    WARNING,
    "worker child_pid error consecutive_failures limit",
    "a child's health query failed (`limit` in a row makes it unhealthy)",
)
WORKGROUP_HEALTH_WATCH_FAILED = _e(
    "workgroup-health-watch-failed", ERROR, "error", "the health watch raised"
)
WORKGROUP_RESCUE_SKIPPED = _e(
    "workgroup-rescue-skipped",
    DEBUG,
    "worker child_pid detail",
    "a dead child's row was not found (or is another pid's): nothing to rescue",
)
WORKGROUP_RESCUE_FAILED = _e(
    "workgroup-rescue-failed",
    WARNING,
    "worker child_pid error detail",
    "a dead child's jobs could not be rescued at once; lease expiry rescues them",
)
WORKGROUP_STREAM_PUMP_FAILED = _e(
    "workgroup.stream_pump_failed",
    ERROR,
    "worker stream child_pid error detail",
    "forwarding a child's output failed; the child keeps running",
)
WORKGROUP_STREAM_DRAIN_FAILED = _e(
    "workgroup-stream-drain-failed",
    ERROR,
    "worker stream child_pid",
    "draining a child's output after it exited raised",
)
WORKGROUP_STREAM_NOT_CLOSED = _e(
    "workgroup-stream-not-closed",
    WARNING,
    "worker detail",
    "a child's output pipes stayed open after it exited (a grandchild holds them)",
)
WORKGROUP_RELOAD_SIGNAL = _e(
    "workgroup-reload-signal",
    INFO,
    "children workers skipped",
    "SIGHUP was forwarded to the living children",
)
WORKGROUP_RELOAD_IGNORED = _e(
    "workgroup-reload-ignored", INFO, "reason", "SIGHUP during shutdown is not forwarded"
)
WORKGROUP_SIGNAL_RECEIVED = _e(
    "workgroup-signal-received", WARNING, "signal action", "a stop signal reached the supervisor"
)
WORKGROUP_STOPPING = _e(
    "workgroup-stopping", INFO, "children shutdown_grace", "the supervisor stops its children"
)
WORKGROUP_KILLING_CHILDREN = _e(
    "workgroup-killing-children",
    WARNING,
    "workers why",
    "children still alive past the grace (or at a second signal) are killed",
)
WORKGROUP_STOPPED = _e("workgroup-stopped", INFO, "instance", "the supervisor ended")
WORKGROUP_EVENT_HOOK_FAILED = _e(
    "workgroup-event-hook-failed", ERROR, "kind", "a supervision event hook raised"
)
WORKGROUP_FLEET_REPORT_FAILED = _e(
    "workgroup-fleet-report-failed",
    WARNING,
    "error detail",
    "the fleet report could not be written (logged once per outage)",
)
WORKGROUP_FLEET_REPORT_RECOVERED = _e(
    "workgroup-fleet-report-recovered", INFO, "", "the fleet report is written again"
)
WORKGROUP_BACKLOG_METRICS = _e(
    "workgroup-backlog-metrics",
    INFO,
    "leader",
    "this supervisor took (`leader` true) or lost the backlog-metrics lease",
)
WORKGROUP_CHILD_SCRAPE_FAILED = _e(
    "workgroup-child-scrape-failed",
    DEBUG,
    "worker error",
    "a child's `/metrics` could not be read for the merged `/metrics`",
)
WORKGROUP_CHILD_METRICS_UNREADABLE = _e(
    "workgroup-child-metrics-unreadable",
    WARNING,
    "worker error",
    "a child's `/metrics` answered text that is not Prometheus text",
)

# -- the dashboard -----------------------------------------------------------------------
_area = "dashboard"
DASHBOARD_LISTENING = _e(
    "dashboard-listening", INFO, "url actions auth", "`taskq dashboard` serves"
)
DASHBOARD_UNAUTHENTICATED = _e(
    "dashboard-unauthenticated",
    WARNING,
    "host detail",
    "the dashboard listens beyond localhost without a token",
)
DASHBOARD_ACTION = _e(
    "dashboard-action",
    INFO,
    "action who client jobs requested all_dead queue count form",
    "an action (retry, cancel, pause, ...) was taken from the dashboard",
)

AREAS = tuple(dict.fromkeys(e.area for e in ALL.values()))


def markdown() -> str:
    """The events as the tables of docs/events.md (one per area)."""
    out: list[str] = []
    for area in AREAS:
        out += [f"### {area}", "", "| event | level | fields | meaning | counts |"]
        out.append("|---|---|---|---|---|")
        for e in (e for e in ALL.values() if e.area == area):
            fields = " ".join(f"`{f}`" for f in e.fields) or "-"
            counts = ", ".join(_count_doc(c) for c in e.counts) or "-"
            level = logging.getLevelName(e.level).lower()
            out.append(f"| `{e.name}` | {level} | {fields} | {e.doc} | {counts} |")
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def _count_doc(count: Count) -> str:
    from . import metrics

    family = getattr(metrics, count.metric)
    suffix = "_total" if family.kind == "counter" else ""
    return f"`{family.name}{suffix}`"
