"""``taskq workgroup validate``: check a config without starting anything.

Errors (exit 1): the file is missing or invalid, its ``actors`` reference cannot be
imported, or (checked against the store when it is reachable: ``preflight``) an actor
moved to another queue that a child would refuse to record. Warnings (exit 0): an actor
whose queue no ``[[workers]]`` entry consumes (another workgroup may consume it), a
queue a ``[[workers]]`` entry consumes that no actor or job uses, and a
``shutdown_grace`` below a child's worst-case clean exit.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..kinds import duration_text
from ..registry import Registry, load_registry
from .config import (
    CHILD_TEARDOWN_MARGIN,
    WORKER_SHUTDOWN_GRACE,
    WorkgroupConfig,
    describe_dsn,
)
from .preflight import preflight


@dataclass(frozen=True, slots=True)
class Report:
    summary: list[str]
    warnings: list[str]
    errors: list[str] = field(default_factory=list)  # what a child would refuse (preflight)


def warnings_for(config: WorkgroupConfig, registry: Registry | None) -> list[str]:
    out: list[str] = []
    sup = config.supervisor
    floor = WORKER_SHUTDOWN_GRACE + CHILD_TEARDOWN_MARGIN
    if sup.shutdown_grace < floor:
        out.append(
            f"[supervisor] shutdown_grace {sup.shutdown_grace:g}s is below a child's "
            f"worst-case clean exit of {floor:g}s (worker shutdown grace "
            f"{WORKER_SHUTDOWN_GRACE:g}s + {CHILD_TEARDOWN_MARGIN:g}s teardown): children get "
            f"--shutdown-grace {sup.child_shutdown_grace:g}s, so running jobs have less time to "
            "finish before they are cancelled and given back"
        )
    if sup.shutdown_grace < CHILD_TEARDOWN_MARGIN:
        out.append(
            f"[supervisor] shutdown_grace {sup.shutdown_grace:g}s is below the "
            f"{CHILD_TEARDOWN_MARGIN:g}s a child needs to give back its jobs: children may be "
            "SIGKILLed mid-teardown and their running jobs rescued as crashes"
        )
    for index, w in enumerate(config.workers):
        if w.health.enabled and w.health.startup_grace < MIN_STARTUP_GRACE:
            out.append(
                f'workers[{index}] ("{w.name}"): health startup_grace {w.health.startup_grace:g}s '
                f"is shorter than a worker takes to start and register (~1-2 s): it may be "
                "killed as unhealthy before its first heartbeat, over and over"
            )
    if registry is not None:
        every = any(not w.queues for w in config.workers)  # no queues: all of them
        consumed = {q for w in config.workers for q in w.queues}
        for actor in [] if every else registry:
            if actor.queue not in consumed:
                out.append(
                    f'actor "{actor.name}" uses queue "{actor.queue}", which no [[workers]] '
                    "entry consumes (fine if another workgroup or worker does)"
                )
    return out


#: seconds: below this a child may be judged before it could register its row
MIN_STARTUP_GRACE = 3.0


def summarise(config: WorkgroupConfig, registry: Registry | None) -> list[str]:
    sup = config.supervisor
    lines = [
        f"workgroup {config.path}",
        f"  actors: {config.actors}"
        + (f" ({len(registry)} actors)" if registry is not None else ""),
        f"  supervisor: shutdown_grace={sup.shutdown_grace:g}s "
        f"(children get --shutdown-grace {sup.child_shutdown_grace:g}s, worst-case exit "
        f"{sup.child_worst_case_exit:g}s) backoff={sup.backoff_initial:g}s*{sup.backoff_factor:g}"
        f"^n<={sup.backoff_max:g}s burst_limit={sup.burst_limit} in {sup.burst_window:g}s"
        + (f" http={sup.http_host}:{sup.http_port}" if sup.http_port is not None else ""),
        f"  store (rescue, health): {describe_dsn(config)}",
        f"  workers ({len(config.workers)}):",
    ]
    for w in config.workers:
        health = w.health
        health_text = (
            f"health every {health.check_interval:g}s, stale after {health.stale_after:g}s, "
            f"grace {health.startup_grace:g}s, {health.consecutive_failure_limit} query failures"
            if health.enabled
            else "health off"
        )
        lines.append(
            f"    {w.name}: queues={','.join(w.queues) or '(every queue of the registry)'} "
            f"max_concurrency={w.max_concurrency or 'default'} "
            f"poll_interval={w.poll_interval:g}s worker_group={w.worker_group} "
            f"heartbeat={w.heartbeat_interval:g}s"
            + (" force_update_actor_config" if w.force_update_actor_config else "")
            + f"; {health_text}"
        )
        p = w.config
        lines.append(
            f"      pruning: every {duration_text(p.prune_interval)}; keeps succeeded jobs "
            f"{duration_text(p.keep_succeeded)}, dead {duration_text(p.keep_dead)}, cancelled "
            f"{duration_text(p.keep_cancelled)}, silent worker rows "
            f"{duration_text(p.keep_silent_workers)}"
            + ("; vacuum after prune" if p.vacuum_after_prune else "")
        )
    schedules = registry.schedules if registry is not None else []
    if schedules:
        lines.append(f"  schedules ({len(schedules)}; every worker enqueues each tick once):")
        lines += [
            f"    {s.name}: {s.cron} ({s.timezone}) -> {s.actor}, missed={s.missed.value}"
            for s in schedules
        ]
    return lines


def check(config: WorkgroupConfig) -> Report:
    """Import the actors, build the summary and check against the store when it can be
    reached (``preflight``); raises the import's ``TaskqError``."""
    registry = load_registry(config.actors)
    found = preflight(config, registry)
    return Report(
        summarise(config, registry) + found.summary,
        warnings_for(config, registry) + found.warnings,
        found.errors,
    )


__all__ = ["Report", "check", "summarise", "warnings_for"]
