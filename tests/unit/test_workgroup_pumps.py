"""The output pumps on real asyncio streams: JSON stays JSON, long lines split, EOF kept,
and a failing pump still drains its pipe."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterator

import pytest

from taskq.logs import _FIELDS
from taskq.workgroup.pumps import pump

LIMIT = 1024


class Captured(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def events(self) -> list[tuple[str, dict]]:
        return [(r.getMessage(), getattr(r, _FIELDS, {})) for r in self.records]


@pytest.fixture
def captured() -> Iterator[Captured]:
    handler = Captured()
    loggers = [
        logging.getLogger("taskq.workgroup.child"),
        logging.getLogger("taskq.workgroup.pumps"),
    ]
    saved = [(lg, lg.level) for lg in loggers]
    for lg in loggers:
        lg.addHandler(handler)
        lg.setLevel(logging.DEBUG)
    yield handler
    for lg, level in saved:
        lg.removeHandler(handler)
        lg.setLevel(level)


async def run_pump(data: bytes, **kwargs) -> asyncio.StreamReader:
    reader = asyncio.StreamReader(limit=LIMIT)
    reader.feed_data(data)
    reader.feed_eof()
    await asyncio.wait_for(
        pump(reader, worker="api", stream="stderr", pid=42, limit=LIMIT, **kwargs), 10
    )
    return reader


async def test_json_line_stays_json_with_worker_and_stream_added(captured: Captured) -> None:
    seen: list[tuple[str, dict]] = []
    line = {
        "event": "worker-started",
        "level": "warning",
        "pid": 7,
        "worker": "0190-id",
        "queues": ["a"],
        "timestamp": "2026-01-02T03:04:05+00:00",
    }
    await run_pump(
        json.dumps(line).encode() + b"\n", on_event=lambda e, f: seen.append((e, dict(f)))
    )
    (record,) = captured.records
    assert record.getMessage() == "worker-started" and record.levelno == logging.WARNING
    assert record.process == 7
    assert getattr(record, _FIELDS) == {
        "queues": ["a"],
        "child_worker": "0190-id",
        "worker": "api",
        "stream": "stderr",
    }
    assert seen == [("worker-started", getattr(record, _FIELDS))]


async def test_text_lines_and_an_unterminated_last_line(captured: Captured) -> None:
    await run_pump(b"Traceback (most recent call last):\nValueError: boom")
    assert captured.events() == [
        (
            "child-output",
            {"worker": "api", "stream": "stderr", "line": "Traceback (most recent call last):"},
        ),
        ("child-output", {"worker": "api", "stream": "stderr", "line": "ValueError: boom"}),
    ]


async def test_an_over_long_line_is_forwarded_in_pieces(captured: Captured) -> None:
    size = 50 * LIMIT + 17
    await run_pump(b"x" * size + b"\nafter\n")
    events = captured.events()
    pieces = [fields for _, fields in events if "part" in fields]
    assert len(pieces) > 1
    assert sum(len(p["line"]) for p in pieces) == size
    assert [p["part"] for p in pieces] == list(range(1, len(pieces) + 1))
    assert [p["final"] for p in pieces] == [False] * (len(pieces) - 1) + [True]
    assert events[-1][1]["line"] == "after"  # the pump went on


async def test_a_failing_pump_logs_once_and_drains_the_pipe(captured: Captured) -> None:
    def explode(event: str, fields: object) -> None:
        raise RuntimeError("hook broke")

    lines = b"".join(json.dumps({"event": f"e{i}"}).encode() + b"\n" for i in range(100))
    reader = await run_pump(lines, on_event=explode)
    failed = [f for e, f in captured.events() if e == "workgroup.stream_pump_failed"]
    assert len(failed) == 1 and "hook broke" in failed[0]["error"]
    assert reader.at_eof()  # everything was read: the child can never block on the pipe
    assert len([e for e, _ in captured.events() if e.startswith("e")]) == 1
