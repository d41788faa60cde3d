"""The workgroup TOML: parsed, checked and frozen.

``load_config(path)`` reads the file with the stdlib ``tomllib`` and returns a
``WorkgroupConfig``, or raises ``InvalidWorkgroupConfig`` whose ``errors`` list names every
problem found (the key, and the worker by index and name), e.g.
``workers[1] ("batch"): unknown key "queuez"``.

Inheritance: a ``[[workers]]`` entry that omits a worker option (any ``WorkerConfig``
option with a TOML key: ``queues``, ``max_concurrency``, ``lease``, ``prefetch``,
``cpu_workers``, ``keep_dead``, ...; ``taskq.options`` reads them) takes the
``[defaults]`` value, else the ``taskq worker`` default: one declaration, one default.

The numbers a supervisor derives for its children live here too, so ``validate`` and
``start`` agree on them: the heartbeat interval (at most a third of ``stale_after``), the
child's own ``--shutdown-grace`` and its worst-case clean exit, and the health socket path.
"""

from __future__ import annotations

import math
import os
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from uuid import UUID

from .. import options
from ..exceptions import ConfigError, InvalidWorkgroupConfig
from ..kinds import describe
from ..settings import dsn_kind, redact, validate_schema
from ..worker.config import STALE_AFTER, WORKER_DEFAULTS, WorkerConfig

#: the Unix socket path limit is 108 bytes (with its NUL); this is what fits the longest
#: name after ``/run/user/NNNNN/taskq-<36-char uuid>-`` and before ``.sock``.
MAX_NAME_LENGTH = 43
SOCKET_PATH_LIMIT = 107
_NAME = re.compile(r"^[A-Za-z0-9_.\-]+$")

#: a standalone worker's heartbeat interval and shutdown grace (``taskq worker`` flags)
WORKER_HEARTBEAT_INTERVAL = WORKER_DEFAULTS.heartbeat_interval
WORKER_SHUTDOWN_GRACE = WORKER_DEFAULTS.shutdown_grace
#: what a child needs after its shutdown grace: cancel what still runs and give it back
#: (a few seconds), flush its acker (bounded at 10 s), close its pools: the teardown tail.
CHILD_TEARDOWN_MARGIN = 15.0


@dataclass(frozen=True, slots=True)
class HealthConfig:
    enabled: bool = False
    check_interval: float = 15.0
    stale_after: float = STALE_AFTER
    startup_grace: float = 15.0
    consecutive_failure_limit: int = 3


@dataclass(frozen=True, slots=True)
class WorkerSpec:
    """One ``[[workers]]`` entry, with ``[defaults]`` applied: its name, its health check,
    and the ``WorkerConfig`` its child runs with (the supervisor adds its instance and
    health socket when it starts it)."""

    name: str
    health: HealthConfig
    config: WorkerConfig

    @property
    def queues(self) -> tuple[str, ...]:
        """The queues it consumes (empty: every queue of the registry's actors)."""
        return self.config.queues

    @property
    def max_concurrency(self) -> int | None:
        return self.config.max_concurrency

    @property
    def poll_interval(self) -> float:
        return self.config.poll_interval

    @property
    def worker_group(self) -> str:
        return self.config.worker_group

    @property
    def force_update_actor_config(self) -> bool:
        return self.config.force_update_actor_config

    @property
    def heartbeat_interval(self) -> float:
        """At most a third of ``stale_after``: a healthy child is never judged stale."""
        return self.config.heartbeat_interval


@dataclass(frozen=True, slots=True)
class SupervisorConfig:
    shutdown_grace: float = 100.0
    backoff_initial: float = 0.5
    backoff_max: float = 30.0
    backoff_factor: float = 2.0
    burst_limit: int = 10
    burst_window: float = 60.0
    health_pg_dsn: str | None = None
    health_pg_schema: str | None = None
    http_port: int | None = None
    #: where ``http_port`` listens: loopback unless set ("0.0.0.0" in a container, where
    #: the kubelet and Prometheus reach the pod's address)
    http_host: str = "127.0.0.1"

    @property
    def child_shutdown_grace(self) -> float:
        """The ``--shutdown-grace`` each child gets: the worker default, shortened so the
        child's worst-case clean exit (grace + teardown margin) fits in ours."""
        return max(0.0, min(WORKER_SHUTDOWN_GRACE, self.shutdown_grace - CHILD_TEARDOWN_MARGIN))

    @property
    def child_worst_case_exit(self) -> float:
        """How long a child can take, after SIGTERM, to exit cleanly."""
        return self.child_shutdown_grace + CHILD_TEARDOWN_MARGIN


@dataclass(frozen=True, slots=True)
class WorkgroupConfig:
    path: str
    actors: str
    supervisor: SupervisorConfig
    workers: tuple[WorkerSpec, ...]

    @property
    def health_enabled(self) -> bool:
        return any(w.health.enabled for w in self.workers)


def child_heartbeat_interval(health: HealthConfig, configured: float | None = None) -> float:
    """A child's ``--heartbeat-interval``: its own (else the worker default), at most a
    third of ``stale_after``."""
    return min(configured or WORKER_HEARTBEAT_INTERVAL, health.stale_after / 3.0)


def socket_dir() -> str:
    return os.environ.get("XDG_RUNTIME_DIR") or "/tmp"


def health_socket_path(instance: UUID, name: str) -> str:
    """``$XDG_RUNTIME_DIR`` (else ``/tmp``) ``/taskq-<instance>-<name>.sock``; ``/tmp`` when
    the runtime directory is too long for a Unix socket path."""
    leaf = f"taskq-{instance}-{name}.sock"
    path = os.path.join(socket_dir(), leaf)
    if len(path.encode()) > SOCKET_PATH_LIMIT:
        path = os.path.join("/tmp", leaf)
    return path


# -- parsing ------------------------------------------------------------------------------


#: an IP address (v4, or v6 without brackets) or a host name
_HOST = re.compile(r"^[A-Za-z0-9_.:-]{1,253}$")
_TOP_KEYS = {"actors", "defaults", "supervisor", "workers"}
_DEFAULT_KEYS = options.toml_keys(WorkerConfig)
_WORKER_KEYS = _DEFAULT_KEYS | {"name", "health"}


class _Errors:
    def __init__(self) -> None:
        self.items: list[str] = []

    def add(self, where: str, message: str) -> None:
        self.items.append(f"{where}: {message}" if where else message)


def _unknown_keys(table: dict[str, Any], allowed: set[str], where: str, errors: _Errors) -> None:
    for key in table:
        if key not in allowed:
            errors.add(where, f'unknown key "{key}"')


def _number(
    table: dict[str, Any],
    key: str,
    default: float,
    where: str,
    errors: _Errors,
    *,
    minimum: float,
    strict: bool = False,
) -> float:
    if key not in table:
        return default
    value = table[key]
    if isinstance(value, bool) or not isinstance(value, int | float):
        errors.add(where, f'"{key}" must be a number of seconds, not {describe(value)}')
        return default
    value = float(value)
    if not math.isfinite(value) or value < minimum or (strict and value == minimum):
        bound = f"> {minimum:g}" if strict else f">= {minimum:g}"
        errors.add(where, f'"{key}" must be {bound}, got {value:g}')
        return default
    return value


def _integer(
    table: dict[str, Any],
    key: str,
    default: int,
    where: str,
    errors: _Errors,
    *,
    minimum: int,
    maximum: int | None = None,
) -> int:
    if key not in table:
        return default
    value = table[key]
    if isinstance(value, bool) or not isinstance(value, int):
        errors.add(where, f'"{key}" must be an integer, not {describe(value)}')
        return default
    if value < minimum or (maximum is not None and value > maximum):
        bound = f">= {minimum}" if maximum is None else f"between {minimum} and {maximum}"
        errors.add(where, f'"{key}" must be {bound}, got {value}')
        return default
    return value


def _boolean(table: dict[str, Any], key: str, default: bool, where: str, errors: _Errors) -> bool:
    if key not in table:
        return default
    value = table[key]
    if not isinstance(value, bool):
        errors.add(where, f'"{key}" must be true or false, not {describe(value)}')
        return default
    return value


def _string(
    table: dict[str, Any], key: str, default: str | None, where: str, errors: _Errors
) -> str | None:
    if key not in table:
        return default
    value = table[key]
    if not isinstance(value, str) or not value.strip():
        errors.add(where, f'"{key}" must be a non-empty string, not {describe(value)}')
        return default
    return value


def _table(parent: dict[str, Any], key: str, where: str, errors: _Errors) -> dict[str, Any]:
    value = parent.get(key, {})
    if not isinstance(value, dict):
        errors.add(where, f'"{key}" must be a table, not {describe(value)}')
        return {}
    return value


def _parse_supervisor(doc: dict[str, Any], errors: _Errors) -> SupervisorConfig:
    where = "[supervisor]"
    table = _table(doc, "supervisor", "", errors)
    base = SupervisorConfig()
    _unknown_keys(table, set(SupervisorConfig.__dataclass_fields__), where, errors)
    backoff_initial = _number(
        table, "backoff_initial", base.backoff_initial, where, errors, minimum=0.0
    )
    backoff_max = _number(table, "backoff_max", base.backoff_max, where, errors, minimum=0.0)
    if backoff_max < backoff_initial:
        errors.add(
            where,
            f'"backoff_max" ({backoff_max:g}) must be >= "backoff_initial" ({backoff_initial:g})',
        )
    dsn = _string(table, "health_pg_dsn", None, where, errors)
    if dsn is not None:
        try:
            dsn_kind(dsn)
        except ConfigError as exc:
            errors.add(where, f'"health_pg_dsn": {exc.message}')
    schema = _string(table, "health_pg_schema", None, where, errors)
    if schema is not None:
        try:
            validate_schema(schema)
        except ConfigError as exc:
            errors.add(where, f'"health_pg_schema": {exc.message}')
    http_port = None
    if "http_port" in table:
        http_port = _integer(table, "http_port", 0, where, errors, minimum=0, maximum=65535)
    http_host = _string(table, "http_host", base.http_host, where, errors) or base.http_host
    if not _HOST.match(http_host):
        errors.add(where, f'"http_host" must be an IP address or a host name, not {http_host!r}')
    return SupervisorConfig(
        shutdown_grace=_number(
            table, "shutdown_grace", base.shutdown_grace, where, errors, minimum=0.0
        ),
        backoff_initial=backoff_initial,
        backoff_max=backoff_max,
        backoff_factor=_number(
            table, "backoff_factor", base.backoff_factor, where, errors, minimum=1.0
        ),
        burst_limit=_integer(table, "burst_limit", base.burst_limit, where, errors, minimum=0),
        burst_window=_number(
            table, "burst_window", base.burst_window, where, errors, minimum=0.0, strict=True
        ),
        health_pg_dsn=dsn,
        health_pg_schema=schema,
        http_port=http_port,
        http_host=http_host,
    )


def _parse_health(entry: dict[str, Any], where: str, errors: _Errors) -> HealthConfig:
    where = f"{where} [health]"
    table = _table(entry, "health", where, errors)
    base = HealthConfig()
    _unknown_keys(table, set(HealthConfig.__dataclass_fields__), where, errors)
    return HealthConfig(
        enabled=_boolean(table, "enabled", base.enabled, where, errors),
        check_interval=_number(
            table, "check_interval", base.check_interval, where, errors, minimum=0.0, strict=True
        ),
        stale_after=_number(
            table, "stale_after", base.stale_after, where, errors, minimum=0.0, strict=True
        ),
        startup_grace=_number(
            table, "startup_grace", base.startup_grace, where, errors, minimum=0.0
        ),
        consecutive_failure_limit=_integer(
            table,
            "consecutive_failure_limit",
            base.consecutive_failure_limit,
            where,
            errors,
            minimum=1,
        ),
    )


def _parse_defaults(doc: dict[str, Any], errors: _Errors) -> dict[str, Any]:
    where = "[defaults]"
    table = _table(doc, "defaults", "", errors)
    _unknown_keys(table, _DEFAULT_KEYS, where, errors)
    return options.from_mapping(table, WorkerConfig, lambda problem: errors.add(where, problem))


def _parse_worker(
    index: int,
    entry: Any,
    defaults: dict[str, Any],
    actors: str,
    supervisor: SupervisorConfig,
    errors: _Errors,
) -> WorkerSpec:
    where = f"workers[{index}]"
    if not isinstance(entry, dict):
        errors.add(where, f"must be a table, not {describe(entry)}")
        entry = {}
    name = entry.get("name")
    if not isinstance(name, str) or not name:
        errors.add(where, '"name" is required: a non-empty string')
        name = f"#{index}"
    else:
        where = f'{where} ("{name}")'
        if len(name) > MAX_NAME_LENGTH:
            errors.add(
                where,
                f'"name" is {len(name)} characters; at most {MAX_NAME_LENGTH} '
                "fit the health socket path",
            )
        elif not _NAME.match(name):
            errors.add(where, '"name" may only use letters, digits, _ . and -')
    _unknown_keys(entry, _WORKER_KEYS, where, errors)
    health = _parse_health(entry, where, errors)
    values = {
        **defaults,
        **options.from_mapping(entry, WorkerConfig, lambda problem: errors.add(where, problem)),
    }
    values["heartbeat_interval"] = child_heartbeat_interval(
        health, values.get("heartbeat_interval")
    )
    config = WorkerConfig(
        **values,
        actors=actors,
        worker_label=name,
        shutdown_grace=supervisor.child_shutdown_grace,
    )
    for problem in config.problems(options.key, only=_DEFAULT_KEYS):  # the rest are ours
        errors.add(where, problem)
    return WorkerSpec(name=name, health=health, config=config)


def parse_config(
    doc: dict[str, Any], path: str = "<config>", *, actors_default: str | None = None
) -> WorkgroupConfig:
    """Check a parsed TOML document; raise ``InvalidWorkgroupConfig`` listing every problem.
    ``actors_default``: the registry when the document names none (``manage.py
    taskq_workgroup``: the Django project's)."""
    errors = _Errors()
    _unknown_keys(doc, _TOP_KEYS, "", errors)
    if actors_default is not None:
        doc = {"actors": actors_default, **doc}
    actors = doc.get("actors")
    if "actors" not in doc:
        errors.add("", 'missing required key "actors" (MODULE:ATTR of a taskq.Registry)')
        actors = ""
    elif not isinstance(actors, str) or ":" not in actors:
        errors.add("", f'"actors" must be a "MODULE:ATTR" string, got {actors!r}')
        actors = ""
    supervisor = _parse_supervisor(doc, errors)
    defaults = _parse_defaults(doc, errors)
    raw_workers = doc.get("workers")
    workers: list[WorkerSpec] = []
    if raw_workers is None:
        errors.add("", "at least one [[workers]] entry is required")
    elif not isinstance(raw_workers, list):
        errors.add(
            "", f'"workers" must be an array of tables ([[workers]]), not {describe(raw_workers)}'
        )
    else:
        if not raw_workers:
            errors.add("", "at least one [[workers]] entry is required")
        seen: dict[str, int] = {}
        for index, entry in enumerate(raw_workers):
            spec = _parse_worker(index, entry, defaults, actors, supervisor, errors)
            if isinstance(entry, dict) and isinstance(entry.get("name"), str):
                if spec.name in seen:
                    errors.add(
                        f'workers[{index}] ("{spec.name}")',
                        f'duplicate name: workers[{seen[spec.name]}] is also "{spec.name}"',
                    )
                seen.setdefault(spec.name, index)
            workers.append(spec)
    if errors.items:
        raise InvalidWorkgroupConfig(path, errors.items)
    return WorkgroupConfig(path=path, actors=actors, supervisor=supervisor, workers=tuple(workers))


def load_config(
    path: str | os.PathLike[str], *, actors_default: str | None = None
) -> WorkgroupConfig:
    """Read and check a workgroup TOML file (``actors_default``: see ``parse_config``)."""
    name = str(path)
    try:
        data = Path(name).read_bytes()
    except FileNotFoundError:
        raise InvalidWorkgroupConfig(name, ["no such file"]) from None
    except IsADirectoryError:
        raise InvalidWorkgroupConfig(name, ["is a directory, not a TOML file"]) from None
    except OSError as exc:
        raise InvalidWorkgroupConfig(name, [f"cannot read: {exc.strerror}"]) from None
    try:
        doc = tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise InvalidWorkgroupConfig(name, ["not UTF-8 text"]) from None
    except tomllib.TOMLDecodeError as exc:
        raise InvalidWorkgroupConfig(name, [f"invalid TOML: {exc}"]) from None
    return parse_config(doc, name, actors_default=actors_default)


def describe_dsn(config: WorkgroupConfig) -> str:
    """The health/rescue store's DSN, safe to print."""
    from ..settings import resolve

    try:
        return redact(resolve(config.supervisor.health_pg_dsn).dsn)
    except ConfigError as exc:
        return f"<{exc.message}>"
