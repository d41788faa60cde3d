"""The events of a worker process: its life, credentials, consumers, jobs, store and
maintenance (declared with ``declare``; listed in docs/events.md)."""

from __future__ import annotations

from .declare import CRITICAL, ERROR, INFO, WARNING, Count, declare

# -- a worker's life ----------------------------------------------------------------------
_e = declare("worker")
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
    "this worker's code changed actor options (`differences`: `actor: option old -> new`) "
    "and recorded them: logged once, by the one worker that wrote the change (a change "
    "of queue only with --force-update-actor-config)",
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
_e = declare("credentials")
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
_e = declare("consumers")
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
_e = declare("jobs")
JOB_RETRY_SCHEDULED = _e(
    "job-retry-scheduled",
    WARNING,
    "job actor attempt max_attempts delay error",
    "an attempt raised and the job runs again after `delay` seconds (logged once the "
    "retry is written)",
)
JOB_DEAD = _e(
    "job-dead",
    WARNING,
    "job actor queue reason attempt error",
    "the job ended dead (`reason`: its dead reason), logged once that is written",
    Count("jobs_dead_lettered", ("queue", "actor", "reason")),
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
    "job actor queue detected_by result state dead_reason crash_count",
    "a running job whose runner died was re-queued or ended (`detected_by`: how)",
    Count("jobs_rescued", ("detected_by", "result")),
    Count("jobs_dead_lettered", ("queue", "actor", "dead_reason"), when="dead_reason"),
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
    "job actor queue runner",
    "a running job was asked to stop (a cancel)",
    Count("job_cancels", ("queue", "actor", "runner")),
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
JOB_END_NOT_WRITTEN = _e(
    "job-end-not-written",
    WARNING,
    "job actor outcome reason why",
    "a run's end (`outcome`: retry, dead, succeeded) was not written, so it is not logged "
    "as `job-retry-scheduled` / `job-dead` / `job-result-dropped`: fenced out (the crash "
    "rules ended the run first) or the worker stopped before the store answered; the "
    "store's state stands (`why`)",
)
ACKS_FENCED_OUT = _e(
    "acks-fenced-out",
    WARNING,
    "count note",
    "outcomes of jobs whose leases were taken over changed nothing",
)

# -- store ------------------------------------------------------------------------------
_e = declare("store")
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
LISTEN_UNAVAILABLE = _e(
    "listen-unavailable",
    WARNING,
    "dsn fix",
    "TASKQ_DSN goes through a connection pooler and no TASKQ_PG_DSN_DIRECT is set: no "
    "LISTEN, the worker polls for new jobs and cancels (once per store)",
)
STORE_LISTEN_FAILED = _e(
    "store-listen-failed",
    WARNING,
    "dsn error",
    "LISTEN could not be set up; the worker polls until it can",
)

# -- wake-ups: the host's one LISTEN connection, relayed by the workgroup supervisor ---------
_e = declare("wake-ups")
WAKE_RELAY_LISTENING = _e(
    "wake-relay-listening",
    INFO,
    "dsn schema children",
    "the workgroup supervisor LISTENs for the whole host on `TASKQ_PG_DSN_DIRECT` (one "
    "connection) and hands new-job and cancel notifications down to its children; logged "
    "at start and again after each outage of that connection",
)
WAKE_RELAY_LISTEN_FAILED = _e(
    "wake-relay-listen-failed",
    WARNING,
    "dsn error",
    "the supervisor's LISTEN connection cannot be opened or broke: its children poll (every "
    "`poll_interval`) until it is back (once per outage)",
)
WAKE_RELAY_LOST = _e(
    "wake-relay-lost",
    WARNING,
    "error note",
    "a workgroup child lost its supervisor's wake-up relay (the supervisor is gone): it polls "
    "for new jobs every `poll_interval` and for cancels every second from now on",
    Count("wake_relay_lost"),
)

# -- maintenance: rescue, prune, vacuum, schedules -----------------------------------------
_e = declare("maintenance")
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
