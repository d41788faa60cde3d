"""Every error taskq raises on purpose.

The tree::

    TaskqError                       root: catch this to catch anything of ours
    +-- ConfigError                  bad settings: DSN, schema name, TOML, CLI values
    |   +-- InvalidDSN
    |   +-- InvalidWorkgroupConfig   a workgroup TOML that cannot be used (every problem listed)
    |   +-- InvalidWorkflow          a workflow refused before anything was written (a cycle,
    |                                an unknown or foreign `after` step, over a size limit)
    +-- ActorError
    |   +-- ActorNotFound            a name or ``module:attr`` reference that resolves to nothing
    |   +-- ActorImportError         the ``module:attr`` module raised while importing
    |   +-- DuplicateActor
    +-- PayloadError                 refused at enqueue; nothing was written
    |   +-- NotJSONSerializable
    |   +-- PayloadTooLarge
    |   +-- ArgumentsMismatch        arguments that do not fit the actor's function's signature
    |   +-- PayloadTooDeep           arrays or objects nested deeper than MAX_JSON_DEPTH
    |   +-- InvalidText              a NUL character or a lone surrogate (not UTF-8)
    +-- StoreError                   the database; the driver's error is kept in ``__cause__``
    |   +-- StoreUnavailable         cannot connect / connection lost
    |   +-- SchemaNotMigrated        tables missing: run ``taskq migrate``
    +-- JobNotFound
    +-- WorkflowNotFound
    +-- InvalidJobState              e.g. cancelling a job that already finished
    +-- NoCurrentJob                 ``taskq.current_job()`` outside a running job
    +-- ActorConfigDrift             the registry disagrees with the stored actor config
    +-- CrashLoop                    a supervisor gave up: its members kept dying
    +-- WorkgroupStartError          the workgroup supervisor could not start
    +-- SqlFileError                 a malformed .sql file shipped with taskq (a packaging bug)
    +-- Snooze                       not an error: an actor raises (or returns) it to run later
    +-- PoolError                    the CPU process pool
        +-- PoolClosed
        +-- BreakerOpen
        +-- ProcessDied              the process running a job died (carries the cause)
        +-- JobTimedOut
        +-- JobCancelled             ProcessPool.cancel killed the job's process on purpose
        +-- JobFailed                the job raised in its pool process (carries the remote error)
        +-- PayloadUndecodable       the pool process could not decode the job's JSON payload
        +-- ResultDropped            the job ran, but its result cannot be stored (carries why)

Messages default to the class docstring, so ``raise StoreUnavailable()`` still says
something useful; pass a message to say more. Every message passes through
``redaction.text``: a password in it (a DSN, a driver's error text) is masked.
"""

from __future__ import annotations

from . import redaction


class TaskqError(Exception):
    """taskq error."""

    def __init__(self, message: str | None = None) -> None:
        shown = redaction.text(message) if message else None
        super().__init__(shown or (self.__doc__ or "").strip().splitlines()[0])

    @property
    def message(self) -> str:
        return str(self.args[0]) if self.args else ""


class ConfigError(TaskqError):
    """invalid configuration."""


class InvalidDSN(ConfigError):
    """invalid DSN: expected postgresql://... or sqlite:///path."""


class InvalidWorkgroupConfig(ConfigError):
    """A workgroup file that cannot be used; ``errors`` holds one line per problem."""

    def __init__(self, path: str, errors: list[str]) -> None:
        self.path = path
        self.errors = list(errors)
        summary = errors[0] if len(errors) == 1 else f"{len(errors)} problems: " + "; ".join(errors)
        super().__init__(f"{path}: {summary}")


class InvalidWorkflow(ConfigError):
    """invalid workflow: nothing was enqueued."""


class ActorError(TaskqError):
    """actor error."""


class ActorNotFound(ActorError):
    """actor not found."""


class ActorImportError(ActorError):
    """the actors' module raised while being imported (its own error is in ``__cause__``)."""


class DuplicateActor(ActorError):
    """an actor with this name is already registered."""


class PayloadError(TaskqError):
    """the job payload was refused; nothing was written."""


class NotJSONSerializable(PayloadError):
    """job arguments must be JSON-serialisable."""


class PayloadTooLarge(PayloadError):
    """job payload exceeds the size limit."""


class PayloadTooDeep(PayloadError):
    """arrays or objects nested deeper than taskq.validation.MAX_JSON_DEPTH."""


class InvalidText(PayloadError):
    """text with a NUL character or a lone surrogate (bytes that are not UTF-8)."""


class ArgumentsMismatch(PayloadError):
    """the job's arguments do not fit the actor's function's signature."""


class StoreError(TaskqError):
    """database error."""


class StoreUnavailable(StoreError):
    """the database cannot be reached."""


class SchemaNotMigrated(StoreError):
    """taskq's tables are missing: run `taskq migrate`."""


class JobNotFound(TaskqError):
    """no job with this id."""


class WorkflowNotFound(TaskqError):
    """no such workflow."""


class NoCurrentJob(TaskqError):
    """taskq.current_job() was called outside a running job."""


class InvalidJobState(TaskqError):
    """the job is not in a state that allows this."""


class ActorConfigDrift(TaskqError):
    """the registry moves an actor to another queue than the stored one (a change of
    where jobs go: taken on only with --force-update-actor-config)."""


class CrashLoop(TaskqError):
    """the crash-loop guard tripped: the supervised members kept dying."""


class WorkgroupStartError(TaskqError):
    """the workgroup could not start."""


class SqlFileError(TaskqError):
    """a malformed .sql file shipped with taskq (a packaging bug, not a user error)."""


class PoolError(TaskqError):
    """process pool error."""


class PoolClosed(PoolError):
    """the process pool is closed."""


class BreakerOpen(PoolError):
    """the process pool's breaker is open: CPU-bound jobs are paused."""


class ProcessDied(PoolError):
    """the process running the job died."""

    def __init__(
        self,
        message: str | None = None,
        *,
        cause: str = "",
        exit_code: int | None = None,
        exit_signal: str | None = None,
        pid: int | None = None,
        oom_kill: bool = False,
    ) -> None:
        super().__init__(message)
        self.cause = cause or self.message
        self.exit_code = exit_code
        self.exit_signal = exit_signal
        self.pid = pid
        self.oom_kill = oom_kill  # OOM evidence (cgroup counter or kernel log)


class JobTimedOut(PoolError):
    """the job ran past its timeout."""


class JobCancelled(PoolError):
    """the job was cancelled while it ran: its process was killed on purpose.

    Not a crash, not a failure, not a break of the pool: the job did not end by itself.
    """


class JobFailed(PoolError):
    """the job raised an exception in its pool process."""

    def __init__(
        self,
        message: str | None = None,
        *,
        error_type: str = "",
        error_message: str = "",
        remote_traceback: str = "",
    ) -> None:
        super().__init__(message)
        self.error_type = error_type
        self.error_message = error_message
        self.remote_traceback = remote_traceback


class PayloadUndecodable(PoolError):
    """the pool process could not decode the job's JSON payload."""


class Snooze(TaskqError):
    """the job snoozed: run it again later, no attempt charged."""

    def __init__(self, seconds: float) -> None:
        if (
            not isinstance(seconds, int | float)
            or isinstance(seconds, bool)
            or not 0 <= seconds < float("inf")
        ):
            raise ConfigError(f"Snooze needs a finite number of seconds >= 0, got {seconds!r}")
        self.seconds = float(seconds)
        super().__init__(f"snoozed for {self.seconds!r}s")

    @classmethod
    def seconds_in(cls, message: str) -> float | None:
        """The seconds of a Snooze from its message (how it crosses from a pool process)."""
        text = message.strip()
        if text.startswith("snoozed for ") and text.endswith("s"):
            try:
                return float(text[len("snoozed for ") : -1])
            except ValueError:
                return None
        return None


class ResultDropped(PoolError):
    """the job ran, but its result cannot be stored (not JSON-serialisable, or too large).

    Not a failure: the job's side effects already happened, so it must not run again.
    The worker records it ``succeeded`` with no result and the reason in ``last_error``.
    """

    def __init__(self, message: str | None = None) -> None:
        super().__init__(message)
        self.reason = self.message
