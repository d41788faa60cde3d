"""``taskq queues [pause|resume|limit]`` and ``taskq actors [limit]``: the fleet-wide
controls, and the listings that show them."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from ..exceptions import ConfigError
from ..jobs import Limits
from ..store.queues import ACTOR, QUEUE
from . import args
from .output import EXIT_OK, print_json, print_table, warn, with_client

if TYPE_CHECKING:
    from ..client import AsyncClient


def add_queues(sub: args.Subparsers) -> None:
    queues = sub.add_parser(
        "queues", help="list queues (depth, oldest wait, pause, limits); pause, resume, limit"
    )
    queues.set_defaults(run=cmd_queues)
    args.json_flag(queues, "a JSON array of queue objects")
    queues_sub = args.subcommands(queues, "queues_command", "pause|resume|limit")
    pause = queues_sub.add_parser(
        "pause", help="stop every worker claiming from a queue (running jobs finish)"
    )
    pause.set_defaults(run=cmd_pause)
    pause.add_argument("name")
    resume = queues_sub.add_parser("resume", help="let workers claim from a paused queue")
    resume.set_defaults(run=cmd_resume)
    resume.add_argument("name")
    _limit_options(
        queues_sub.add_parser(
            "limit", help="set a queue's fleet-wide limits (the ones not given are kept)"
        ),
        QUEUE,
    )


def add_actors(sub: args.Subparsers) -> None:
    actors = sub.add_parser(
        "actors", help="list the actors workers recorded, with their limits; limit one"
    )
    actors.set_defaults(run=cmd_actors)
    args.json_flag(actors, "a JSON array of actor objects")
    actors_sub = args.subcommands(actors, "actors_command", "limit")
    _limit_options(
        actors_sub.add_parser(
            "limit",
            help="set an actor's fleet-wide limits, on every queue (the ones not given are kept)",
        ),
        ACTOR,
    )


def _limit_options(parser: argparse.ArgumentParser, kind: str) -> None:
    parser.set_defaults(run=cmd_limit, limit_kind=kind)
    parser.add_argument("name", help=f"the {kind}")
    parser.add_argument(
        "--concurrency",
        type=args.positive_int,
        default=None,
        metavar="N",
        help="at most N of its jobs running at once, across every worker (default: keep)",
    )
    parser.add_argument(
        "--rate",
        type=args.rate,
        default=None,
        metavar="N/PERIOD",
        help="at most N starts in any PERIOD: second, minute or hour (default: keep)",
    )
    parser.add_argument("--clear", action="store_true", help=f"remove the {kind}'s limits")


def cmd_queues(ns: argparse.Namespace) -> int:
    rows = with_client(ns, lambda c: c.queues())
    if ns.json:
        print_json([r.to_dict() for r in rows])
        return EXIT_OK
    print_table(
        "{:<20.20} {:>8} {:>8} {:>10} {:>6} {:>9} {:>9}  {:<6} {:>11}  {}",
        (
            "queue",
            "queued",
            "running",
            "succeeded",
            "dead",
            "cancelled",
            "oldest_s",
            "paused",
            "concurrency",
            "rate",
        ),
        (
            (
                r.name,
                *(r.depth[s] for s in ("queued", "running", "succeeded", "dead", "cancelled")),
                "-" if r.oldest_age_s is None else f"{r.oldest_age_s:.1f}",
                "yes" if r.paused else "no",
                r.limits.concurrency or "-",
                r.limits.rate or "-",
            )
            for r in rows
        ),
    )
    return EXIT_OK


async def _warn_if_unused(client: AsyncClient, queue: str) -> None:
    """A queue no recorded actor uses and no job is on is most likely a typo: say so
    (the command still does what it was asked: a queue may be set up before its jobs)."""
    used = {c.queue for c in (await client.store.actor_configs()).values()}
    used |= {q.name for q in await client.queues() if any(q.depth.values())}
    if queue not in used:
        known = ", ".join(sorted(used)) or "none yet"
        warn(
            f"no actor or job uses queue {queue!r} (used: {known}); "
            "check the name if that is not what you meant"
        )


def cmd_pause(ns: argparse.Namespace) -> int:
    async def go(client: AsyncClient) -> None:
        await client.pause_queue(ns.name)
        await _warn_if_unused(client, ns.name)

    with_client(ns, go)
    print(f"paused queue {ns.name}")
    return EXIT_OK


def cmd_resume(ns: argparse.Namespace) -> int:
    with_client(ns, lambda c: c.resume_queue(ns.name))
    print(f"resumed queue {ns.name}")
    return EXIT_OK


def cmd_limit(ns: argparse.Namespace) -> int:
    kind = ns.limit_kind
    if ns.clear and (ns.concurrency is not None or ns.rate is not None):
        raise ConfigError("give --clear alone, or --concurrency and/or --rate")
    if not ns.clear and ns.concurrency is None and ns.rate is None:
        raise ConfigError("give --concurrency N, --rate N/PERIOD or --clear")

    async def go(client: AsyncClient) -> Limits:
        new = Limits()
        limits = await client.limits()
        if not ns.clear:
            old = limits.get((kind, ns.name), Limits())
            new = Limits(
                concurrency=old.concurrency if ns.concurrency is None else ns.concurrency,
                rate=old.rate if ns.rate is None else ns.rate,
            )
        setter = client.set_queue_limits if kind == QUEUE else client.set_actor_limits
        await setter(ns.name, new.concurrency, new.rate)
        if kind == QUEUE and not ns.clear:
            await _warn_if_unused(client, ns.name)
        return new

    new = with_client(ns, go)
    if not new:
        print(f"{kind} {ns.name}: no limits")
    else:
        print(
            f"{kind} {ns.name}: concurrency {new.concurrency or 'unlimited'}, "
            f"rate {new.rate or 'unlimited'}"
        )
    return EXIT_OK


def cmd_actors(ns: argparse.Namespace) -> int:
    async def go(client: AsyncClient) -> list[dict[str, Any]]:
        configs = await client.store.actor_configs()
        limits = {name: v for (kind, name), v in (await client.limits()).items() if kind == ACTOR}
        return [
            {
                "name": name,
                "queue": configs[name].queue if name in configs else None,
                "concurrency_limit": limits.get(name, Limits()).concurrency,
                "rate_limit": str(limits[name].rate)
                if name in limits and limits[name].rate
                else None,
            }
            for name in sorted(set(configs) | set(limits))
        ]

    rows = with_client(ns, go)
    if ns.json:
        print_json(rows)
        return EXIT_OK
    print_table(
        "{:<30.30} {:<20.20} {:>11}  {}",
        ("actor", "queue", "concurrency", "rate"),
        (
            (r["name"], r["queue"] or "-", r["concurrency_limit"] or "-", r["rate_limit"] or "-")
            for r in rows
        ),
    )
    return EXIT_OK
