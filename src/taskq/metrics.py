"""Every Prometheus metric taskq exports, defined in one place.

Two registries, one per kind of process: a worker serves ``WORKER`` at its
``/metrics``; a workgroup supervisor serves ``WORKGROUP``. Names are part of the public
contract (CONTRACT.md) and of the alert rules in ``deploy/prometheus/alerts.yml``.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

WORKER = CollectorRegistry(auto_describe=True)
WORKGROUP = CollectorRegistry(auto_describe=True)

# -- worker: the task supervisor (ring 1) ---------------------------------------------
pool_workers_alive = Gauge(
    "taskq_pool_workers_alive",
    "Consumer tasks alive; equals taskq_pool_workers_configured when healthy.",
    registry=WORKER,
)
pool_workers_configured = Gauge(
    "taskq_pool_workers_configured",
    "Consumer tasks the worker is configured to run.",
    registry=WORKER,
)
pool_worker_restarts = Counter(
    "taskq_pool_worker_restarts",
    "Consumer tasks replaced after dying.",
    registry=WORKER,
)
pool_items_dead_lettered = Counter(
    "taskq_pool_items_dead_lettered",
    "Jobs this worker moved to dead, by reason.",
    ["actor", "reason"],
    registry=WORKER,
)

# -- worker: jobs ----------------------------------------------------------------------
jobs_claimed = Counter("taskq_jobs_claimed", "Jobs claimed from the store.", registry=WORKER)
jobs_finished = Counter(
    "taskq_jobs_finished",
    "Runs finished, by actor and outcome (succeeded, retry, dead, crashed, cancelled, given_back).",
    ["actor", "outcome"],
    registry=WORKER,
)
job_duration = Histogram(
    "taskq_job_duration_seconds",
    "Wall time of a job run, by actor.",
    ["actor"],
    buckets=(0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300),
    registry=WORKER,
)
jobs_rescued = Counter(
    "taskq_jobs_rescued",
    "Running jobs taken back from dead runners, by how the death was "
    "noticed (lease_expired, observed) and what the crash rules did (queued, crashed, poison).",
    ["detected_by", "result"],
    registry=WORKER,
)
job_cancels = Counter(
    "taskq_job_cancels",
    "Running jobs this worker was asked to cancel, by actor and runner (async, sync, cpu); "
    'the runs that then end are counted in taskq_jobs_finished{outcome="cancelled"}.',
    ["actor", "runner"],
    registry=WORKER,
)
limit_waits = Counter(
    "taskq_limit_waits",
    "Claims by this worker that found a fleet-wide limit full (its queue's or actor's jobs "
    "wait), by kind (queue, actor) and name.",
    ["kind", "name"],
    registry=WORKER,
)
loop_lag = Gauge("taskq_loop_lag_seconds", "Last measured event-loop lag.", registry=WORKER)

# -- worker: the CPU process pool (ring 2) --------------------------------------------
process_pool_breaks = Counter(
    "taskq_process_pool_breaks",
    "Pool processes that died while running a job, or whose initializer failed, by cause.",
    ["cause"],
    registry=WORKER,
)
process_pool_processes_alive = Gauge(
    "taskq_process_pool_processes_alive",
    "Pool processes alive.",
    registry=WORKER,
)
process_pool_recycles = Counter(
    "taskq_process_pool_recycles",
    "Pool processes replaced on purpose, by reason (max_tasks, max_memory).",
    ["reason"],
    registry=WORKER,
)
process_pool_breaker_open = Gauge(
    "taskq_process_pool_breaker_open",
    "1 while the pool's breaker is open.",
    registry=WORKER,
)

# -- workgroup supervisor (ring 3) ----------------------------------------------------
workgroup_children_alive = Gauge(
    "taskq_workgroup_children_alive",
    "Child worker processes running.",
    registry=WORKGROUP,
)
workgroup_children_configured = Gauge(
    "taskq_workgroup_children_configured",
    "Child worker processes configured.",
    registry=WORKGROUP,
)
workgroup_child_restarts = Counter(
    "taskq_workgroup_child_restarts",
    "Child restarts scheduled, by worker and reason (child_exit, spawn_failed, unhealthy).",
    ["worker", "reason"],
    registry=WORKGROUP,
)
workgroup_children_latched = Gauge(
    "taskq_workgroup_children_latched",
    "Children given up on after the burst limit.",
    registry=WORKGROUP,
)
workgroup_child_scrape_ok = Gauge(
    "taskq_workgroup_child_scrape_ok",
    "1 when the child answered the supervisor's scrape of its health socket, by worker.",
    ["worker"],
    registry=WORKGROUP,
)


# -- the fleet's backlog (computed by the one supervisor holding the lease) ---------
queue_jobs = Gauge(
    "taskq_queue_jobs",
    "Jobs per queue in the queued, running and dead states.",
    ["queue", "state"],
    registry=WORKGROUP,
)
queue_oldest_age = Gauge(
    "taskq_queue_oldest_age_seconds",
    "Age of the oldest queued job whose run_at has passed, per queue (0 when none is due).",
    ["queue"],
    registry=WORKGROUP,
)
queue_paused = Gauge(
    "taskq_queue_paused",
    "1 for each paused queue (taskq queues pause), from the backlog leader.",
    ["queue"],
    registry=WORKGROUP,
)
backlog_leader = Gauge(
    "taskq_backlog_leader",
    "1 on the workgroup supervisor that computes the fleet's backlog metrics.",
    registry=WORKGROUP,
)


def render(registry: CollectorRegistry) -> bytes:
    """The Prometheus text exposition of one registry."""
    return generate_latest(registry)
