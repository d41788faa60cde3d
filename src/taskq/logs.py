"""Structured logs: one JSON object per line (``event``, ``level``, ``timestamp``, fields).

``TASKQ_LOG_FORMAT`` picks ``json`` or ``console``; the default is console on a TTY,
JSON otherwise. Every taskq module logs through ``get_logger(__name__)``::

    log = get_logger(__name__)
    log.warning("workgroup.restart_scheduled", worker="api", reason="child_exit", delay=0.4)
"""

from __future__ import annotations

import json
import logging
import os
import sys
import traceback
from datetime import UTC, datetime
from typing import Any

_FIELDS = "taskq_fields"
_configured = False


class _Logger:
    """A thin front over ``logging.Logger`` that takes an event name and keyword fields."""

    __slots__ = ("_logger",)

    def __init__(self, logger: logging.Logger) -> None:
        self._logger = logger

    def _log(self, level: int, event: str, exc_info: Any, fields: dict[str, Any]) -> None:
        if self._logger.isEnabledFor(level):
            self._logger.log(level, event, exc_info=exc_info, extra={_FIELDS: fields}, stacklevel=3)

    def debug(self, event: str, *, exc_info: Any = None, **fields: Any) -> None:
        self._log(logging.DEBUG, event, exc_info, fields)

    def info(self, event: str, *, exc_info: Any = None, **fields: Any) -> None:
        self._log(logging.INFO, event, exc_info, fields)

    def warning(self, event: str, *, exc_info: Any = None, **fields: Any) -> None:
        self._log(logging.WARNING, event, exc_info, fields)

    def error(self, event: str, *, exc_info: Any = None, **fields: Any) -> None:
        self._log(logging.ERROR, event, exc_info, fields)

    def critical(self, event: str, *, exc_info: Any = None, **fields: Any) -> None:
        self._log(logging.CRITICAL, event, exc_info, fields)

    def exception(self, event: str, **fields: Any) -> None:
        self._log(logging.ERROR, event, True, fields)


def get_logger(name: str) -> _Logger:
    return _Logger(logging.getLogger(name))


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
            "event": record.getMessage(),
            "level": record.levelname.lower(),
            "timestamp": datetime.fromtimestamp(record.created, UTC).isoformat(),
            "logger": record.name,
            "pid": record.process,
        }
        for key, value in getattr(record, _FIELDS, {}).items():
            out[key] = _jsonable(value)
        if record.exc_info and record.exc_info[0] is not None:
            out["exception"] = "".join(traceback.format_exception(*record.exc_info)).rstrip()
        return json.dumps(out, ensure_ascii=False)


class ConsoleFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        ts = datetime.fromtimestamp(record.created).strftime("%H:%M:%S.%f")[:-3]
        fields = " ".join(f"{k}={v}" for k, v in getattr(record, _FIELDS, {}).items())
        line = f"{ts} {record.levelname.lower():8} {record.getMessage()}"
        if fields:
            line = f"{line}  {fields}"
        if record.exc_info and record.exc_info[0] is not None:
            line += "\n" + "".join(traceback.format_exception(*record.exc_info)).rstrip()
        return line


def configure(fmt: str | None = None, level: int | str | None = None) -> None:
    """Set up logging for a taskq process (idempotent).

    taskq's own loggers get ``level``; every other library's records (psycopg's pool,
    asyncio, ...) go through the same handler at WARNING and up, so the process's stderr
    stays one JSON object per line, with no plain-text "last resort" lines in between.
    The Python root logger is only touched when nothing configured it yet.
    """
    global _configured
    fmt = (
        fmt or os.environ.get("TASKQ_LOG_FORMAT") or ("console" if sys.stderr.isatty() else "json")
    )
    if fmt not in ("json", "console"):
        fmt = "json"
    level = level or os.environ.get("TASKQ_LOG_LEVEL", "INFO")
    formatter = JsonFormatter() if fmt == "json" else ConsoleFormatter()
    ours = logging.getLogger("taskq")
    ours.setLevel(level if isinstance(level, int) else level.upper())
    if _configured:
        for handler in ours.handlers:
            handler.setFormatter(formatter)
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(formatter)
    ours.addHandler(handler)
    ours.propagate = False
    # psycopg's pool warns once per reconnect attempt; taskq's components log an outage
    # once when it starts and once when it ends (store-unavailable / store-recovered)
    logging.getLogger("psycopg.pool").setLevel(logging.ERROR)
    root = logging.getLogger()
    if not root.handlers:
        root.addHandler(handler)
        root.setLevel(logging.WARNING)
    _configured = True
