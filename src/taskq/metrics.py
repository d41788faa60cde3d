"""Every Prometheus metric taskq exports, defined in one place.

One registry per kind of process: a worker serves ``WORKER`` at its ``/metrics``; a
workgroup supervisor serves ``WORKGROUP``. The fleet's backlog (``BACKLOG``: computed by
the one process holding the backlog-metrics lease, ``taskq.backlog``) is included in
``WORKGROUP`` and in ``BARE_WORKER``, what a worker outside a workgroup serves. Names are
part of the public contract (CONTRACT.md) and of the alert rules in
``deploy/prometheus/alerts.yml``.

The values are kept here, by the small ``Counter``, ``Gauge`` and ``Histogram`` below
(the subset of ``prometheus_client``'s API taskq uses: ``labels``, ``inc``, ``dec``,
``set``, ``observe``, ``clear``). ``prometheus_client`` itself is imported only to expose
them (``Registry.collect``, ``render``: the first ``/metrics`` request), so a worker that
is never scraped never loads it: it was ~10% of the instructions of a worker's start on
Postgres, ~15% on SQLite (docs/benchmarks.md, "Round 3"). The text is
``prometheus_client``'s own (``generate_latest``), the ``_created`` series included.
"""

from __future__ import annotations

import bisect
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from typing import Any, Generic, TypeVar

INF = float("inf")


class Registry:
    """The metric families of one kind of process, in the order they were defined, then
    those of the registries it ``includes``."""

    def __init__(self, *includes: Registry) -> None:
        self._own: list[_Family[Any]] = []
        self._includes = includes

    @property
    def _families(self) -> list[_Family[Any]]:
        return self._own + [f for r in self._includes for f in r._families]

    def add(self, family: _Family[Any]) -> None:
        self._own.append(family)

    def collect(self) -> Iterator[Any]:
        """``prometheus_client`` metric families (what ``generate_latest`` reads)."""
        from prometheus_client.metrics_core import Metric

        for family in self._families:
            metric = Metric(family.name, family.documentation, family.kind)
            for labels, child in family.children():
                for suffix, extra, value in child.samples():
                    metric.add_sample(family.name + suffix, {**labels, **extra}, value)
            yield metric

    def get_sample_value(self, name: str, labels: dict[str, str] | None = None) -> float | None:
        """The value of one sample (``taskq_jobs_claimed_total``, ...), None if absent."""
        for metric in self.collect():
            for sample in metric.samples:
                if sample.name == name and sample.labels == (labels or {}):
                    return float(sample.value)
        return None

    def names(self) -> set[str]:
        """Every sample name the registry exports, also of families with no sample yet."""
        return {f.name + suffix for f in self._families for suffix in f.suffixes}


class _Counted:
    __slots__ = ("_lock", "created", "value")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.value = 0.0
        self.created = time.time()

    def inc(self, amount: float = 1.0) -> None:
        if amount < 0:
            raise ValueError("a counter only goes up")
        with self._lock:
            self.value += amount

    def samples(self) -> list[tuple[str, dict[str, str], float]]:
        return [("_total", {}, self.value), ("_created", {}, self.created)]


class _Gauged:
    __slots__ = ("_lock", "value")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.value = 0.0

    def set(self, value: float) -> None:
        self.value = float(value)

    def inc(self, amount: float = 1.0) -> None:
        with self._lock:
            self.value += amount

    def dec(self, amount: float = 1.0) -> None:
        with self._lock:
            self.value -= amount

    def samples(self) -> list[tuple[str, dict[str, str], float]]:
        return [("", {}, self.value)]


class _Observed:
    __slots__ = ("_bounds", "_counts", "_lock", "_sum", "created")

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self._bounds = bounds
        self._counts = [0] * len(bounds)
        self._sum = 0.0
        self._lock = threading.Lock()
        self.created = time.time()

    def observe(self, amount: float) -> None:
        index = bisect.bisect_left(self._bounds, amount)  # the first bucket with le >= amount
        with self._lock:
            self._counts[index] += 1
            self._sum += amount

    def samples(self) -> list[tuple[str, dict[str, str], float]]:
        from prometheus_client.utils import floatToGoString

        with self._lock:
            counts, total = list(self._counts), self._sum
        out, seen = [], 0.0
        for bound, count in zip(self._bounds, counts, strict=True):
            seen += count
            le = floatToGoString(bound)  # type: ignore[no-untyped-call]  # as prometheus writes it
            out.append(("_bucket", {"le": le}, seen))
        return [*out, ("_count", {}, seen), ("_sum", {}, total), ("_created", {}, self.created)]


C = TypeVar("C", _Counted, _Gauged, _Observed)


class _Family(ABC, Generic[C]):
    """One metric: a single value, or one per combination of label values."""

    kind = ""
    suffixes: tuple[str, ...] = ()  # of its sample names

    def __init__(
        self, name: str, documentation: str, labelnames: Sequence[str] = (), *, registry: Registry
    ) -> None:
        self.name = name
        self.documentation = documentation
        self.labelnames = tuple(labelnames)
        self._lock = threading.Lock()
        self._children: dict[tuple[object, ...], C] = {}  # label values (as str) -> value
        self._single: C | None = None if self.labelnames else self._new()
        registry.add(self)

    @abstractmethod
    def _new(self) -> C:
        """A new value (the metric's own, or one label combination's)."""

    def labels(self, *values: object, **named: object) -> C:
        """The value for these label values (made at first use)."""
        if named:
            values = tuple(named[label] for label in self.labelnames)
        child = self._children.get(values)
        if child is not None:
            return child
        if len(values) != len(self.labelnames):
            raise ValueError(f"{self.name} takes labels {self.labelnames}, got {values!r}")
        key = tuple(str(v) for v in values)
        with self._lock:
            child = self._children.get(key)
            if child is None:
                child = self._children[key] = self._new()
        return child

    def clear(self) -> None:
        """Forget every labelled value."""
        with self._lock:
            self._children.clear()

    def children(self) -> list[tuple[dict[str, str], C]]:
        if self._single is not None:
            return [({}, self._single)]
        with self._lock:
            items = list(self._children.items())
        return [({n: str(v) for n, v in zip(self.labelnames, k, strict=True)}, c) for k, c in items]

    def _one(self) -> C:
        if self._single is None:
            raise ValueError(f"{self.name} has labels {self.labelnames}: use .labels(...)")
        return self._single


class Counter(_Family[_Counted]):
    kind = "counter"
    suffixes = ("_total", "_created")

    def _new(self) -> _Counted:
        return _Counted()

    def inc(self, amount: float = 1.0) -> None:
        self._one().inc(amount)


class Gauge(_Family[_Gauged]):
    kind = "gauge"
    suffixes = ("",)

    def _new(self) -> _Gauged:
        return _Gauged()

    def set(self, value: float) -> None:
        self._one().set(value)

    def inc(self, amount: float = 1.0) -> None:
        self._one().inc(amount)

    def dec(self, amount: float = 1.0) -> None:
        self._one().dec(amount)


class Histogram(_Family[_Observed]):
    kind = "histogram"
    suffixes = ("_bucket", "_count", "_sum", "_created")

    def __init__(
        self,
        name: str,
        documentation: str,
        labelnames: Sequence[str] = (),
        *,
        buckets: Sequence[float],
        registry: Registry,
    ) -> None:
        bounds = tuple(sorted(float(b) for b in buckets))
        self._bounds = bounds if bounds and bounds[-1] == INF else (*bounds, INF)
        super().__init__(name, documentation, labelnames, registry=registry)

    def _new(self) -> _Observed:
        return _Observed(self._bounds)

    def observe(self, amount: float) -> None:
        self._one().observe(amount)


WORKER = Registry()
BACKLOG = Registry()
WORKGROUP = Registry(BACKLOG)
BARE_WORKER = Registry(WORKER, BACKLOG)  # a worker outside a workgroup

# -- worker: the task supervisor (ring 1) ---------------------------------------------
consumers_alive = Gauge(
    "taskq_pool_workers_alive",
    "Consumer tasks alive; equals taskq_pool_workers_configured when healthy.",
    registry=WORKER,
)
consumers_configured = Gauge(
    "taskq_pool_workers_configured",
    "Consumer tasks the worker is configured to run.",
    registry=WORKER,
)
consumer_restarts = Counter(
    "taskq_pool_worker_restarts",
    "Consumer tasks replaced after dying.",
    registry=WORKER,
)
jobs_dead_lettered = Counter(
    "taskq_pool_items_dead_lettered",
    "Jobs this worker moved to dead, by queue, actor and reason.",
    ["queue", "actor", "reason"],
    registry=WORKER,
)

# -- worker: jobs ----------------------------------------------------------------------
jobs_claimed = Counter("taskq_jobs_claimed", "Jobs claimed from the store.", registry=WORKER)
jobs_finished = Counter(
    "taskq_jobs_finished",
    "Runs finished, by queue, actor and outcome (succeeded, retry, dead, crashed, cancelled, "
    "snoozed, given_back).",
    ["queue", "actor", "outcome"],
    registry=WORKER,
)
job_duration = Histogram(
    "taskq_job_duration_seconds",
    "Wall time of a job run, by queue and actor.",
    ["queue", "actor"],
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
    "Running jobs this worker was asked to cancel, by queue, actor and runner (async, sync, "
    'cpu); the runs that then end are counted in taskq_jobs_finished{outcome="cancelled"}.',
    ["queue", "actor", "runner"],
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
store_connections = Gauge(
    "taskq_store_connections",
    "Postgres connections this worker holds open (pool, claims, LISTEN, heartbeat), as of its "
    "last heartbeat; at most --max-connections.",
    registry=WORKER,
)
wake_relay_lost = Counter(
    "taskq_wake_relay_lost",
    "Times this workgroup child lost its supervisor's wake-up relay and fell back to polling.",
    registry=WORKER,
)

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
workgroup_wake_relay_listening = Gauge(
    "taskq_workgroup_wake_relay_listening",
    "1 while the supervisor's one LISTEN connection for the host (TASKQ_PG_DSN_DIRECT) is up.",
    registry=WORKGROUP,
)
workgroup_child_scrape_ok = Gauge(
    "taskq_workgroup_child_scrape_ok",
    "1 when the child answered the supervisor's scrape of its health socket, by worker.",
    ["worker"],
    registry=WORKGROUP,
)


# -- the fleet's backlog (computed by the one process holding the lease) -------------
queue_jobs = Gauge(
    "taskq_queue_jobs",
    "Jobs per queue in the queued, running and dead states.",
    ["queue", "state"],
    registry=BACKLOG,
)
queue_oldest_age = Gauge(
    "taskq_queue_oldest_age_seconds",
    "Age of the oldest queued job whose run_at has passed, per queue (0 when none is due).",
    ["queue"],
    registry=BACKLOG,
)
queue_paused = Gauge(
    "taskq_queue_paused",
    "1 for each paused queue (taskq queues pause), from the backlog leader.",
    ["queue"],
    registry=BACKLOG,
)
workflows_finished = Counter(
    "taskq_workflows_finished",
    "Workflow runs that ever finished, by end state (succeeded, failed, cancelled): counted "
    "in the database by the statement that ended each run's last step.",
    ["state"],
    registry=BACKLOG,
)
backlog_leader = Gauge(
    "taskq_backlog_leader",
    "1 on the process (workgroup supervisor or worker outside a workgroup) that computes "
    "the fleet's backlog metrics.",
    registry=BACKLOG,
)


def render(registry: Registry) -> bytes:
    """The Prometheus text exposition of one registry (``prometheus_client`` loads here)."""
    from prometheus_client import generate_latest

    return bytes(generate_latest(registry))
