"""Dramatiq 2.x on the local Redis. Runs in benchmarks/.venvs/dramatiq.

``RedisBroker(url=...)`` with its default middleware; one worker process:
``dramatiq.Worker(broker)`` with its defaults (8 worker threads, 1 s worker timeout);
"at 32" sets ``worker_threads=32``. Enqueue is ``actor.send()``; Dramatiq has no batch
enqueue, so no batch figure is reported. Its Redis broker re-queues the messages of a
worker whose heartbeat is older than ``heartbeat_timeout`` (60 s) during maintenance.
"""

from __future__ import annotations

import argparse
import signal
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import _common
import dramatiq
from dramatiq.brokers.redis import RedisBroker

events = _common.Events()
PARSER = _common.base_parser(["enqueue", "drain", "latency", "recovery_bare"])
ARGS = PARSER.parse_args()
broker = RedisBroker(url=ARGS.dsn or "redis://127.0.0.1:6379/9")
dramatiq.set_broker(broker)


@dramatiq.actor(actor_name="noop", queue_name="default", max_retries=0)
def noop(key: str) -> None:
    if events.hold:
        events.write("start", key)
        time.sleep(events.hold)
    elif events.expect:
        with _LOCK:
            events.hit()
    else:
        events.write("start", key)


_LOCK = threading.Lock()


class DramatiqPeer(_common.Peer):
    def __init__(self, args: argparse.Namespace) -> None:
        self.script = __file__
        self.workdir = Path(args.path)
        broker.client.flushdb()

    def enqueue_keys(self, keys: Sequence[str], batch: int) -> None:
        for key in keys:
            noop.send(key)

    def enqueue_one(self, key: str) -> None:
        noop.send(key)

    def pending(self) -> int:
        return broker.client.hlen("dramatiq:default.msgs")

    def describe_stuck(self) -> str:
        return (
            f"{self.pending()} messages still held for the dead worker (the Redis broker "
            "re-queues them after its 60 s heartbeat timeout, at a maintenance pass "
            "that runs on 1% of fetches)"
        )

    def close(self) -> None:
        broker.client.close()


def _worker(args: argparse.Namespace) -> None:
    options = {"worker_threads": args.concurrency} if args.concurrency else {}
    worker = dramatiq.Worker(broker, **options)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    worker.start()
    stop.wait()
    worker.stop(timeout=5000)


def _enqueue(peer: DramatiqPeer, args: argparse.Namespace) -> dict:
    result = _common.enqueue_rates(
        peer, args, lambda keys: peer.enqueue_keys(keys, 0), peer.enqueue_one
    )
    result["send_loop_per_s"] = result.pop("batch_per_s")
    result["batch_note"] = "no batch enqueue API"
    return result


def main() -> None:
    if ARGS.scenario == "worker":
        _worker(ARGS)
        return
    # its own enqueue (no batch API) over the shared one
    _common.run_main(ARGS, DramatiqPeer, {**_common.SHARED, "enqueue": _enqueue})


if __name__ == "__main__":
    main()
