"""taskq's workflow scenarios (``taskq_bench.py wf_fanin|wf_enqueue ...``, _workflows.py):
a ``taskq.group(..., then=...)`` of the no-op ``wf_step`` bodies enqueued with the
``AsyncClient``, run by the real ``taskq worker`` at its defaults."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import _workflows
import taskq_actors

import taskq


def _group(keys: Sequence[str]) -> taskq.Workflow:
    return taskq.group(
        *(taskq.step(taskq_actors.wf_step, k) for k in keys),
        then=taskq.step(taskq_actors.wf_fanin),
        name="bench",
    )


def fanin(peer, args: argparse.Namespace) -> dict:  # type: ignore[no-untyped-def]
    def enqueue_plain(keys: Sequence[str]) -> None:
        peer.runner.run(peer.client.enqueue_many(taskq_actors.wf_step, [((k,), {}) for k in keys]))

    def enqueue_workflow(keys: Sequence[str]) -> None:
        peer.runner.run(peer.client.enqueue_workflow(_group(keys)))

    cmd = [sys.executable, "-m", "taskq", "worker", "--actors", "taskq_actors:registry"]
    return _workflows.fanin(
        peer,
        args,
        enqueue_plain=enqueue_plain,
        enqueue_workflow=enqueue_workflow,
        worker_cmd=cmd,
        pending=peer.pending,
    )


def wf_enqueue(peer, args: argparse.Namespace) -> dict:  # type: ignore[no-untyped-def]
    def enqueue(wf: object) -> None:
        assert isinstance(wf, taskq.Workflow)
        peer.runner.run(peer.client.enqueue_workflow(wf))

    return _workflows.wf_enqueue(args, build=_group, enqueue=enqueue, clear=lambda: None)
