"""Actors and the registry that names them.

An actor is a function plus the options that govern how its jobs run and what happens
when they fail or crash. A ``Registry`` is what a worker is started with
(``taskq worker --actors myapp.tasks:registry``).
"""

from __future__ import annotations

import importlib
import inspect
import re
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, ParamSpec, TypeVar, overload

from .blame import DEFAULT_MAX_UNBLAMED_CRASHES
from .exceptions import ActorImportError, ActorNotFound, ConfigError, DuplicateActor
from .jobs import ActorConfig
from .unique import Unique, as_unique
from .validation import QUEUE_NAME, check_int

if TYPE_CHECKING:
    from .periodic import Missed, Schedule

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.:\-]{0,199}$")

# every actor option's default, written once (Actor, Registry.actor, the client enqueuing
# by name an actor it has never seen)
DEFAULT_QUEUE = "default"
DEFAULT_MAX_ATTEMPTS = 3
DEFAULT_MAX_CRASHES = 2  # one retry tells "unlucky" from "poison"
DEFAULT_MAX_SNOOZES = 100

P = ParamSpec("P")
R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class RetryBackoff:
    """Delay before retry n (1-based) is ``random() * min(maximum, initial * factor**(n-1))``."""

    initial: float = 1.0
    factor: float = 2.0
    maximum: float = 600.0

    def ceiling(self, retry_number: int) -> float:
        exponent = max(retry_number - 1, 0)
        try:
            value = self.initial * (self.factor**exponent)
        except OverflowError:
            value = self.maximum
        return min(self.maximum, value)


@dataclass(slots=True)
class Actor(Generic[P, R]):
    """A registered function and its job options. Calling the actor calls the function.

    Generic over the function's parameters ``P`` and return type ``R``, so that
    ``client.enqueue(actor, *args, **kwargs)`` is checked by a type checker against the
    function's signature."""

    fn: Callable[P, R]
    name: str
    queue: str = DEFAULT_QUEUE
    max_attempts: int = DEFAULT_MAX_ATTEMPTS
    timeout: float | None = None
    idempotent: bool = False
    cpu_bound: bool = False
    max_crashes: int = DEFAULT_MAX_CRASHES
    priority: int = 0
    retry_backoff: RetryBackoff = field(default_factory=RetryBackoff)
    initializer: Callable[[], Any] | None = None  # cpu_bound: runs in every new pool process
    unique: Unique | None = None  # its jobs are unique (see taskq.Unique)
    max_snoozes: int = DEFAULT_MAX_SNOOZES  # snoozes past this end the job dead/snoozed_too_often
    # deaths blamed on no job (or shared) after which it is poison anyway (taskq.blame)
    max_unblamed_crashes: int = DEFAULT_MAX_UNBLAMED_CRASHES

    @property
    def is_async(self) -> bool:
        return inspect.iscoroutinefunction(self.fn)

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        return self.fn(*args, **kwargs)

    def config(self) -> ActorConfig:
        return ActorConfig(
            name=self.name,
            queue=self.queue,
            max_attempts=self.max_attempts,
            max_crashes=self.max_crashes,
            idempotent=self.idempotent,
            cpu_bound=self.cpu_bound,
            timeout=self.timeout,
            # recorded for the crash rules (max_unblamed_crashes), enqueue by name
            # (priority) and the diff a new version of the code logs (all of them)
            extra={
                "max_unblamed_crashes": self.max_unblamed_crashes,
                "priority": self.priority,
                "retry_backoff": [
                    self.retry_backoff.initial,
                    self.retry_backoff.factor,
                    self.retry_backoff.maximum,
                ],
                "max_snoozes": self.max_snoozes,
            },
        )


AnyActor = Actor[..., Any]
"""An actor of any signature (what the worker, the client and the CLI handle)."""
#: an actor as the enqueue calls take it: the ``Actor``, or its name
ActorRef = AnyActor | str


def check_queue_name(queue: str) -> str:
    if not isinstance(queue, str) or not QUEUE_NAME.match(queue):
        raise ConfigError(f"invalid queue name {queue!r}: 1-100 letters, digits, '_', '.' or '-'")
    return queue


def check_actor_options(
    name: str, queue: str, max_attempts: int, timeout: float | None, max_crashes: int
) -> None:
    """An actor's name and options, checked (``Registry.actor`` and the builder's
    options for an actor given by name): one ``ConfigError`` naming what is wrong."""
    if not _NAME.match(name):
        raise ConfigError(f"invalid actor name {name!r}")
    if not QUEUE_NAME.match(queue):
        raise ConfigError(f"actor {name!r}: invalid queue name {queue!r}")
    check_int(max_attempts, f"actor {name!r}: max_attempts", 1)
    check_int(max_crashes, f"actor {name!r}: max_crashes", 1)
    if timeout is not None and (not isinstance(timeout, int | float) or timeout <= 0):
        raise ConfigError(f"actor {name!r}: timeout must be a positive number of seconds")


class Registry:
    """The set of actors a worker can run, by unique name."""

    def __init__(self, *, initializer: Callable[[], Any] | None = None) -> None:
        self._actors: dict[str, AnyActor] = {}
        self._schedules: dict[str, Schedule] = {}
        self.initializer = initializer  # for every cpu_bound actor's pool processes

    @overload
    def actor(self, fn: Callable[P, R], /) -> Actor[P, R]: ...

    @overload
    def actor(
        self,
        fn: None = None,
        /,
        *,
        name: str | None = None,
        queue: str = DEFAULT_QUEUE,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        timeout: float | None = None,
        idempotent: bool = False,
        cpu_bound: bool = False,
        max_crashes: int = DEFAULT_MAX_CRASHES,
        priority: int = 0,
        retry_backoff: RetryBackoff | None = None,
        initializer: Callable[[], Any] | None = None,
        unique: bool | Unique = False,
        max_snoozes: int = DEFAULT_MAX_SNOOZES,
        max_unblamed_crashes: int = DEFAULT_MAX_UNBLAMED_CRASHES,
    ) -> Callable[[Callable[P, R]], Actor[P, R]]: ...

    def actor(
        self,
        fn: Callable[P, R] | None = None,
        /,
        *,
        name: str | None = None,
        queue: str = DEFAULT_QUEUE,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        timeout: float | None = None,
        idempotent: bool = False,
        cpu_bound: bool = False,
        max_crashes: int = DEFAULT_MAX_CRASHES,
        priority: int = 0,
        retry_backoff: RetryBackoff | None = None,
        initializer: Callable[[], Any] | None = None,
        unique: bool | Unique = False,
        max_snoozes: int = DEFAULT_MAX_SNOOZES,
        max_unblamed_crashes: int = DEFAULT_MAX_UNBLAMED_CRASHES,
    ) -> Actor[P, R] | Callable[[Callable[P, R]], Actor[P, R]]:
        """Register a function as an actor: ``@registry.actor`` or ``@registry.actor(...)``."""

        def register(func: Callable[P, R]) -> Actor[P, R]:
            if isinstance(func, Actor):
                raise ConfigError(
                    f"{func.name!r} is already an actor: put @registry.periodic above "
                    "@registry.actor, not below it"
                )
            actor_name = name or func.__name__
            check_actor_options(actor_name, queue, max_attempts, timeout, max_crashes)
            check_int(priority, f"actor {actor_name!r}: priority")
            if not isinstance(max_snoozes, int) or isinstance(max_snoozes, bool) or max_snoozes < 0:
                raise ConfigError(f"actor {actor_name!r}: max_snoozes must be an integer >= 0")
            if (
                not isinstance(max_unblamed_crashes, int)
                or isinstance(max_unblamed_crashes, bool)
                or max_unblamed_crashes < 1
            ):
                raise ConfigError(
                    f"actor {actor_name!r}: max_unblamed_crashes must be an integer >= 1"
                )
            if cpu_bound and inspect.iscoroutinefunction(func):
                raise ConfigError(
                    f"actor {actor_name!r}: a cpu_bound actor must be a plain function"
                )
            if actor_name in self._actors:
                raise DuplicateActor(f"an actor named {actor_name!r} is already registered")
            actor: Actor[P, R] = Actor(
                fn=func,
                name=actor_name,
                queue=queue,
                max_attempts=max_attempts,
                timeout=timeout,
                idempotent=idempotent,
                cpu_bound=cpu_bound,
                max_crashes=max_crashes,
                priority=priority,
                retry_backoff=retry_backoff or RetryBackoff(),
                initializer=initializer,
                unique=as_unique(unique),
                max_snoozes=max_snoozes,
                max_unblamed_crashes=max_unblamed_crashes,
            )
            self._actors[actor_name] = actor
            return actor

        if fn is not None:
            return register(fn)
        return register

    def periodic(
        self,
        cron: str,
        *,
        timezone: str = "UTC",
        name: str | None = None,
        args: Sequence[Any] = (),
        kwargs: Mapping[str, Any] | None = None,
        missed: Missed | str = "skip",
    ) -> Callable[[Callable[P, R]], Actor[P, R]]:
        """Run an actor on a cron schedule: above ``@registry.actor(...)``, or alone
        (the function becomes an actor with the default options).

        ``cron``: 5 fields (or 6, seconds first) evaluated in ``timezone`` (an IANA
        name). ``name``: the schedule's name, unique per registry (default: the actor's;
        give one to schedule an actor twice). ``args``/``kwargs``: every tick's job's
        arguments. ``missed``: ticks missed while no worker ran are ``"skip"``-ped
        (default) or collapsed into one run (``"run_once"``). See ``taskq.periodic``."""
        # cron parsing and time zones are loaded by the registries that schedule
        from .periodic import Schedule, as_missed, check_cron

        check_cron(cron, timezone, f"@registry.periodic({cron!r})")

        def attach(target: Callable[P, R]) -> Actor[P, R]:
            actor = target if isinstance(target, Actor) else self.actor(target)
            if self._actors.get(actor.name) is not actor:
                raise ConfigError(
                    f"actor {actor.name!r} belongs to another registry; "
                    "schedule it with that registry's periodic"
                )
            schedule_name = name or actor.name
            if not _NAME.match(schedule_name):
                raise ConfigError(f"invalid schedule name {schedule_name!r}")
            if schedule_name in self._schedules:
                raise ConfigError(
                    f"a schedule named {schedule_name!r} already exists: "
                    "give the second one a name= of its own"
                )
            self._schedules[schedule_name] = Schedule(
                name=schedule_name,
                actor=actor.name,
                cron=cron,
                timezone=timezone,
                missed=as_missed(missed, f"schedule {schedule_name!r}"),
                args=args,
                kwargs=kwargs or {},
            )
            return actor

        return attach

    def include(self, other: Registry) -> None:
        """Serve ``other``'s actors and schedules too (a name taken in both is a
        ``DuplicateActor``); ``other``'s ``initializer`` is not taken over."""
        for name in other._actors.keys() & self._actors.keys():
            raise DuplicateActor(f"an actor named {name!r} is in both registries")
        for name in other._schedules.keys() & self._schedules.keys():
            raise ConfigError(f"a schedule named {name!r} is in both registries")
        self._actors.update(other._actors)
        self._schedules.update(other._schedules)

    @property
    def schedules(self) -> list[Schedule]:
        """The periodic schedules, in the order they were declared."""
        return list(self._schedules.values())

    def get(self, name: str) -> AnyActor:
        try:
            return self._actors[name]
        except KeyError:
            raise ActorNotFound(f"no actor named {name!r} in this registry") from None

    def __contains__(self, name: object) -> bool:
        return name in self._actors

    def __iter__(self) -> Iterator[AnyActor]:
        return iter(self._actors.values())

    def __len__(self) -> int:
        return len(self._actors)

    @property
    def queues(self) -> set[str]:
        return {a.queue for a in self._actors.values()}


def resolve_reference(reference: str) -> Any:
    """Import ``module:attr`` (attr may be dotted) and return the object.

    Each way it can fail gets its own message: malformed reference, module missing,
    module raising on import, attribute missing.
    """
    module_name, sep, attr_path = reference.partition(":")
    if not sep or not module_name or not attr_path:
        raise ActorNotFound(f"invalid reference {reference!r}: expected MODULE:ATTR")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and module_name.startswith(exc.name):
            raise ActorNotFound(
                f"cannot import module {module_name!r} (from {reference!r}): no such module"
            ) from exc
        raise ActorImportError(_import_failure(module_name, exc)) from exc
    except Exception as exc:
        raise ActorImportError(_import_failure(module_name, exc)) from exc
    obj: Any = module
    for part in attr_path.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise ActorNotFound(
                f"module {module_name!r} has no attribute {attr_path!r} (from {reference!r})"
            ) from None
    return obj


def _import_failure(module_name: str, exc: BaseException) -> str:
    """``importing 'm' failed: Type: message (at file.py, line N)``: the module's own
    error and where it happened (the innermost frame; a SyntaxError's own position)."""
    where, text = "", str(exc)
    if isinstance(exc, SyntaxError) and exc.filename:
        where, text = f"{exc.filename}, line {exc.lineno}", str(exc.msg)
    else:
        frames = traceback.extract_tb(exc.__traceback__)
        if frames:
            where = f"{frames[-1].filename}, line {frames[-1].lineno}"
    message = f"importing {module_name!r} failed: {type(exc).__name__}: {text}"
    return f"{message} (at {where})" if where else message


def load_registry(reference: str) -> Registry:
    """Resolve ``module:attr`` to a ``Registry`` (clear error if it is something else)."""
    obj = resolve_reference(reference)
    if not isinstance(obj, Registry):
        raise ActorNotFound(f"{reference!r} is a {type(obj).__name__}, not a taskq.Registry")
    return obj
