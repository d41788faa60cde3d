"""The ``taskq`` command.

Every subcommand maps user mistakes (bad JSON, unknown job id, unreachable database, bad
DSN, bad schema name, bad flags) to one line on stderr and a non-zero exit; tracebacks
are for taskq's own bugs only.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, NoReturn, TypeVar

from . import __version__, exit_codes, logs
from .client import AsyncClient, parse_job_id, who
from .exceptions import ConfigError, InvalidJobState, TaskqError
from .jobs import ALL_STATES, CancelResult, Job, Limits, QueueInfo, Rate
from .store.queues import ACTOR, QUEUE
from .worker.config import WORKER_DEFAULTS as _WORKER

T = TypeVar("T")

EXIT_OK = exit_codes.OK
EXIT_ERROR = exit_codes.ERROR
EXIT_USAGE = exit_codes.USAGE
EXIT_BROKEN_PIPE = exit_codes.BROKEN_PIPE
EXIT_FINISHED = exit_codes.ALREADY_FINISHED


class _Help(argparse.HelpFormatter):
    """Every option's help ends with its default, unless the text already gives it."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if (
            "default" in text
            or not action.option_strings
            or action.required
            or action.default in (None, False, argparse.SUPPRESS)
        ):
            return text
        if action.default in ([], {}, ()):
            return f"{text} (default: none)"
        return f"{text} (default: %(default)s)"


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line naming the problem, and every option's
    help shows its default."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _Help)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"taskq: {message} (see `{self.prog} --help`)\n")


def _json_arg(kind: type, what: str) -> Callable[[str], Any]:
    def parse(text: str) -> Any:
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            raise argparse.ArgumentTypeError(
                f"{what} is not valid JSON: {exc.msg} at char {exc.pos}"
            ) from None
        if not isinstance(value, kind):
            raise argparse.ArgumentTypeError(
                f"{what} must be a JSON {'array' if kind is list else 'object'}"
            )
        return value

    return parse


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {value}")
    return value


def _prefetch(text: str) -> int | None:
    return None if text == "auto" else _non_negative_int(text)


def _non_negative_int(text: str) -> int:
    value = _int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {value}")
    return value


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a finite number of seconds >= 0, got {text!r}")
    return value


def _positive_seconds(text: str) -> float:
    value = _seconds(text)
    if value == 0:
        raise argparse.ArgumentTypeError("expected a number of seconds > 0")
    return value


def _port(text: str) -> int:
    value = _int(text)
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"expected a port 0-65535, got {value}")
    return value


def _queues(text: str) -> tuple[str, ...]:
    queues = tuple(q.strip() for q in text.split(",") if q.strip())
    if not queues:
        raise argparse.ArgumentTypeError("expected a comma-separated list of queue names")
    return queues


def _rate(text: str) -> Rate:
    try:
        return Rate.parse(text)
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _uuid(text: str) -> Any:
    from uuid import UUID

    try:
        return UUID(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a UUID, got {text!r}") from None


def _limit_options(parser: argparse.ArgumentParser, kind: str) -> None:
    parser.add_argument("name", help=f"the {kind}")
    parser.add_argument(
        "--concurrency",
        type=_positive_int,
        default=None,
        metavar="N",
        help="at most N of its jobs running at once, across every worker (default: keep)",
    )
    parser.add_argument(
        "--rate",
        type=_rate,
        default=None,
        metavar="N/PERIOD",
        help="at most N starts in any PERIOD: second, minute or hour (default: keep)",
    )
    parser.add_argument("--clear", action="store_true", help=f"remove the {kind}'s limits")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="taskq", description="Background jobs where workers die and nothing is lost or silent."
    )
    parser.add_argument(
        "--dsn", help="store DSN (default: TASKQ_DSN_FILE, TASKQ_DSN, sqlite:///taskq.sqlite3)"
    )
    parser.add_argument("--schema", help="Postgres schema (default: TASKQ_SCHEMA or taskq)")
    parser.add_argument("--version", action="version", version=f"taskq {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True

    sub.add_parser("migrate", help="create or upgrade the schema (idempotent)")

    w = sub.add_parser("worker", help="run a worker process")
    w.add_argument(
        "--actors", required=True, metavar="MODULE:ATTR", help="the taskq.Registry to serve"
    )
    w.add_argument(
        "--queues",
        type=_queues,
        default=(),
        metavar="A,B",
        help="queues to consume (default: every queue of the registry's actors)",
    )
    w.add_argument(
        "--max-concurrency",
        type=_positive_int,
        default=_WORKER.max_concurrency,
        metavar="N",
        help="jobs run at once by this worker (default: 64 when every actor is async, else 10)",
    )
    w.add_argument(
        "--poll-interval",
        type=_positive_seconds,
        default=_WORKER.poll_interval,
        metavar="S",
        help="seconds between claims when idle (LISTEN/NOTIFY wakes it sooner on Postgres)",
    )
    w.add_argument(
        "--worker-group",
        default=_WORKER.worker_group,
        metavar="G",
        help="group name for logs and dashboards (logged as `group` in worker-started)",
    )
    w.add_argument(
        "--worker-label",
        default=None,
        metavar="L",
        help="label shown in `taskq workers` (default: none; a workgroup gives its name)",
    )
    w.add_argument(
        "--workgroup-instance",
        type=_uuid,
        default=None,
        metavar="UUID",
        help="set by a workgroup supervisor: the worker exits with it (default: none)",
    )
    health = w.add_mutually_exclusive_group()
    health.add_argument(
        "--health-port",
        type=_port,
        default=None,
        metavar="N",
        help="serve /live /ready /metrics on TCP port N, 0 picks one (default: off)",
    )
    health.add_argument(
        "--health-socket-path",
        default=None,
        metavar="P",
        help="serve /live /ready /metrics on this Unix socket (default: off)",
    )
    w.add_argument(
        "--health-host",
        default=_WORKER.health_host,
        metavar="ADDR",
        help="interface --health-port binds to",
    )
    w.add_argument(
        "--heartbeat-interval",
        type=_positive_seconds,
        default=_WORKER.heartbeat_interval,
        metavar="S",
        help="seconds between heartbeats (each extends every lease); shorter than --lease",
    )
    w.add_argument(
        "--lease",
        type=_positive_seconds,
        default=_WORKER.lease,
        metavar="S",
        help="seconds a claimed job stays ours without a heartbeat",
    )
    w.add_argument(
        "--shutdown-grace",
        type=_seconds,
        default=_WORKER.shutdown_grace,
        metavar="S",
        help="seconds running jobs get to finish after SIGTERM",
    )
    w.add_argument(
        "--force-update-actor-config",
        action="store_true",
        help="start even if the stored actor options differ from the registry's, and "
        "overwrite them",
    )
    w.add_argument(
        "--prefetch",
        type=_prefetch,
        default=_WORKER.prefetch,
        metavar="N|auto",
        help="claimed jobs that may wait beyond the free consumers "
        "('auto': up to one per consumer while jobs take under 5 ms)",
    )
    w.add_argument(
        "--middleware",
        action="append",
        default=[],
        metavar="MODULE:ATTR",
        help="worker middleware, repeatable (default: none, plus TASKQ_WORKER_MIDDLEWARE)",
    )
    w.add_argument(
        "--cpu-workers",
        type=_positive_int,
        default=None,
        metavar="N",
        help="processes in the CPU pool for cpu_bound actors (default: cores)",
    )
    w.add_argument(
        "--cpu-max-tasks-per-child",
        type=_positive_int,
        default=_WORKER.cpu_max_tasks_per_child,
        metavar="N",
        help="a CPU pool process is replaced after N jobs",
    )
    w.add_argument(
        "--cpu-max-memory-per-child",
        type=_positive_int,
        default=None,
        metavar="MIB",
        help="a CPU pool process is replaced after a job that left it above this RSS "
        "(default: off)",
    )

    wg = sub.add_parser("workgroup", help="supervise worker processes from a TOML file")
    wg_sub = wg.add_subparsers(
        dest="workgroup_command", metavar="start|validate", parser_class=_Parser
    )
    wg_sub.required = True
    wg_sub.add_parser("start", help="run the supervisor").add_argument("file")
    wg_sub.add_parser("validate", help="check the file and print a summary").add_argument("file")

    e = sub.add_parser("enqueue", help="enqueue one job; prints its id")
    e.add_argument("actor", help="actor name (its module need not be importable here)")
    e.add_argument(
        "--args",
        type=_json_arg(list, "--args"),
        default=[],
        metavar="JSON_ARRAY",
        help="positional arguments (default: none)",
    )
    e.add_argument(
        "--kwargs",
        type=_json_arg(dict, "--kwargs"),
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
        type=_seconds,
        default=None,
        metavar="SECONDS",
        help="run it this many seconds from now (default: now)",
    )
    e.add_argument(
        "--priority", type=_int, default=None, metavar="N", help="lower runs first (default 0)"
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
        type=_json_arg(dict, "--meta"),
        default=None,
        metavar="JSON_OBJECT",
        help="free-form metadata kept with the job (default: none)",
    )
    e.add_argument(
        "--tag", action="append", default=[], metavar="T", dest="tags", help="a tag, repeatable"
    )

    jobs = sub.add_parser("jobs", help="inspect and act on jobs")
    jobs_sub = jobs.add_subparsers(
        dest="jobs_command", metavar="stats|list|show|retry|cancel", parser_class=_Parser
    )
    jobs_sub.required = True
    stats = jobs_sub.add_parser("stats", help="count jobs per state")
    stats.add_argument("--json", action="store_true", help="one JSON object, state -> count")
    lst = jobs_sub.add_parser("list", help="list jobs, newest first")
    lst.add_argument("--state", choices=ALL_STATES, help="only this state (default: all)")
    lst.add_argument("--queue", help="only this queue (default: all)")
    lst.add_argument("--tag", help="only jobs carrying this tag (default: any)")
    lst.add_argument("--limit", type=_positive_int, default=50, help="at most this many jobs")
    lst.add_argument("--json", action="store_true", help="a JSON array of job objects")
    show = jobs_sub.add_parser("show", help="show one job")
    show.add_argument("id", help="the job's id")
    show.add_argument("--json", action="store_true", help="one JSON job object")
    retry = jobs_sub.add_parser("retry", help="re-queue dead or cancelled jobs")
    which = retry.add_mutually_exclusive_group(required=True)
    which.add_argument("ids", nargs="*", default=[], metavar="ID", help="the jobs to re-queue")
    which.add_argument("--all-dead", action="store_true", help="re-queue every dead job")
    cancel = jobs_sub.add_parser(
        "cancel",
        help="cancel queued or running jobs (exit 3 if one had already finished)",
    )
    cancel.add_argument("ids", nargs="+", metavar="ID", help="the jobs to cancel")

    queues = sub.add_parser(
        "queues", help="list queues (depth, oldest wait, pause, limits); pause, resume, limit"
    )
    queues.add_argument("--json", action="store_true", help="a JSON array of queue objects")
    queues_sub = queues.add_subparsers(
        dest="queues_command", metavar="pause|resume|limit", parser_class=_Parser
    )
    queues_sub.add_parser(
        "pause", help="stop every worker claiming from a queue (running jobs finish)"
    ).add_argument("name")
    queues_sub.add_parser("resume", help="let workers claim from a paused queue").add_argument(
        "name"
    )
    _limit_options(
        queues_sub.add_parser(
            "limit", help="set a queue's fleet-wide limits (the ones not given are kept)"
        ),
        "queue",
    )
    actors = sub.add_parser(
        "actors", help="list the actors workers recorded, with their limits; limit one"
    )
    actors.add_argument("--json", action="store_true", help="a JSON array of actor objects")
    actors_sub = actors.add_subparsers(dest="actors_command", metavar="limit", parser_class=_Parser)
    _limit_options(
        actors_sub.add_parser(
            "limit",
            help="set an actor's fleet-wide limits, on every queue (the ones not given are kept)",
        ),
        "actor",
    )

    workers = sub.add_parser("workers", help="list registered worker processes")
    workers.add_argument("--json", action="store_true", help="a JSON array of worker rows")
    workers.add_argument(
        "--stale-after",
        type=_positive_seconds,
        default=30.0,
        metavar="S",
        help="a row not seen for longer is shown `stale`: its process is gone or cut off "
        "(a live worker touches it every --heartbeat-interval, 2 s by default)",
    )

    schedules = sub.add_parser(
        "schedules", help="list periodic schedules (as workers recorded them) and next runs"
    )
    schedules.add_argument("--json", action="store_true", help="a JSON array of schedules")

    sub.add_parser("demo", help="a self-contained tour on SQLite")

    dash = sub.add_parser("dashboard", help="serve the web dashboard (the taskq[web] extra)")
    dash.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    dash.add_argument("--port", type=int, default=8760, help="port (default 8760)")
    dash.add_argument(
        "--allow-actions",
        action="store_true",
        help="enable retry/discard/cancel and queue controls (needs TASKQ_DASHBOARD_TOKEN)",
    )
    return parser


def _client(ns: argparse.Namespace) -> AsyncClient:
    return AsyncClient(ns.dsn, schema=ns.schema)


def _with_client(ns: argparse.Namespace, action: Callable[[AsyncClient], Awaitable[T]]) -> T:
    async def go() -> T:
        async with _client(ns) as client:
            return await action(client)

    return asyncio.run(go())


def _print_json(value: Any) -> None:
    print(json.dumps(value, indent=2, default=str))


def _job_lines(job: Job) -> list[str]:
    d = job.to_dict()
    width = max(len(k) for k in d)
    return [
        f"{k:<{width}}  {json.dumps(v) if isinstance(v, list | dict) else v}" for k, v in d.items()
    ]


def cmd_migrate(ns: argparse.Namespace) -> int:
    async def go(client: AsyncClient) -> list[str]:
        return await client.store.migrate()

    applied = _with_client(ns, go)
    print(f"applied migrations: {', '.join(applied)}" if applied else "schema is up to date")
    return EXIT_OK


def cmd_worker(ns: argparse.Namespace) -> int:
    from .worker.config import WorkerConfig
    from .worker.main import run

    config = WorkerConfig(
        actors=ns.actors,
        queues=ns.queues,
        max_concurrency=ns.max_concurrency,
        poll_interval=ns.poll_interval,
        worker_group=ns.worker_group,
        worker_label=ns.worker_label,
        workgroup_instance=ns.workgroup_instance,
        health_port=ns.health_port,
        health_socket_path=ns.health_socket_path,
        heartbeat_interval=ns.heartbeat_interval,
        lease=ns.lease,
        shutdown_grace=ns.shutdown_grace,
        force_update_actor_config=ns.force_update_actor_config,
        dsn=ns.dsn,
        schema=ns.schema,
        cpu_workers=ns.cpu_workers,
        cpu_max_tasks_per_child=ns.cpu_max_tasks_per_child,
        cpu_max_memory_per_child_mib=ns.cpu_max_memory_per_child,
        health_host=ns.health_host,
        prefetch=ns.prefetch,
        middleware=tuple(ns.middleware),
    )
    if config.heartbeat_interval >= config.lease:
        raise ConfigError("--heartbeat-interval must be shorter than --lease")
    return run(config)


def cmd_workgroup(ns: argparse.Namespace) -> int:
    from . import workgroup

    if ns.dsn or ns.schema:
        raise ConfigError(
            "workgroup takes its store from the TOML file or TASKQ_DSN, not --dsn/--schema"
        )
    if ns.workgroup_command == "validate":
        return workgroup.validate_main(ns.file)
    return workgroup.start_main(ns.file)


def cmd_enqueue(ns: argparse.Namespace) -> int:
    job_id = _with_client(
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


def cmd_jobs(ns: argparse.Namespace) -> int:
    sub = ns.jobs_command
    if sub == "stats":
        counts = _with_client(ns, lambda c: c.stats())
        if ns.json:
            _print_json(counts)
        else:
            for state in ALL_STATES:
                print(f"{state:<10} {counts.get(state, 0):>10}")
        return EXIT_OK
    if sub == "list":
        jobs = _with_client(
            ns, lambda c: c.list(state=ns.state, queue=ns.queue, tag=ns.tag, limit=ns.limit)
        )
        if ns.json:
            _print_json([j.to_dict() for j in jobs])
            return EXIT_OK
        print(
            f"{'id':<36}  {'actor':<20} {'queue':<10} {'state':<10} {'att':>3} {'crash':>5}  "
            "dead_reason"
        )
        for j in jobs:
            print(
                f"{j.id!s:<36}  {j.actor[:20]:<20} {j.queue[:10]:<10} {j.state:<10} "
                f"{j.attempts:>3} {j.crash_count:>5}  {j.dead_reason or ''}"
            )
        return EXIT_OK
    if sub == "show":
        job = _with_client(ns, lambda c: c.get(ns.id))
        if ns.json:
            _print_json(job.to_dict())
        else:
            print("\n".join(_job_lines(job)))
        return EXIT_OK
    if sub == "retry":
        if ns.all_dead:
            count = _with_client(ns, lambda c: c.retry_all_dead())
            print(f"re-queued {count} dead job(s)")
            return EXIT_OK
        return _each_id(ns, "retry", "re-queued")
    return _cancel_ids(ns)


_CANCEL_SAID = {
    CancelResult.CANCELLED: "cancelled {}",
    CancelResult.REQUESTED: "cancel requested {} (running: its worker stops it)",
    CancelResult.ALREADY_REQUESTED: "cancel already requested {} (running: its worker stops it)",
}


def _cancel_ids(ns: argparse.Namespace) -> int:
    """Exit 0: every job cancelled or being stopped; 3: some had already finished (nothing
    changed for them); 1: some id is unknown (or another error)."""
    ids = [parse_job_id(i) for i in ns.ids]

    async def go(client: AsyncClient) -> int:
        errors = finished = 0
        for job_id in ids:
            try:
                result = await client.cancel(job_id, by=f"cli:{who()}")
                print(_CANCEL_SAID[result].format(job_id))
            except InvalidJobState as exc:
                print(f"taskq: {exc}", file=sys.stderr)
                finished += 1
            except TaskqError as exc:
                print(f"taskq: {exc}", file=sys.stderr)
                errors += 1
        return EXIT_ERROR if errors else EXIT_FINISHED if finished else EXIT_OK

    return _with_client(ns, go)


def _each_id(ns: argparse.Namespace, method: str, done: str) -> int:
    ids = [parse_job_id(i) for i in ns.ids]  # all ids valid before anything is changed

    async def go(client: AsyncClient) -> int:
        failures = 0
        for job_id in ids:
            try:
                await getattr(client, method)(job_id)
                print(f"{done} {job_id}")
            except TaskqError as exc:
                print(f"taskq: {exc}", file=sys.stderr)
                failures += 1
        return failures

    return EXIT_ERROR if _with_client(ns, go) else EXIT_OK


def cmd_queues(ns: argparse.Namespace) -> int:
    sub = ns.queues_command
    if sub == "pause":
        _with_client(ns, lambda c: c.pause_queue(ns.name))
        print(f"paused queue {ns.name}")
        return EXIT_OK
    if sub == "resume":
        _with_client(ns, lambda c: c.resume_queue(ns.name))
        print(f"resumed queue {ns.name}")
        return EXIT_OK
    if sub == "limit":
        return _set_limits(ns, QUEUE)
    rows = _with_client(ns, lambda c: c.queues())
    if ns.json:
        _print_json([r.to_dict() for r in rows])
        return EXIT_OK
    _print_queues(rows)
    return EXIT_OK


def _set_limits(ns: argparse.Namespace, kind: str) -> int:
    if ns.clear and (ns.concurrency is not None or ns.rate is not None):
        raise ConfigError("give --clear alone, or --concurrency and/or --rate")
    if not ns.clear and ns.concurrency is None and ns.rate is None:
        raise ConfigError("give --concurrency N, --rate N/PERIOD or --clear")
    setter = "set_queue_limits" if kind == QUEUE else "set_actor_limits"

    async def go(client: AsyncClient) -> Limits:
        new = Limits()
        if not ns.clear:
            old = (await client.limits()).get((kind, ns.name), Limits())
            new = Limits(
                concurrency=old.concurrency if ns.concurrency is None else ns.concurrency,
                rate=old.rate if ns.rate is None else ns.rate,
            )
        await getattr(client, setter)(ns.name, new.concurrency, new.rate)
        return new

    new = _with_client(ns, go)
    if not new:
        print(f"{kind} {ns.name}: no limits")
    else:
        print(
            f"{kind} {ns.name}: concurrency {new.concurrency or 'unlimited'}, "
            f"rate {new.rate or 'unlimited'}"
        )
    return EXIT_OK


def cmd_actors(ns: argparse.Namespace) -> int:
    if ns.actors_command == "limit":
        return _set_limits(ns, ACTOR)

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

    rows = _with_client(ns, go)
    if ns.json:
        _print_json(rows)
        return EXIT_OK
    print(f"{'actor':<30} {'queue':<20} {'concurrency':>11}  rate")
    for r in rows:
        print(
            f"{r['name'][:30]:<30} {(r['queue'] or '-')[:20]:<20} "
            f"{r['concurrency_limit'] or '-':>11}  {r['rate_limit'] or '-'}"
        )
    return EXIT_OK


def _print_queues(rows: list[QueueInfo]) -> None:
    print(
        f"{'queue':<20} {'queued':>8} {'running':>8} {'succeeded':>10} {'dead':>6} "
        f"{'cancelled':>9} {'oldest_s':>9}  {'paused':<6} {'concurrency':>11}  rate"
    )
    for r in rows:
        d = r.depth
        oldest = "-" if r.oldest_age_s is None else f"{r.oldest_age_s:.1f}"
        print(
            f"{r.name[:20]:<20} {d['queued']:>8} {d['running']:>8} {d['succeeded']:>10} "
            f"{d['dead']:>6} {d['cancelled']:>9} {oldest:>9}  {'yes' if r.paused else 'no':<6} "
            f"{r.limits.concurrency or '-':>11}  {r.limits.rate or '-'}"
        )


def cmd_workers(ns: argparse.Namespace) -> int:
    async def rows_and_now(client: AsyncClient) -> tuple[list[Any], Any]:
        return await client.store.list_workers(), await client.store.now()

    rows, now = _with_client(ns, rows_and_now)

    def status(row: Any) -> tuple[str, float | None]:
        if row.last_seen_at is None:
            return "stale", None
        ago = max((now - row.last_seen_at).total_seconds(), 0.0)
        return ("alive" if ago <= ns.stale_after else "stale"), round(ago, 1)

    if ns.json:
        out = []
        for r in rows:
            state, ago = status(r)
            out.append({**r.to_dict(), "status": state, "last_seen_seconds_ago": ago})
        _print_json(out)
        return EXIT_OK
    print(
        f"{'id':<36}  {'status':<6} {'label':<16} {'pid':>7} {'hostname':<20} "
        f"{'last_seen':>10}  queues"
    )
    for r in rows:
        state, ago = status(r)
        seen = "-" if ago is None else f"{ago:.0f}s ago"
        print(
            f"{r.id!s:<36}  {state:<6} {(r.worker_label or '-')[:16]:<16} {r.pid:>7} "
            f"{r.hostname[:20]:<20} {seen:>10}  {','.join(r.queues)}"
        )
    return EXIT_OK


def cmd_schedules(ns: argparse.Namespace) -> int:
    from .periodic import listing

    async def go(client: AsyncClient) -> list[dict[str, Any]]:
        infos = await client.store.list_schedules()
        now = await client.store.now()
        return [listing(info, now) for info in infos]

    rows = _with_client(ns, go)
    if ns.json:
        _print_json(rows)
        return EXIT_OK
    if not rows:
        print("no schedules recorded (a worker records its registry's schedules when it starts)")
        return EXIT_OK
    print(f"{'name':<24} {'cron':<18} {'timezone':<16} {'next_run':<26} {'last_tick':<26} missed")
    for r in rows:
        print(
            f"{r['name'][:24]:<24} {r['cron'][:18]:<18} {r['timezone'][:16]:<16} "
            f"{r['next_run'] or '-':<26} {r['last_tick'] or '-':<26} {r['missed']}"
        )
    return EXIT_OK


def cmd_demo(ns: argparse.Namespace) -> int:
    from .demo import run_demo

    return run_demo()


def cmd_dashboard(ns: argparse.Namespace) -> int:
    try:
        from .web.serve import serve
    except ImportError as exc:
        raise TaskqError(
            f"the dashboard needs the web extra ({exc.name} is missing): pip install 'taskq[web]'"
        ) from None
    if not 0 <= ns.port <= 65535:
        raise TaskqError(f"--port {ns.port} is not a port number")
    return serve(
        host=ns.host, port=ns.port, allow_actions=ns.allow_actions, dsn=ns.dsn, schema=ns.schema
    )


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "migrate": cmd_migrate,
    "worker": cmd_worker,
    "workgroup": cmd_workgroup,
    "enqueue": cmd_enqueue,
    "jobs": cmd_jobs,
    "queues": cmd_queues,
    "actors": cmd_actors,
    "workers": cmd_workers,
    "schedules": cmd_schedules,
    "demo": cmd_demo,
    "dashboard": cmd_dashboard,
}


def main(argv: Sequence[str] | None = None) -> int:
    try:
        code = _main(argv)
        sys.stdout.flush()  # here, not at exit: a closed pipe is handled like the others
    except BrokenPipeError:
        # `taskq jobs list | head -1`: the reader has all it wanted. Exit quietly with the
        # status a shell gives a process SIGPIPE ended, and point stdout at /dev/null so
        # the interpreter's final flush does not fail again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    return code


def _main(argv: Sequence[str] | None) -> int:
    ns = build_parser().parse_args(argv)
    if ns.command in ("worker", "workgroup") and "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # `--actors myapp.tasks:registry` from the app's directory
    try:
        logs.configure()  # a bad TASKQ_LOG_LEVEL / TASKQ_LOG_FORMAT is one `taskq:` line
        return COMMANDS[ns.command](ns)
    except TaskqError as exc:
        print(f"taskq: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("taskq: interrupted", file=sys.stderr)
        return 130
