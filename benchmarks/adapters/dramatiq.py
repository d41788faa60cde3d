"""Dramatiq 2.x with the local Redis (127.0.0.1:6379)."""

from __future__ import annotations

from .base import Adapter

ADAPTER = Adapter(
    name="dramatiq",
    label="Dramatiq (Redis)",
    dist="dramatiq",
    script="dramatiq_bench.py",
    backend="redis",
    requirements=("dramatiq[redis]>=2,<3",),
    defaults="RedisBroker, one worker process, Worker defaults (8 threads); actor.send",
    # the Redis broker re-queues a dead worker's messages only after its 60 s heartbeat
    # timeout, at a maintenance pass run with 1% chance per fetch
    overrides={"recovery_bare": {"observe": 180}},
    max_runs={"recovery_bare": 1},
    not_applicable={
        "recovery_workgroup": "n/a: no supervisor that rescues an observed death",
    },
)
