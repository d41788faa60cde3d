"""Structured logs: one JSON object per line (``event``, ``level``, ``timestamp``, fields).

``TASKQ_LOG_FORMAT`` picks ``json`` or ``console``; the default is console on a TTY,
JSON otherwise. ``TASKQ_LOG_LEVEL`` (default ``INFO``) is the level of taskq's own
records and of the records an actor logs. Every taskq module logs through
``get_logger(__name__)``, and every line it writes is an event declared in
``taskq.events`` (name, level, fields, meaning; docs/events.md lists them)::

    log = get_logger(__name__)
    log.event(WORKGROUP_RESTART_SCHEDULED, worker="api", reason="child_exit", delay=0.4)

Actors log with plain ``logging``: while a job runs, ``job_context`` holds its ``job``,
``actor``, ``attempt`` and ``queue`` in a context variable (copied into the thread of a
sync actor, sent along to a CPU pool process), and every record emitted meanwhile, by
any logger at the configured level and up, comes out with those fields. Outside a job,
other libraries' records come out at WARNING and up.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import traceback
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar, Token
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

from . import redaction
from .exceptions import ConfigError

if TYPE_CHECKING:
    from .events import Event

_FIELDS = "taskq_fields"
_JOB = "taskq_job"
_configured = False
_format = "json"
LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
FORMATS = ("json", "console")


class JobFieldSource(Protocol):
    """Something that can name the job of a log record (``taskq.context.JobContext``);
    asked only when a record is actually emitted, not once per job."""

    def log_fields(self) -> Mapping[str, Any]: ...


JobFields = Mapping[str, Any] | JobFieldSource

#: the job being run in this context: {"job", "actor", "attempt", "queue"}, or its source
_job: ContextVar[JobFields | None] = ContextVar("taskq_job", default=None)


@contextmanager
def job_context(fields: Mapping[str, Any]) -> Iterator[None]:
    """Attach ``fields`` to every log record emitted in this context until it ends."""
    token = _job.set(fields)
    try:
        yield
    finally:
        _job.reset(token)


def set_job_fields(fields: JobFields) -> Token[JobFields | None]:
    """``job_context`` without a generator (the worker's per-job path); undo with
    ``reset_job_fields``. A ``JobFieldSource`` is asked for the fields only when a record
    is emitted."""
    return _job.set(fields)


def reset_job_fields(token: Token[JobFields | None]) -> None:
    _job.reset(token)


def job_fields() -> Mapping[str, Any] | None:
    """The fields of the job running in this context, if any."""
    return _resolved(_job.get())


def _resolved(job: JobFields | None) -> Mapping[str, Any] | None:
    if job is None or isinstance(job, Mapping):
        return job
    return job.log_fields()


class _Logger:
    """A thin front over ``logging.Logger`` with one method: ``event``, which writes one of
    the events declared in ``taskq.events`` and counts its metric, if it counts one."""

    __slots__ = ("_logger",)

    def __init__(self, logger: logging.Logger) -> None:
        self._logger = logger

    def event(self, event: Event, /, *, exc_info: Any = None, **fields: Any) -> None:
        if self._logger.isEnabledFor(event.level):
            self._logger.log(
                event.level, event.name, exc_info=exc_info, extra={_FIELDS: fields}, stacklevel=2
            )
        if event.counts:
            for count in event.counts:
                count.add(fields)


def get_logger(name: str) -> _Logger:
    return _Logger(logging.getLogger(name))


def _fields(record: logging.LogRecord) -> dict[str, Any]:
    """The record's fields as they may be written (``redaction.fields``: passwords in
    text and secret-named fields masked)."""
    job: Mapping[str, Any] | None = getattr(record, _JOB, None)
    own: dict[str, Any] = getattr(record, _FIELDS, {})
    return redaction.fields({**job, **own} if job else own)


def _exception(record: logging.LogRecord) -> str | None:
    if not record.exc_info or record.exc_info[0] is None:
        return None
    return redaction.text("".join(traceback.format_exception(*record.exc_info)).rstrip())


class _JobFilter(logging.Filter):
    """Stamp the running job on a record; outside a job, let other libraries through
    only at ``floor`` and up (taskq's own records have their logger's level)."""

    def __init__(self, floor: int) -> None:
        super().__init__()
        self.floor = floor

    def filter(self, record: logging.LogRecord) -> bool:
        job = _resolved(_job.get())
        if job is not None:
            setattr(record, _JOB, job)
            return True
        return record.levelno >= self.floor or record.name.startswith("taskq")


def _jsonable(value: Any) -> Any:
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    return str(value)


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "event": redaction.text(record.getMessage()),
            "level": record.levelname.lower(),
            "timestamp": datetime.fromtimestamp(record.created, UTC).isoformat(),
            "logger": record.name,
            "pid": record.process,
        }
        for key, value in _fields(record).items():
            out[key] = _jsonable(value)
        exception = _exception(record)
        if exception is not None:
            out["exception"] = exception
        return json.dumps(out, ensure_ascii=False)


class ConsoleFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        ts = datetime.fromtimestamp(record.created).strftime("%H:%M:%S.%f")[:-3]
        fields = " ".join(f"{k}={v}" for k, v in _fields(record).items())
        line = f"{ts} {record.levelname.lower():8} {redaction.text(record.getMessage())}"
        if fields:
            line = f"{line}  {fields}"
        exception = _exception(record)
        if exception is not None:
            line += "\n" + exception
        return line


def is_json() -> bool:
    """The configured format is JSON lines (for machines), not console lines."""
    return _format == "json"


def resolve(fmt: str | None = None, level: int | str | None = None) -> tuple[str, int]:
    """The log format and level from the arguments or the environment; ``ConfigError``
    naming the variable and the allowed values when one is not valid."""
    if fmt is None:
        raw = os.environ.get("TASKQ_LOG_FORMAT", "").strip()
        if raw and raw.lower() not in FORMATS:
            raise ConfigError(
                f"TASKQ_LOG_FORMAT={raw!r} is not a log format: use {' or '.join(FORMATS)}"
            )
        fmt = raw.lower() or ("console" if sys.stderr.isatty() else "json")
    elif fmt not in FORMATS:
        raise ConfigError(f"log format {fmt!r} is not one of {', '.join(FORMATS)}")
    if isinstance(level, int):
        return fmt, level
    raw_level = (level or os.environ.get("TASKQ_LOG_LEVEL", "") or "INFO").strip()
    if raw_level.upper() not in LEVELS:
        raise ConfigError(
            f"TASKQ_LOG_LEVEL={raw_level!r} is not a log level: use {', '.join(LEVELS)}"
        )
    return fmt, logging.getLevelName(raw_level.upper())


def configure(fmt: str | None = None, level: int | str | None = None) -> None:
    """Set up logging for a taskq process (idempotent); ``ConfigError`` for a bad
    ``TASKQ_LOG_FORMAT`` / ``TASKQ_LOG_LEVEL``.

    taskq's own loggers get ``level``; every other library's records (psycopg's pool,
    asyncio, ...) go through the same handler at WARNING and up, or at ``level`` and up
    while a job runs (an actor's own ``logging.info``), so the process's stderr stays one
    JSON object per line, with no plain-text "last resort" lines in between. The Python
    root logger is only touched when nothing configured it yet.
    """
    global _configured, _format
    fmt, numeric = resolve(fmt, level)
    _format = fmt
    formatter = JsonFormatter() if fmt == "json" else ConsoleFormatter()
    ours = logging.getLogger("taskq")
    ours.setLevel(numeric)
    if _configured:
        for handler in ours.handlers:
            handler.setFormatter(formatter)
            for job_filter in handler.filters:
                if isinstance(job_filter, _JobFilter):
                    job_filter.floor = max(numeric, logging.WARNING)
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(formatter)
    handler.addFilter(_JobFilter(max(numeric, logging.WARNING)))
    ours.addHandler(handler)
    ours.propagate = False
    # psycopg's pool warns once per reconnect attempt; taskq's components log an outage
    # once when it starts and once when it ends (store-unavailable / store-recovered)
    logging.getLogger("psycopg.pool").setLevel(logging.ERROR)
    root = logging.getLogger()
    if not root.handlers:
        root.addHandler(handler)
        root.setLevel(numeric)  # the handler's filter keeps non-job records at WARNING+
    _configured = True
