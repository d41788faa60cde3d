"""``taskq demo``: supervision, shown to a new user in about half a minute.

On a temporary SQLite file, with no set-up: a workgroup of two ``taskq worker``
processes runs a few hundred jobs of the actors in ``taskq.demo_actors`` — ordinary
work, jobs that fail and retry, a job that kills its own worker process, a CPU job that
segfaults its pool process, a poison job, and a non-idempotent job. A live progress line
shows the counts with the supervision events as they happen; a closing table says what
succeeded, what was retried, what is dead and why, and what was restarted.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shlex
import shutil
import sys
import tempfile
import time
from collections import Counter
from typing import Any

from . import demo_actors
from .client import AsyncClient
from .jobs import Job
from .workgroup import SupervisionEvent, Supervisor, parse_config

#: (actor, how many jobs)
PLAN: tuple[tuple[str, int], ...] = (
    ("thumbnail", 120),
    ("fetch_feed", 80),
    ("flaky_extension", 100),
    ("render", 40),
    ("charge_card", 20),
    ("poison_pill", 1),
)
DEADLINE = float(os.environ.get("TASKQ_DEMO_DEADLINE", "90"))


class _Screen:
    """The live progress line (rewritten in place on a TTY) and the event lines above it."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.tty = sys.stdout.isatty()
        self._last_plain = 0.0
        self._line = ""

    def event(self, text: str) -> None:
        if self.tty:
            sys.stdout.write("\r\x1b[2K")
        print(f"  > {text}")
        if self.tty and self._line:
            sys.stdout.write(self._line)
        sys.stdout.flush()

    def progress(self, counts: dict[str, int], *, force: bool = False) -> None:
        done = counts["succeeded"] + counts["dead"] + counts["cancelled"]
        width = 30
        filled = int(width * done / self.total) if self.total else width
        self._line = (
            f"[{'#' * filled}{'.' * (width - filled)}] {done:>3}/{self.total}  "
            f"succeeded {counts['succeeded']:>3}  dead {counts['dead']:>2}  "
            f"running {counts['running']:>2}  queued {counts['queued']:>3}"
        )
        if self.tty:
            sys.stdout.write("\r\x1b[2K" + self._line)
            sys.stdout.flush()
        elif force or time.monotonic() - self._last_plain > 2.0:
            self._last_plain = time.monotonic()
            print(self._line, flush=True)

    def finish(self) -> None:
        if self.tty:
            sys.stdout.write("\n")
            sys.stdout.flush()


def _describe(event: SupervisionEvent, stopping: bool) -> str | None:
    f = event.fields
    if event.kind == "child_exited" and stopping:
        return f"worker {event.worker!r} (pid {f.get('pid')}) stopped: {f.get('exit_cause')}"
    if event.kind == "child_started":
        return f"worker {event.worker!r} started (pid {f.get('pid')})"
    if event.kind == "child_exited":
        return f"worker {event.worker!r} (pid {f.get('pid')}) died: {f.get('exit_cause')}"
    if event.kind == "jobs_rescued":
        outcomes = Counter(
            state if state == "queued" else f"dead/{reason}"
            for _id, _actor, state, reason in f.get("jobs", [])
        )
        detail = ", ".join(f"{n} {what}" for what, n in sorted(outcomes.items()))
        return f"rescued {f.get('count')} job(s) of worker {event.worker!r} at once: {detail}"
    if event.kind == "restart_scheduled":
        return (
            f"restart of {event.worker!r} scheduled in {float(f.get('delay', 0)):.2f}s "
            f"(reason {f.get('reason')})"
        )
    if event.kind == "latched":
        return f"worker {event.worker!r} crash-looped: given up on (latched)"
    if event.kind == "unhealthy":
        return f"worker {event.worker!r} unhealthy: {f.get('problem')}"
    return None


def _summary(jobs: list[Job], events: list[SupervisionEvent]) -> list[str]:
    succeeded = [j for j in jobs if j.state == "succeeded"]
    dead = Counter(j.dead_reason for j in jobs if j.state == "dead")
    retried = sum(1 for j in succeeded if j.attempts > 1 and j.crash_count == 0)
    rerun = sum(1 for j in succeeded if j.crash_count > 0)
    restarts = sum(1 for e in events if e.kind == "restart_scheduled")
    rescued = sum(int(e.fields.get("count", 0)) for e in events if e.kind == "jobs_rescued")
    crashes = sum(j.crash_count for j in jobs)
    stuck = sum(1 for j in jobs if j.state in ("queued", "running"))
    rows = [
        ("jobs", len(jobs)),
        ("succeeded", len(succeeded)),
        ("  of which after a retry (exception)", retried),
        ("  of which re-run after their runner died", rerun),
        *((f"dead/{reason}", n) for reason, n in sorted(dead.items())),
        ("worker processes restarted by the workgroup", restarts),
        ("jobs rescued at once from dead workers", rescued),
        ("runner deaths charged to jobs (crash_count)", crashes),
        ("left queued or running (must be 0)", stuck),
    ]
    width = max(len(name) for name, _ in rows)
    lines = ["", "Summary", "-" * (width + 8)]
    lines += [f"{name:<{width}}  {value:>6}" for name, value in rows]
    examples = {}
    for j in jobs:
        if j.state == "dead" and j.dead_reason not in examples:
            examples[j.dead_reason] = j
    if examples:
        lines += ["", "Why they are dead (one example each):"]
        for reason, j in sorted(examples.items()):
            error = (j.last_error or "-").strip().splitlines()[0]
            lines.append(f"  {reason:<9} {j.actor} {j.id}: {error[:110]}")
    return lines


def taskq_command() -> tuple[str, str | None]:
    """How a new shell runs this taskq: ``taskq`` when the ``taskq`` on the PATH is this
    installation's, else the full path of this installation's ``taskq`` script (or
    ``python -m taskq``); and, then, how to put it on the PATH."""
    bin_dir = os.path.dirname(os.path.abspath(sys.executable))  # a venv's bin/ (no realpath)
    script = os.path.join(bin_dir, "taskq")
    found = shutil.which("taskq")
    if found is not None and os.path.dirname(os.path.abspath(found)) == bin_dir:
        return "taskq", None
    if not os.access(script, os.X_OK):
        return f"{shlex.quote(sys.executable)} -m taskq", None
    activate = os.path.join(bin_dir, "activate")
    if os.path.exists(activate):
        hint = f"(`. {shlex.quote(activate)}` puts `taskq` on this shell's PATH)"
        return shlex.quote(script), hint
    return shlex.quote(script), None


def _follow_up(dsn: str, directory: str, jobs: list[Any]) -> list[str]:
    """Commands that work after the demo, as printed, in a new shell: its store is kept
    for them, and ``taskq`` is named so that the shell finds it (``taskq_command``)."""
    command, activate = taskq_command()
    taskq = f"{command} --dsn {shlex.quote(dsn)}"
    dead = next((j for j in jobs if j.state == "dead"), None)
    lines = ["", f"The demo's store is kept in {directory}; look closer with:"]
    if dead is not None:
        lines.append(f"  {taskq} jobs show {dead.id}")
    lines += [
        f"  {taskq} jobs list --state dead",
        f"  {taskq} jobs stats",
        f"and remove it with: rm -r {shlex.quote(directory)}",
    ]
    if activate is not None:
        lines.insert(-1, activate)
    return lines


def _config(directory: str) -> Any:
    doc = {
        "actors": "taskq.demo_actors:registry",
        "supervisor": {"shutdown_grace": 20.0, "backoff_initial": 0.2, "backoff_max": 2.0},
        "workers": [
            {"name": "alpha", "queues": ["demo"], "max_concurrency": 6, "poll_interval": 0.5},
            {"name": "beta", "queues": ["demo"], "max_concurrency": 6, "poll_interval": 0.5},
        ],
    }
    return parse_config(doc, os.path.join(directory, "demo-workgroup.toml"))


async def _demo(directory: str) -> int:
    dsn = f"sqlite:///{os.path.join(directory, 'demo.sqlite3')}"
    total = sum(n for _, n in PLAN)
    screen = _Screen(total)
    print(f"taskq demo: {total} jobs, 2 supervised worker processes, store {dsn}\n")
    async with AsyncClient(dsn) as client:
        await client.store.migrate()
        for name, count in PLAN:
            actor = demo_actors.registry.get(name)
            await client.enqueue_many(actor, [((n,), {}) for n in range(count)])
        events: list[SupervisionEvent] = []

        def on_event(event: SupervisionEvent) -> None:
            events.append(event)
            text = _describe(event, supervisor.stopping)
            if text:
                screen.event(text)

        env = dict(
            os.environ,
            TASKQ_DSN=dsn,
            TASKQ_DEMO_DIR=directory,
            TASKQ_LOG_FORMAT="json",
            TASKQ_LOG_LEVEL="WARNING",
        )
        env.pop("TASKQ_DSN_FILE", None)
        supervisor = Supervisor(_config(directory), env=env, on_event=on_event)
        run = asyncio.create_task(supervisor.run(), name="demo-workgroup")
        try:
            deadline = time.monotonic() + DEADLINE
            while time.monotonic() < deadline and not run.done():
                counts = await client.stats()
                screen.progress(counts)
                if counts["queued"] == 0 and counts["running"] == 0:
                    break
                await asyncio.sleep(0.2)
            screen.progress(await client.stats(), force=True)
            screen.finish()
        finally:
            supervisor.request_stop()
            await run
        jobs = await client.list(limit=10_000)
    for line in _summary(jobs, events) + _follow_up(dsn, directory, jobs):
        print(line)
    stuck = [j for j in jobs if j.state in ("queued", "running")]
    if stuck:
        print(
            f"\ntaskq demo: {len(stuck)} job(s) did not finish in {DEADLINE:.0f}s", file=sys.stderr
        )
        return 1
    print(
        "\nEvery job is accounted for: succeeded, or dead with a reason. Nothing lost, "
        "nothing silent."
    )
    return 0


def run_demo() -> int:
    directory = tempfile.mkdtemp(prefix="taskq-demo-")
    if not os.environ.get("TASKQ_DEMO_VERBOSE"):
        logging.getLogger("taskq").setLevel(logging.CRITICAL + 10)  # the demo prints its own lines
    return asyncio.run(_demo(directory))  # the directory is kept: the summary's commands use it
