"""Output pumps: a child's stdout and stderr, line by line, into the supervisor's log.

* A JSON-object line (the child's own structured log) stays one JSON object: it is
  re-emitted through the supervisor's log handler with ``worker`` and ``stream`` added,
  keeping the child's ``event``, ``level``, ``timestamp``, ``pid`` and fields (a child
  field already called ``worker`` or ``stream`` is kept as ``child_worker`` /
  ``child_stream``).
* Any other line becomes a ``child-output`` event with the text in ``line``.
* A line longer than the pipe limit is forwarded in pieces (``part`` 1, 2, ...; the last
  has ``final: true``): the read is bounded, so it never stops the pump and never makes
  the child block on a full pipe.
* If forwarding fails, ``workgroup.stream_pump_failed`` is logged once and the pump goes
  on draining the pipe without forwarding, so the child keeps running.
* A pump runs to EOF; the supervisor waits for it after the child exits, so a crashed
  child's last lines (its traceback) are in the log before the restart is scheduled.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from ..events import WORKGROUP_STREAM_DRAIN_FAILED, WORKGROUP_STREAM_PUMP_FAILED
from ..logs import _FIELDS, get_logger

log = get_logger(__name__)
_forward = logging.getLogger("taskq.workgroup.child")

_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "warn": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
}
_RESERVED = ("event", "level", "timestamp", "logger", "pid")


def _emit(
    level: int,
    event: str,
    fields: dict[str, Any],
    *,
    logger: str | None = None,
    created: float | None = None,
    pid: int | None = None,
) -> None:
    if not _forward.isEnabledFor(level):
        return
    record = _forward.makeRecord(
        logger or _forward.name,
        level,
        "(child)",
        0,
        event,
        (),
        None,
        extra={_FIELDS: fields},
    )
    if created is not None:
        record.created = created
    if pid is not None:
        record.process = pid
    _forward.handle(record)


def forward_line(
    raw: bytes,
    *,
    worker: str,
    stream: str,
    pid: int | None,
    part: int | None = None,
    final: bool = False,
) -> tuple[str, Mapping[str, Any]] | None:
    """Re-emit one line (or one piece of an over-long line) of a child's output; return
    the event name and its fields when it was one of the child's JSON log lines."""
    text = raw.decode("utf-8", errors="replace").rstrip("\r\n")
    if part is None and text.startswith("{"):
        try:
            obj = json.loads(text)
        except (ValueError, RecursionError):
            obj = None
        if isinstance(obj, dict):
            forwarded: dict[str, Any] = {k: v for k, v in obj.items() if k not in _RESERVED}
            for key in ("worker", "stream"):  # the child's own field of that name is kept
                if key in forwarded:
                    forwarded[f"child_{key}"] = forwarded.pop(key)
            forwarded["worker"] = worker
            forwarded["stream"] = stream
            level = _LEVELS.get(str(obj.get("level", "info")).lower(), logging.INFO)
            created = None
            stamp = obj.get("timestamp")
            if isinstance(stamp, str):
                try:
                    created = datetime.fromisoformat(stamp).timestamp()
                except ValueError:
                    created = None
            child_pid = obj.get("pid") if isinstance(obj.get("pid"), int) else pid
            logger = obj.get("logger") if isinstance(obj.get("logger"), str) else None
            event = str(obj.get("event", "child-output"))
            _emit(level, event, forwarded, logger=logger, created=created, pid=child_pid)
            return event, forwarded
    fields: dict[str, Any] = {"worker": worker, "stream": stream, "line": text}
    if part is not None:
        fields["part"] = part
        fields["final"] = final
    level = logging.WARNING if stream == "stderr" else logging.INFO
    _emit(level, "child-output", fields, pid=pid)
    return None


async def _drain(reader: asyncio.StreamReader, limit: int) -> None:
    while await reader.read(limit):
        pass


async def pump(
    reader: asyncio.StreamReader,
    *,
    worker: str,
    stream: str,
    pid: int | None,
    limit: int,
    on_event: Callable[[str, Mapping[str, Any]], None] | None = None,
) -> None:
    """Forward ``reader`` until EOF. Never raises (except cancellation). ``on_event`` is
    called with the name and the fields of each JSON log line the child writes."""
    part = 0  # > 0 while inside an over-long line
    try:
        while True:
            try:
                line = await reader.readuntil(b"\n")
            except asyncio.IncompleteReadError as exc:  # EOF: the last, unterminated line
                if exc.partial:
                    forward_line(
                        exc.partial,
                        worker=worker,
                        stream=stream,
                        pid=pid,
                        part=part + 1 if part else None,
                        final=True,
                    )
                return
            except asyncio.LimitOverrunError as exc:
                # no newline within the limit: forward what is buffered as one piece
                chunk = await reader.read(max(exc.consumed, 1))
                part += 1
                forward_line(chunk, worker=worker, stream=stream, pid=pid, part=part)
                continue
            if part:
                forward_line(line, worker=worker, stream=stream, pid=pid, part=part + 1, final=True)
                part = 0
            else:
                event = forward_line(line, worker=worker, stream=stream, pid=pid)
                if event is not None and on_event is not None:
                    on_event(*event)
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        log.event(
            WORKGROUP_STREAM_PUMP_FAILED,
            worker=worker,
            stream=stream,
            child_pid=pid,
            error=f"{type(exc).__name__}: {exc}",
            detail="output of this child is no longer forwarded; the child keeps running",
        )
        try:
            await _drain(reader, limit)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.event(
                WORKGROUP_STREAM_DRAIN_FAILED,
                worker=worker,
                stream=stream,
                child_pid=pid,
                exc_info=True,
            )
