"""Builders the conformance tests share (not a test module)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from taskq.ids import uuid7
from taskq.jobs import ActorConfig, WorkerInfo

LEASE = 30.0


def past(seconds: float = 60.0) -> datetime:
    return datetime.now(UTC) - timedelta(seconds=seconds)


def future(seconds: float = 3600.0) -> datetime:
    return datetime.now(UTC) + timedelta(seconds=seconds)


async def claim_all(store: Any, worker: Any, queues=("default",), limit=100, lease=LEASE, **kw):
    """The runs of one claim (its ``Claim.jobs``)."""
    return (await store.claim(worker, list(queues), limit, lease, **kw)).jobs


def actor(name: str = "tests.resize", **changes) -> ActorConfig:
    fields = {
        "queue": "images",
        "max_attempts": 3,
        "max_crashes": 2,
        "idempotent": False,
        "cpu_bound": True,
        "timeout": 30.0,
    } | changes
    return ActorConfig(name=name, **fields)


def worker(label: str | None = None, instance=None, **kw) -> WorkerInfo:
    return WorkerInfo(
        id=uuid7(),
        pid=kw.pop("pid", 4242),
        hostname="host-1",
        queues=kw.pop("queues", ["default", "b"]),
        worker_label=label,
        workgroup_instance=instance,
        **kw,
    )
