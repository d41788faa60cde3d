"""Actors for the logs-agree-with-the-store test: sync jobs that wait for a gate file,
then fail (dead at their first failure) or end the worker process with ``os._exit``."""

from __future__ import annotations

import os
import time
from pathlib import Path

from taskq import Registry
from tests.support.worker_actors import record

registry = Registry()


def _wait_for(gate: str) -> None:
    deadline = time.monotonic() + 60
    while not Path(gate).exists() and time.monotonic() < deadline:
        time.sleep(0.02)


@registry.actor(queue="agree", max_attempts=1)
def fail_after(gate: str, key: str) -> None:
    _wait_for(gate)
    record("done", key)
    raise RuntimeError(f"failing on purpose: {key}")


@registry.actor(queue="agree")
def exit_after(gate: str) -> None:
    _wait_for(gate)
    os._exit(1)
