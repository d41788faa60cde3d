"""The Celery app of the benchmarks: Celery 5.7 on the local Redis, results ignored.

Runs in ``benchmarks/.venvs/celery`` (``benchmarks.adapters.celery.ADAPTER.prepare()``
builds it and returns its interpreter). Any benchmark may reuse it: import this module
from a script run by that interpreter with ``benchmarks/peers`` on ``sys.path`` (the
harness runs peer scripts there), and start a worker with
``python -m celery -A celery_app worker`` in the same directory. It reads two variables,
so that runs never collide:

* ``BENCH_CELERY_BROKER``: the Redis URL (default ``redis://127.0.0.1:6379/10``: a
  database no other peer uses; Dramatiq's is 9);
* ``BENCH_CELERY_PREFIX``: a key prefix (kombu's ``global_keyprefix``; default
  ``bench_celery:``), e.g. the harness's ``--db-prefix``.

Tasks: ``noop(key)`` (the same body as every peer's no-op: the drain counter, or a start
line, or a hold for the recovery scenario), ``burn(key, iterations)`` (the CPU-bound
body of ``_cpu.py``), ``io_wait(key, ms)`` (an I/O-bound stand-in: records its start,
sleeps). ``keys()`` lists this app's Redis keys; ``pending()`` counts the messages not
yet taken or not yet acknowledged.
"""

from __future__ import annotations

import os
import time

import _common
import _cpu
from celery import Celery

BROKER = os.environ.get("BENCH_CELERY_BROKER", "redis://127.0.0.1:6379/10")
PREFIX = os.environ.get("BENCH_CELERY_PREFIX", "bench_celery:")
QUEUE = "celery"  # Celery's default queue

app = Celery("taskq_bench", broker=BROKER)
app.conf.update(
    task_ignore_result=True,
    result_backend=None,
    broker_transport_options={"global_keyprefix": PREFIX},
    broker_connection_retry_on_startup=True,
    worker_hijack_root_logger=False,
)

events = _common.Events()


@app.task(name="noop")
def noop(key: str) -> None:
    if events.hold:
        events.write("start", key)
        time.sleep(events.hold)
    elif events.expect:
        _cpu.done()  # prefork runs jobs in several processes: one line a job
    else:
        events.write("start", key)


@app.task(name="burn")
def burn(key: str, iterations: int) -> int:
    return _cpu.burn(key, iterations)


@app.task(name="io_wait")
def io_wait(key: str, ms: float) -> None:
    events.write("start", key)
    time.sleep(ms / 1000.0)


_client = None


def redis_client():  # type: ignore[no-untyped-def]
    """A plain redis-py client on the broker's database (kombu's own is per channel)."""
    global _client
    if _client is None:
        import redis

        _client = redis.Redis.from_url(BROKER)
    return _client


def keys() -> list[bytes]:
    return list(redis_client().scan_iter(match=PREFIX + "*", count=1000))


def clear() -> None:
    """Delete this app's keys (its prefix only: other runs on the database are untouched)."""
    client = redis_client()
    found = keys()
    for start in range(0, len(found), 1000):
        client.delete(*found[start : start + 1000])


def pending() -> int:
    """Messages queued, plus those delivered and not yet acknowledged."""
    client = redis_client()
    return int(client.llen(PREFIX + QUEUE)) + int(client.hlen(PREFIX + "unacked"))
