"""The one store seam: everything taskq persists goes through a ``Store``.

Split by audience: ``Store`` (here) is what workers, clients and the workgroup
supervisor call; ``Insight`` (``store/insight.py``, reached as ``store.insight``) is the
operator's views (metrics, dashboard, ``taskq workers``) on the same connections.

Two engines implement both, each a package: ``store.postgres`` (the distributed engine,
psycopg 3 async with a pool) and ``store.sqlite`` (the embedded default, one file shared
by the processes of one host). Each keeps its SQL in one file in its package
(``postgres/postgres.sql``, ``sqlite/sqlite.sql``), as named blocks, and its schema as
numbered migrations under ``migrations/<engine>/``. One conformance suite
(``tests/conformance/``) runs against every engine.

Every method is a coroutine. Times are timezone-aware UTC ``datetime`` values. Writes
that finish a run are *fenced* by ``(job_id, attempt, worker_id)`` and ``state =
'running'``: a worker whose lease was taken over can never overwrite the new owner.

Crash rules (applied in SQL, the same everywhere a runner death is handled):
``crash_count + 1``; then ``dead/poison`` if a death blamed on the job alone brings its
blames to ``max_crashes``, or its unproven deaths (unblamed, or shared with other jobs)
reach the actor's ``max_unblamed_crashes`` (taskq.blame, docs/jobs.md); else if the job
is idempotent -> ``queued`` (run again at once); else -> ``dead/crashed``. The cause is
written to ``last_error``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol, runtime_checkable
from uuid import UUID

from ..insight import Autovacuum, VacuumResult
from ..jobs import (
    ActorConfig,
    CancelResult,
    Claim,
    Job,
    JobColumns,
    JobSpec,
    Limits,
    Outcome,
    QueueInfo,
    RescuedJob,
    ScheduleInfo,
    StepRow,
    WorkerInfo,
    WorkflowRow,
)
from ..workflows.model import WorkflowInfo
from .drift import Difference
from .insight import Insight


class Store(Protocol):
    """What workers, clients and the workgroup supervisor call."""

    kind: str  # "postgres" | "sqlite"

    @property
    def display_dsn(self) -> str:
        """The DSN, safe to log (password removed)."""

    @property
    def insight(self) -> Insight:
        """The operator's views of this store, on its connections (``store/insight.py``)."""

    def open_connections(self) -> int:
        """The connections this store holds open now (Postgres: its pool, claim and
        LISTEN connections and the calling threads'; SQLite: its own and the calling
        threads'), for ``taskq workers`` and ``taskq_store_connections``."""

    # -- lifecycle -------------------------------------------------------------------
    async def open(self) -> None:
        """Connect. Raises StoreUnavailable (driver error in __cause__)."""

    async def close(self) -> None:
        """Idempotent."""

    async def reconnect(self, dsn: str | None = None) -> None:
        """Build a fresh connection pool (SIGHUP credential reload). On failure raise and
        keep the old pool."""

    async def migrate(self) -> list[str]:
        """Create or upgrade the schema; return the versions applied now ([] if none).
        Safe when several processes run it at once."""

    async def check_schema(self) -> None:
        """Raise SchemaNotMigrated unless every migration is applied."""

    async def ping(self) -> None:
        """One cheap round trip; raises StoreUnavailable."""

    async def now(self) -> datetime:
        """The store's clock."""

    # -- producers -------------------------------------------------------------------
    async def enqueue(self, specs: Sequence[JobSpec]) -> list[UUID]:
        """Insert all jobs in one round trip / one transaction and wake listening
        workers once per batch. All or nothing.

        Returns one id per spec: the spec's own, or, when its ``unique_key`` is held by
        a job in one of that job's ``unique_states``, the holder's (nothing inserted for
        it). Race-free: the unique partial index decides, never a read-then-write."""

    async def enqueue_columns(self, jobs: JobColumns) -> None:
        """Insert a batch of jobs without unique keys, given as columns (the batch
        enqueue's path: no ``JobSpec`` per job). The same rows, the same wake-up and the
        same all-or-nothing as ``enqueue(jobs.specs())``; the ids are ``jobs.ids``."""

    async def get_job(self, job_id: UUID) -> Job | None: ...

    async def list_jobs(
        self,
        *,
        state: str | None = None,
        queue: str | None = None,
        tag: str | None = None,
        limit: int = 100,
    ) -> list[Job]:
        """Newest first; ``tag`` keeps the jobs carrying that tag."""

    async def stats(self) -> dict[str, int]:
        """Count per state; every state in ALL_STATES present (0 when none)."""

    async def retry_jobs(self, job_ids: Sequence[UUID]) -> list[UUID]:
        """Dead or cancelled jobs back to queued now (attempts and crash_count reset to 0,
        dead_reason cleared, last_error kept). Returns the ids that moved."""

    async def retry_all_dead(self) -> int: ...

    async def cancel_jobs(self, job_ids: Sequence[UUID], *, by: str | None = None) -> list[UUID]:
        """Queued jobs -> cancelled. Returns the ids that moved."""

    async def request_cancel(
        self, job_ids: Sequence[UUID], *, by: str | None = None
    ) -> dict[UUID, tuple[CancelResult, str]]:
        """Cancel jobs whatever they are doing: queued -> cancelled now; running -> the
        cancel is recorded (``cancelled_at``, ``cancelled_by``) and the worker running it
        is told (NOTIFY on Postgres; it also polls ``cancel_requested``), stops it and
        records it cancelled; finished jobs are left alone. Returns, for every id that
        exists, what happened and the job's state."""

    async def cancel_requested(self, worker_id: UUID) -> list[UUID]:
        """The running jobs of ``worker_id`` whose cancel was asked for."""

    async def wait_for_cancels(self, timeout: float) -> bool:
        """Return when a cancel request may have arrived (NOTIFY on Postgres) or after
        ``timeout``; True if woken by a notification. Raises StoreError when it cannot
        listen (the caller backs off)."""

    async def advance_next_scheduled(self, queues: Sequence[str]) -> list[UUID]:
        """Make the queued jobs with the earliest future ``run_at`` on ``queues`` due now
        (``taskq.testing.drain`` jumping to the next scheduled moment). Returns their ids
        ([] when no job on those queues waits for a later time)."""

    # -- workflows (docs/workflows.md; the fan-in is migration 0007's trigger) -----------
    async def enqueue_workflow(self, workflow: WorkflowRow) -> None:
        """Insert a workflow and every step of it in one transaction (all or nothing);
        steps with no upstream step are due now, the others wait."""

    async def get_workflow(self, workflow_id: UUID) -> WorkflowInfo | None:
        """A workflow and its steps (in the order they were added), or None."""

    async def upstream_results(self, step_id: UUID) -> dict[str, Any]:
        """``{step name: result}`` of the steps that step ``step_id`` runs after (its
        upstream steps, as it starts); {} for a step that runs after none."""

    async def cancel_workflow(self, workflow_id: UUID, *, by: str | None = None) -> int | None:
        """Cancel a workflow: its queued steps now, its running ones asked to stop (as
        ``request_cancel``); record who. Returns how many steps moved; None if no such
        workflow."""

    async def complete_fanout(
        self, worker_id: UUID, outcome: Outcome, added: Sequence[StepRow]
    ) -> int:
        """A running step's outcome with the steps it added to its workflow, in one
        transaction, fenced as ``complete``: the added steps run after it, and the steps
        after it wait for them too. A run no longer held (or one whose cancel was asked
        for) adds nothing. Returns the rows changed (0: fenced out)."""

    # -- periodic schedules ------------------------------------------------------------
    async def record_schedules(self, schedules: Sequence[Mapping[str, str]], now: datetime) -> None:
        """Upsert schedule definitions (``name``, ``actor``, ``cron``, ``timezone``,
        ``missed``) seen at ``now`` (the scheduler's clock), keeping ``first_seen_at``
        (``now`` for a new one) and ``last_tick``."""

    async def list_schedules(self) -> list[ScheduleInfo]:
        """Every recorded schedule, by name."""

    async def mark_schedule_tick(self, name: str, tick: datetime) -> None:
        """The schedule's ticks up to ``tick`` are done; ``last_tick`` never goes back."""

    async def actor_configs(self) -> dict[str, ActorConfig]:
        """Actor configuration recorded by workers (enqueue by name uses it)."""

    async def sync_actor_configs(
        self, configs: Sequence[ActorConfig], *, force: bool
    ) -> list[Difference]:
        """Record ``configs``; return how they differ from what was stored (``drift``).
        A difference of where jobs go (``Difference.routes``: an actor's queue) is
        written only with ``force``: without it nothing is written, and the caller
        refuses to start. The read and the write are one transaction, so of workers
        starting at once with the same change exactly one gets it back (and logs it)."""

    # -- workers ---------------------------------------------------------------------
    async def register_worker(self, info: WorkerInfo) -> None: ...

    async def unregister_worker(self, worker_id: UUID) -> None: ...

    async def find_worker(self, workgroup_instance: UUID, worker_label: str) -> WorkerInfo | None:
        """Newest row for (instance, label): the workgroup's health check."""

    async def heartbeat(
        self, worker_id: UUID, lease_seconds: float, connections: int | None = None
    ) -> int:
        """Touch the worker row (and record ``connections``, the Postgres connections it
        holds open, when given) and extend the leases of all its running jobs, in one
        round trip. Returns the number of leases extended."""

    async def claim(
        self,
        worker_id: UUID,
        queues: Sequence[str],
        limit: int,
        lease_seconds: float,
        exclude_actors: Sequence[str] = (),
    ) -> Claim:
        """Claim up to ``limit`` due queued jobs, ``ORDER BY priority, run_at, id``:
        state -> running, attempt + 1, worker_id, lease, started_at. Concurrent claimers
        never get the same job. ``exclude_actors`` leaves those actors' jobs queued (the
        CPU pool's breaker is open). Paused queues are skipped. Where limits apply
        (``set_limits``), at most ``concurrency`` jobs of that queue or actor run at once
        across all claimers and at most ``rate`` start in any window of its period:
        enforced inside the claim's transaction, so no race of claimers exceeds them.
        The ``Claim`` carries the runs in claim order and the limits this claim found
        full (``limit_waits``)."""

    async def complete(self, worker_id: UUID, outcomes: Sequence[Outcome]) -> int:
        """Write a batch of outcomes in one round trip, each fenced. Returns how many
        rows changed (a fenced-out outcome changes nothing)."""

    async def give_back(self, worker_id: UUID, jobs: Sequence[tuple[UUID, int]]) -> int:
        """Return claimed jobs (id, attempt) to queued without charging the attempt
        (attempt - 1). Fenced. Used for unstarted jobs and at shutdown."""

    async def rescue_worker(
        self, worker_id: UUID, cause: str, *, blamed: bool = False
    ) -> list[RescuedJob]:
        """An observed death: apply the crash rules to every running job of that worker
        now, and remove the worker row. ``blamed``: the cause points at a job
        (taskq.blame); the death is shared when the worker ran more than one job."""

    async def rescue_expired(
        self, cause: str, *, exclude_worker: UUID | None = None
    ) -> list[RescuedJob]:
        """Apply the crash rules to running jobs whose lease expired (one rescuer at a
        time across processes). ``cause`` is a prefix; the lost worker is named. A
        rescuer passes its own worker as ``exclude_worker``: it knows those runs are
        alive, whatever their lease says."""

    async def prune(
        self,
        *,
        succeeded_before: datetime,
        workers_before: datetime,
        batch: int = 1000,
        dead_before: datetime | None = None,
        cancelled_before: datetime | None = None,
    ) -> tuple[int, int]:
        """Delete succeeded jobs finished before ``succeeded_before``, dead ones before
        ``dead_before`` and cancelled ones before ``cancelled_before`` (None: keep them),
        in batches, and worker rows not seen since ``workers_before`` that hold no
        running job. Returns (jobs_deleted, workers_deleted)."""

    # -- queue controls ----------------------------------------------------------------
    async def paused_queues(self) -> list[str]:
        """The names of the paused queues."""

    async def set_queue_paused(self, name: str, paused: bool, *, by: str | None = None) -> None:
        """Pause (every claim skips the queue) or resume a queue; idempotent. A pause
        keeps the first pause's time and author."""

    async def set_limits(self, kind: str, name: str, limits: Limits) -> None:
        """Set the limits of a queue (``kind="queue"``) or an actor (``"actor"``) to
        exactly ``limits``; empty ``Limits()`` removes them."""

    async def get_limits(self) -> dict[tuple[str, str], Limits]:
        """Every limit, keyed by (kind, name)."""

    async def queue_overview(self) -> list[QueueInfo]:
        """Every queue that has jobs, is paused or has limits, sorted by name, with its
        count in every state (``taskq queues``; the dashboard's cheaper view is
        ``Insight.queue_statuses``)."""

    async def wait_for_jobs(self, queues: Sequence[str], timeout: float) -> bool:
        """Return when a job may be available on ``queues`` (NOTIFY on Postgres) or
        after ``timeout``. True if woken by a notification."""

    async def warm_up(self) -> None:
        """Open what a worker's claims and wake-ups use (Postgres: the claim connection
        and the LISTEN connection) ahead of them, so that a starting worker's first claim
        does not wait for connects. Claims nothing, listens to nothing yet; best effort
        (a failure is left for the claim or the wait itself to meet and report)."""

    # -- the fleet's coordination -------------------------------------------------------
    async def try_lead(self, name: str, holder: str, seconds: float) -> bool:
        """Take or renew the lease named ``name`` for ``seconds``; True while ``holder``
        holds it (one holder across every process on the store)."""

    async def release_lead(self, name: str, holder: str) -> None: ...

    async def report_workgroup(
        self, instance: UUID, hostname: str, pid: int, children: list[dict[str, Any]]
    ) -> None:
        """Record a workgroup supervisor's status of its children (the dashboard)."""

    async def remove_workgroup(self, instance: UUID) -> None: ...

    # -- upkeep of the jobs table (docs/operating.md) --------------------------------------
    async def autovacuum(self) -> Autovacuum | None:
        """Postgres: whether autovacuum reclaims the jobs table's dead rows, and whether
        this role may VACUUM the table. None on a store with nothing to vacuum (SQLite)."""

    async def vacuum_jobs(self, *, unless_vacuumed_within: float) -> VacuumResult:
        """``VACUUM`` the jobs table (Postgres), unless it was vacuumed (by anyone,
        autovacuum too) in the last ``unless_vacuumed_within`` seconds or another vacuum
        holds it (never waited for). A server that skips it with a warning (the role may
        not vacuum the table) is REFUSED, with the warning. SQLite: UNSUPPORTED."""


@runtime_checkable
class LocalEnqueue(Protocol):
    """A store that can write plain jobs on the calling thread, with no hop to the
    store's own thread or loop: SQLite on a connection of that thread's, Postgres on a
    synchronous psycopg connection (store/postgres/here.py). The synchronous
    ``taskq.Client`` uses it for every plain job of an ``Actor`` (taskq/enqueuer.py)."""

    def enqueue_columns_here(self, jobs: JobColumns) -> None:
        """``enqueue_columns``, on a connection of the calling thread's own; the store
        must be open."""
