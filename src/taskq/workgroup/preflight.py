"""``taskq workgroup validate`` against the store, when it can reach it: what the
children will meet when they start, said before the deploy.

- **A change of queue a child would refuse** (an actor of this registry moved to another
  queue than the store recorded, and a ``[[workers]]`` entry without
  ``force_update_actor_config``): an error, in the words the child would use.
- **Changes the children take on** (how jobs run: attempts, timeout, ...): listed, as
  they will be logged (``actor-config-updated``).
- **A queue no actor uses**: a ``[[workers]]`` entry consumes a queue that no actor of
  this registry, no actor other workers recorded and no job uses (a typo, most likely):
  a warning. Without the store, the registry's actors alone decide.

The store is the children's (``TASKQ_DSN_FILE``, ``TASKQ_DSN``, ``TASKQ_SCHEMA`` as they
will see them). Unreachable, not migrated, or a SQLite file that does not exist yet
(validate never creates one): one line says so and nothing of the above is checked
against it.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass, field

from ..exceptions import TaskqError
from ..registry import Registry
from ..settings import redact, resolve, sqlite_path
from ..store import Store, create_store
from ..store.drift import config_differences, routing_refusal
from .config import WorkgroupConfig

#: how long the whole check may take before it is given up (an unreachable host)
STORE_TIMEOUT = 10.0


@dataclass(slots=True)
class Preflight:
    summary: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def preflight(config: WorkgroupConfig, registry: Registry) -> Preflight:
    """What the store says about this config and registry (see the module's docstring)."""
    found = Preflight()
    try:
        settings = resolve()
        where = redact(settings.dsn)
        if settings.kind == "sqlite" and not os.path.exists(sqlite_path(settings.dsn)):
            found.summary.append(f"  store: {where} does not exist yet: not checked")
            _unused_queues(found, config, registry.queues)
            return found
        store = create_store(settings.dsn, settings.schema)
        used = asyncio.run(
            asyncio.wait_for(_against(store, found, config, registry), STORE_TIMEOUT)
        )
    except (TaskqError, OSError, TimeoutError) as exc:
        why = exc.message if isinstance(exc, TaskqError) else str(exc) or type(exc).__name__
        found.summary.append(f"  store: not checked ({why})")
        used = registry.queues
    else:
        found.summary.insert(0, f"  store: {where} (checked)")
    _unused_queues(found, config, used)
    return found


async def _against(
    store: Store, found: Preflight, config: WorkgroupConfig, registry: Registry
) -> set[str]:
    """Compare with the store; return every queue an actor or a job uses."""
    await store.open()
    try:
        await store.check_schema()
        stored = await store.actor_configs()
        with_jobs = {q.queue for q in await store.insight.queue_backlog()}
    finally:
        await store.close()
    differences = config_differences(stored, [actor.config() for actor in registry])
    moves = [d for d in differences if d.routes]
    refusing = [w.name for w in config.workers if not w.force_update_actor_config]
    if moves and refusing:
        found.errors.append(
            f"{routing_refusal(moves)} (these children would refuse to start: "
            f"{', '.join(refusing)})"
        )
    elif moves:
        found.summary.append(
            "  the children will record (force_update_actor_config): "
            + "; ".join(str(d) for d in moves)
        )
    taken_on = [str(d) for d in differences if not d.routes]
    if taken_on:
        found.summary.append(
            "  the children will take on (actor-config-updated): " + "; ".join(taken_on)
        )
    return registry.queues | {c.queue for c in stored.values()} | with_jobs


def _unused_queues(found: Preflight, config: WorkgroupConfig, used: set[str]) -> None:
    for index, worker in enumerate(config.workers):
        for queue in worker.queues:
            if queue not in used:
                found.warnings.append(
                    f'workers[{index}] ("{worker.name}") consumes queue "{queue}", which no '
                    "actor uses and no job is on (a typo?)"
                )
