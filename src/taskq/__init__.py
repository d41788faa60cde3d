"""taskq: background jobs on Postgres (SQLite embedded) where workers die and nothing is
lost or silent.

The public face is re-exported here; everything else is internal and may move.

Layout (see docs/architecture.md for the picture):

* ``registry``   actors and their options (``Registry``, ``@registry.actor``)
* ``client``     ``Client`` / ``AsyncClient``: enqueue, inspect, retry, cancel (imported
                 on first use: a worker process, which never needs them, does not load
                 them nor what only they use)
* ``workflows/`` ``Workflow``, ``step``, ``chain``, ``group``: steps that run after steps
                 (imported on first use, like the clients)
* ``store/``     the one ``Store`` seam; Postgres and SQLite engines, SQL in .sql files
* ``restart``    the restart policy every supervisor uses (one per member); ``backoff``
                 its delays and rolling window
* ``middleware`` ``Middleware``, the extension seam around every enqueue and every job
* ``enqueuer``   the one enqueue both clients share: ``plan`` (``EnqueuePlan``, the
                 options value), ``specs`` (the builder), ``arguments`` (the signature
                 check)
* ``worker/``    the worker process: fetch, supervise consumers, run, ack, heartbeat, rescue,
                 prune
* ``procpool``   the CPU process pool for ``cpu_bound`` actors
* ``workgroup/`` the supervisor of worker processes (``taskq workgroup``)
* ``exceptions`` every error, rooted at ``TaskqError``; ``exit_codes`` every exit code
"""

from typing import TYPE_CHECKING, Any

# First, before anything heavy is imported: a workgroup child whose supervisor already
# died exits here, and asks the kernel to stop it when the supervisor dies later.
from .parentdeath import guard as _guard_parent

_guard_parent()

from .context import JobContext, current_job  # noqa: E402
from .exceptions import (  # noqa: E402
    ActorConfigDrift,
    ActorError,
    ActorImportError,
    ActorNotFound,
    ArgumentsMismatch,
    ConfigError,
    DuplicateActor,
    InvalidDSN,
    InvalidJobState,
    InvalidText,
    InvalidWorkflow,
    JobNotFound,
    NoCurrentJob,
    NotJSONSerializable,
    PayloadError,
    PayloadTooDeep,
    PayloadTooLarge,
    SchemaNotMigrated,
    Snooze,
    StoreError,
    StoreUnavailable,
    TaskqError,
    WorkflowNotFound,
)
from .jobs import DeadReason, Job, JobId, JobState  # noqa: E402
from .middleware import Middleware  # noqa: E402
from .plan import EnqueuePlan  # noqa: E402
from .registry import Actor, Registry, RetryBackoff  # noqa: E402
from .unique import Unique  # noqa: E402

if TYPE_CHECKING:
    from .client import AsyncClient, Client
    from .workflows.graph import Step, StepRef, Workflow, chain, group, step
    from .workflows.model import StepInfo, WorkflowInfo

__version__ = "0.1.0"

__all__ = [
    "Actor",
    "ActorConfigDrift",
    "ActorError",
    "ActorImportError",
    "ActorNotFound",
    "ArgumentsMismatch",
    "AsyncClient",
    "Client",
    "ConfigError",
    "DeadReason",
    "DuplicateActor",
    "EnqueuePlan",
    "InvalidDSN",
    "InvalidJobState",
    "InvalidText",
    "InvalidWorkflow",
    "Job",
    "JobContext",
    "JobId",
    "JobNotFound",
    "JobState",
    "Middleware",
    "NoCurrentJob",
    "NotJSONSerializable",
    "PayloadError",
    "PayloadTooDeep",
    "PayloadTooLarge",
    "Registry",
    "RetryBackoff",
    "SchemaNotMigrated",
    "Snooze",
    "Step",
    "StepInfo",
    "StepRef",
    "StoreError",
    "StoreUnavailable",
    "TaskqError",
    "Unique",
    "Workflow",
    "WorkflowInfo",
    "WorkflowNotFound",
    "__version__",
    "chain",
    "current_job",
    "group",
    "step",
]


_WORKFLOWS = frozenset(
    {"Step", "StepInfo", "StepRef", "Workflow", "WorkflowInfo", "chain", "group", "step"}
)


def __getattr__(name: str) -> Any:
    # the clients (and the transactional enqueue, the job builder and the tracing of
    # enqueues they bring) are imported on first use
    if name in ("AsyncClient", "Client"):
        from . import client

        return getattr(client, name)
    if name in _WORKFLOWS:  # taskq.workflows: loaded by the programs that build them
        from .workflows import graph, model

        return getattr(graph if hasattr(graph, name) else model, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
