"""``taskq enqueue`` and ``taskq jobs stats|list|show|retry|cancel``."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

from .. import redaction
from ..exceptions import InvalidJobState, TaskqError
from ..jobs import ALL_STATES, CancelResult, Job
from . import args
from .output import (
    EXIT_ERROR,
    EXIT_FINISHED,
    EXIT_OK,
    error,
    print_json,
    print_table,
    with_client,
)

if TYPE_CHECKING:
    from ..client import AsyncClient


def add_enqueue(sub: args.Subparsers) -> None:
    e = sub.add_parser("enqueue", help="enqueue one job; prints its id")
    e.set_defaults(run=cmd_enqueue)
    e.add_argument("actor", help="actor name (its module need not be importable here)")
    e.add_argument(
        "--args",
        type=args.json_arg(list, "--args"),
        default=[],
        metavar="JSON_ARRAY",
        help="positional arguments (default: none)",
    )
    e.add_argument(
        "--kwargs",
        type=args.json_arg(dict, "--kwargs"),
        default={},
        metavar="JSON_OBJECT",
        help="keyword arguments (default: none)",
    )
    e.add_argument(
        "--queue",
        default=None,
        help="queue to put it on (default: the actor's, as recorded in the store by its "
        "workers; required for an actor no worker has registered yet)",
    )
    e.add_argument(
        "--delay",
        type=args.seconds,
        default=None,
        metavar="SECONDS",
        help="run it this many seconds from now (default: now)",
    )
    e.add_argument(
        "--priority",
        type=args.integer,
        default=None,
        metavar="N",
        help="lower runs first (default 0)",
    )
    e.add_argument(
        "--unique-key",
        default=None,
        metavar="KEY",
        help="enqueue only if no queued or running job holds KEY, else print its id "
        "(default: no key)",
    )
    e.add_argument(
        "--meta",
        type=args.json_arg(dict, "--meta"),
        default=None,
        metavar="JSON_OBJECT",
        help="free-form metadata kept with the job (default: none)",
    )
    e.add_argument(
        "--tag", action="append", default=[], metavar="T", dest="tags", help="a tag, repeatable"
    )


def add_jobs(sub: args.Subparsers) -> None:
    jobs = sub.add_parser("jobs", help="inspect and act on jobs")
    jobs_sub = args.subcommands(jobs, "jobs_command", "stats|list|show|retry|cancel", required=True)
    stats = jobs_sub.add_parser("stats", help="count jobs per state")
    stats.set_defaults(run=cmd_stats)
    args.json_flag(stats, "one JSON object, state -> count")
    lst = jobs_sub.add_parser("list", help="list jobs, newest first")
    lst.set_defaults(run=cmd_list)
    lst.add_argument("--state", choices=ALL_STATES, help="only this state (default: all)")
    lst.add_argument("--queue", help="only this queue (default: all)")
    lst.add_argument("--tag", help="only jobs carrying this tag (default: any)")
    lst.add_argument("--limit", type=args.positive_int, default=50, help="at most this many jobs")
    args.json_flag(lst, "a JSON array of job objects")
    show = jobs_sub.add_parser("show", help="show one job")
    show.set_defaults(run=cmd_show)
    show.add_argument("id", help="the job's id")
    args.json_flag(show, "one JSON job object")
    retry = jobs_sub.add_parser("retry", help="re-queue dead or cancelled jobs")
    retry.set_defaults(run=cmd_retry)
    which = retry.add_mutually_exclusive_group(required=True)
    which.add_argument("ids", nargs="*", default=[], metavar="ID", help="the jobs to re-queue")
    which.add_argument("--all-dead", action="store_true", help="re-queue every dead job")
    cancel = jobs_sub.add_parser(
        "cancel",
        help="cancel queued or running jobs (exit 3 if one had already finished)",
    )
    cancel.set_defaults(run=cmd_cancel)
    cancel.add_argument("ids", nargs="+", metavar="ID", help="the jobs to cancel")


def cmd_enqueue(ns: argparse.Namespace) -> int:
    job_id = with_client(
        ns,
        lambda c: c.enqueue_with(
            ns.actor,
            ns.args,
            ns.kwargs,
            queue=ns.queue,
            delay=ns.delay,
            priority=ns.priority,
            unique_key=ns.unique_key,
            meta=ns.meta,
            tags=ns.tags,
        ),
    )
    print(f"duplicate of {job_id}" if job_id.duplicate else job_id)
    return EXIT_OK


def cmd_stats(ns: argparse.Namespace) -> int:
    counts = with_client(ns, lambda c: c.stats())
    if ns.json:
        print_json(counts)
    else:
        for state in ALL_STATES:
            print(f"{state:<10} {counts.get(state, 0):>10}")
    return EXIT_OK


def cmd_list(ns: argparse.Namespace) -> int:
    jobs = with_client(
        ns, lambda c: c.list(state=ns.state, queue=ns.queue, tag=ns.tag, limit=ns.limit)
    )
    if ns.json:
        print_json([redaction.job(j.to_dict()) for j in jobs])
        return EXIT_OK
    print_table(
        "{:<36}  {:<20.20} {:<10.10} {:<10} {:>3} {:>5}  {}",
        ("id", "actor", "queue", "state", "att", "crash", "dead_reason"),
        (
            (str(j.id), j.actor, j.queue, j.state, j.attempts, j.crash_count, j.dead_reason or "")
            for j in jobs
        ),
    )
    return EXIT_OK


def cmd_show(ns: argparse.Namespace) -> int:
    job = with_client(ns, lambda c: c.get(ns.id))
    if ns.json:
        print_json(redaction.job(job.to_dict()))
    else:
        print("\n".join(_job_lines(job)))
    return EXIT_OK


def _job_lines(job: Job) -> list[str]:
    d = redaction.job(job.to_dict())
    width = max(len(k) for k in d)
    return [
        f"{k:<{width}}  {json.dumps(v, ensure_ascii=False) if isinstance(v, list | dict) else v}"
        for k, v in d.items()
    ]


def cmd_retry(ns: argparse.Namespace) -> int:
    if ns.all_dead:
        count = with_client(ns, lambda c: c.retry_all_dead())
        print(f"re-queued {count} dead job(s)")
        return EXIT_OK
    from ..inputs import parse_job_id

    ids = [parse_job_id(i) for i in ns.ids]  # all ids valid before anything is changed

    async def go(client: AsyncClient) -> int:
        failures = 0
        for job_id in ids:
            try:
                await client.retry(job_id)
                print(f"re-queued {job_id}")
            except TaskqError as exc:
                error(exc)
                failures += 1
        return failures

    return EXIT_ERROR if with_client(ns, go) else EXIT_OK


_CANCEL_SAID = {
    CancelResult.CANCELLED: "cancelled {}",
    CancelResult.REQUESTED: "cancel requested {} (running: its worker stops it)",
    CancelResult.ALREADY_REQUESTED: "cancel already requested {} (running: its worker stops it)",
}


def cmd_cancel(ns: argparse.Namespace) -> int:
    """Exit 0: every job cancelled or being stopped; 3: some had already finished (nothing
    changed for them); 1: some id is unknown (or another error)."""
    from ..inputs import parse_job_id, who

    ids = [parse_job_id(i) for i in ns.ids]  # all ids valid before anything is changed

    async def go(client: AsyncClient) -> int:
        errors = finished = 0
        for job_id in ids:
            try:
                result = await client.cancel(job_id, by=f"cli:{who()}")
                print(_CANCEL_SAID[result].format(job_id))
            except InvalidJobState as exc:
                error(exc)
                finished += 1
            except TaskqError as exc:
                error(exc)
                errors += 1
        return EXIT_ERROR if errors else EXIT_FINISHED if finished else EXIT_OK

    return with_client(ns, go)
