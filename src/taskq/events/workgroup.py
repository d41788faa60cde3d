"""The events of a workgroup supervisor, and of the dashboard (declared with ``declare``;
listed in docs/events.md)."""

from __future__ import annotations

from .declare import CRITICAL, DEBUG, ERROR, INFO, WARNING, Count, declare

# -- the workgroup supervisor ------------------------------------------------------------
_e = declare("workgroup")
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
_e = declare("dashboard")
DASHBOARD_LISTENING = _e(
    "dashboard.listening",
    INFO,
    "url actions auth hosts",
    "`taskq dashboard` is bound and serves; `hosts` are the host names it answers to",
)
DASHBOARD_UNAUTHENTICATED = _e(
    "dashboard-unauthenticated",
    WARNING,
    "host detail",
    "the dashboard listens beyond localhost without a token",
)
DASHBOARD_AUTH_FAILED = _e(
    "dashboard.auth_failed",
    WARNING,
    "client user scheme limit window",
    "a wrong dashboard token (never logged) from `client`; once per burst: the first of "
    "failures less than `window` seconds apart; after `limit` of them within `window` the "
    "client is answered 429",
)
DASHBOARD_ACTION_REFUSED = _e(
    "dashboard-action-refused",
    WARNING,
    "client who origin why",
    "an action was refused: it did not come from the dashboard's own pages (`origin`: the "
    "request's Origin or Referer) or its CSRF token was not minted for this session and user",
)
DASHBOARD_ACTION = _e(
    "dashboard-action",
    INFO,
    "action who client jobs requested all_dead queue count form filter",
    "an action (retry, cancel, pause, ...) was taken from the dashboard",
)
