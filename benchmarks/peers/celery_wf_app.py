"""The Celery app of the workflow benchmark (_workflows.py): Celery 5.7, Redis as broker
AND result backend, because a chord needs one (the Redis backend counts the header's
results in a key and sends the callback when the count is complete: Celery's "native"
chord on Redis, no unlock task). Runs in ``benchmarks/.venvs/celery``; the worker is
``python -m celery -A celery_wf_app worker`` with Celery's defaults (prefork).

It reads ``BENCH_CELERY_BROKER`` and ``BENCH_CELERY_PREFIX`` as ``celery_app`` does (its
keys live under the prefix: broker messages and results alike). ``wf_step`` and
``wf_fanin`` append one ``done`` line each (``_cpu.done``), as taskq's actors of the same
names do.
"""

from __future__ import annotations

import os

import _cpu
from celery import Celery, chord, group

BROKER = os.environ.get("BENCH_CELERY_BROKER", "redis://127.0.0.1:6379/10")
PREFIX = os.environ.get("BENCH_CELERY_PREFIX", "bench_celery:") + "wf:"
QUEUE = "celery"

app = Celery("taskq_bench_wf", broker=BROKER, backend=BROKER)
app.conf.update(
    broker_transport_options={"global_keyprefix": PREFIX},
    result_backend_transport_options={"global_keyprefix": PREFIX},
    result_expires=3600,
    broker_connection_retry_on_startup=True,
    worker_hijack_root_logger=False,
)


@app.task(name="wf_step")
def wf_step(key: str) -> None:
    _cpu.done()


@app.task(name="wf_fanin")
def wf_fanin(results: list[object]) -> None:
    _cpu.done()


def the_chord(keys: list[str]):  # type: ignore[no-untyped-def]
    return chord(group(wf_step.s(k) for k in keys), wf_fanin.s())


def plain(keys: list[str]) -> None:
    group(wf_step.si(k) for k in keys).apply_async()


def redis_client():  # type: ignore[no-untyped-def]
    """celery_app's plain redis-py client on the same broker database."""
    import celery_app

    return celery_app.redis_client()


def clear() -> None:
    client = redis_client()
    found = list(client.scan_iter(match=PREFIX + "*", count=1000))
    for start in range(0, len(found), 1000):
        client.delete(*found[start : start + 1000])


def pending() -> int:
    client = redis_client()
    return int(client.llen(PREFIX + QUEUE)) + int(client.hlen(PREFIX + "unacked"))
