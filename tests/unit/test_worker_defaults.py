"""The worker's default concurrency follows the registry: many consumers when every actor
is async, few when sync or cpu_bound actors take a thread or a process each."""

from __future__ import annotations

import uuid

import taskq
from taskq.worker.buffer import (
    CPU_BATCH,
    CPU_BATCH_PACED,
    CPU_SHARE,
    CpuShare,
    cpu_refill,
)
from taskq.worker.config import (
    DEFAULT_ASYNC_CONCURRENCY,
    DEFAULT_CONCURRENCY,
    WorkerConfig,
    default_concurrency,
)
from taskq.workgroup.child import build_command
from taskq.workgroup.config import parse_config


def _registry(*kinds: str) -> taskq.Registry:
    registry = taskq.Registry()
    for i, kind in enumerate(kinds):
        if kind == "async":

            async def a(x: int) -> None:
                return None

            registry.actor(name=f"a{i}")(a)
        elif kind == "sync":

            def s(x: int) -> None:
                return None

            registry.actor(name=f"s{i}")(s)
        else:

            def c(x: int) -> None:
                return None

            registry.actor(name=f"c{i}", cpu_bound=True)(c)
    return registry


def test_every_actor_async_gets_the_async_default() -> None:
    assert DEFAULT_ASYNC_CONCURRENCY > DEFAULT_CONCURRENCY
    assert default_concurrency(_registry("async", "async")) == DEFAULT_ASYNC_CONCURRENCY


def test_a_sync_or_cpu_bound_actor_keeps_the_small_default() -> None:
    assert default_concurrency(_registry("async", "sync")) == DEFAULT_CONCURRENCY
    assert default_concurrency(_registry("async", "cpu"), 1) == DEFAULT_CONCURRENCY


def test_with_cpu_bound_actors_it_grows_with_the_pool() -> None:
    """Consumers enough to feed the pool: a worker of cpu actors only holds two jobs a
    process (running, piped) when it claims, and has room for claims of up to
    CPU_BATCH_PACED (N + 2 on a larger pool) above that, at least CPU_BATCH; beside other
    actors the cpu share (3 x N) is at most half the consumers. Small mixed pools keep the
    plain default."""
    cpu_only, mixed = _registry("cpu", "cpu"), _registry("async", "cpu")
    assert default_concurrency(cpu_only, 1) == 2 * 1 + CPU_BATCH_PACED
    assert default_concurrency(cpu_only, 2) == 2 * 2 + CPU_BATCH_PACED  # 16
    assert default_concurrency(cpu_only, 8) == 2 * 8 + CPU_BATCH_PACED  # 12 > 8 + 2
    assert default_concurrency(cpu_only, 32) == 2 * 32 + (32 + 2)
    assert default_concurrency(mixed, 1) == DEFAULT_CONCURRENCY
    assert default_concurrency(mixed, 2) == 12
    assert default_concurrency(mixed, 8) == 48
    for processes in (1, 2, 8, 32):  # the share and the refill mark fit in what it gives
        consumers = default_concurrency(cpu_only, processes)
        refill_at = cpu_refill(processes, consumers)
        assert refill_at == 2 * processes  # a job running and one piped each
        assert consumers - refill_at >= max(CPU_BATCH, processes + 2)
        share = CpuShare(frozenset({"c1"}), processes, default_concurrency(mixed, processes))
        assert share.high == CPU_SHARE * processes
    assert default_concurrency(_registry("sync", "sync"), 32) == DEFAULT_CONCURRENCY


def test_the_config_leaves_it_to_the_registry_unless_given() -> None:
    assert WorkerConfig(actors="m:r").max_concurrency is None


def test_a_workgroup_child_without_max_concurrency_passes_no_flag() -> None:
    doc = {"actors": "m:r", "workers": [{"name": "x"}, {"name": "y", "max_concurrency": 3}]}
    config = parse_config(doc)
    x, y = (
        build_command(w, actors="m:r", instance=uuid.uuid4(), supervisor=config.supervisor)
        for w in config.workers
    )
    assert "--max-concurrency" not in x.argv
    assert y.argv[y.argv.index("--max-concurrency") + 1] == "3"
