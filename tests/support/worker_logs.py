"""Capture taskq's structured log records in-process (whatever ``logs.configure`` did)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


class Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def events(self, name: str) -> list[dict[str, Any]]:
        return [
            {"level": r.levelname.lower(), **getattr(r, "taskq_fields", {})}
            for r in list(self.records)
            if r.getMessage() == name
        ]


@contextmanager
def captured_logs() -> Iterator[Records]:
    logger = logging.getLogger("taskq")
    handler = Records()
    old_level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old_level)
