"""taskq: background jobs on Postgres (SQLite embedded) where workers die and nothing is
lost or silent.

The public face is re-exported here; everything else is internal and may move.

Layout (see docs/architecture.md for the picture):

* ``registry``   actors and their options (``Registry``, ``@registry.actor``)
* ``client``     ``Client`` / ``AsyncClient``: enqueue, inspect, retry, cancel
* ``store/``     the one ``Store`` seam; Postgres and SQLite engines, SQL in .sql files
* ``restart``    the restart policy every supervisor shares
* ``worker/``    the worker process: fetch, supervise consumers, run, ack, heartbeat, sweep
* ``procpool``   the CPU process pool for ``cpu_bound`` actors
* ``workgroup/`` the supervisor of worker processes (``taskq workgroup``)
* ``exceptions`` every error, rooted at ``TaskqError``
"""

from .client import AsyncClient, Client
from .exceptions import (
    ActorConfigDrift,
    ActorError,
    ActorNotFound,
    ConfigError,
    DuplicateActor,
    InvalidDSN,
    InvalidJobState,
    JobNotFound,
    NotJSONSerializable,
    PayloadError,
    PayloadTooLarge,
    SchemaNotMigrated,
    StoreError,
    StoreUnavailable,
    TaskqError,
)
from .jobs import DeadReason, Job, JobState
from .registry import Actor, Registry, RetryBackoff

__version__ = "0.1.0"

__all__ = [
    "Actor",
    "ActorConfigDrift",
    "ActorError",
    "ActorNotFound",
    "AsyncClient",
    "Client",
    "ConfigError",
    "DeadReason",
    "DuplicateActor",
    "InvalidDSN",
    "InvalidJobState",
    "Job",
    "JobNotFound",
    "JobState",
    "NotJSONSerializable",
    "PayloadError",
    "PayloadTooLarge",
    "Registry",
    "RetryBackoff",
    "SchemaNotMigrated",
    "StoreError",
    "StoreUnavailable",
    "TaskqError",
    "__version__",
]
