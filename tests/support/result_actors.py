"""One actor of each runner kind (async on the loop, sync in a thread, cpu_bound in the
process pool) returning a result that is not JSON, or one of a chosen size: the result
rule must treat them alike (tests/integration/test_worker_results.py)."""

from __future__ import annotations

from taskq import Registry, Snooze

registry = Registry()


@registry.actor
async def async_not_json() -> object:
    return {"when": object()}


@registry.actor
async def async_sized(n_chars: int) -> str:
    return "x" * n_chars


@registry.actor
def sync_not_json() -> object:
    return {"when": object()}


@registry.actor
def sync_sized(n_chars: int) -> str:
    return "x" * n_chars


@registry.actor(cpu_bound=True)
def cpu_not_json() -> object:
    return {"when": object()}


@registry.actor(cpu_bound=True)
def cpu_sized(n_chars: int) -> str:
    return "x" * n_chars


# a returned Snooze is not a result: it snoozes, on every runner (max_snoozes=1: the
# first run snoozes, the second is dead/snoozed_too_often)
@registry.actor(max_snoozes=1)
async def async_snooze() -> object:
    return Snooze(0.01)


@registry.actor(max_snoozes=1)
def sync_snooze() -> object:
    return Snooze(0.01)


@registry.actor(cpu_bound=True, max_snoozes=1)
def cpu_snooze() -> object:
    return Snooze(0.01)


@registry.actor
async def async_unstorable(kind: str) -> object:
    """A result neither store can keep alike: a NUL character, or nesting too deep."""
    if kind == "nul":
        return "a\x00b"
    deep: list[object] = []
    for _ in range(80):
        deep = [deep]
    return deep
