"""Traps a new user falls into with the `taskq` command and the client: each one is a
clear line and a non-zero exit (or a clear exception), never a traceback. Real
subprocesses against both stores."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

import taskq
from taskq.cli import build_parser
from taskq.jobs import ActorConfig
from taskq.store import create_store
from tests.acceptance.test_cli import assert_one_line_error
from tests.acceptance.test_cli import taskq as run
from tests.conftest import StoreTarget
from tests.support.workgroup_harness import REPO


@pytest.fixture
def migrated(target: StoreTarget) -> StoreTarget:
    run(target, "migrate")
    return target


def _stats(target: StoreTarget) -> dict[str, int]:
    with taskq.Client(target.dsn, schema=target.schema) as client:
        return client.stats()


async def _record_actor(target: StoreTarget, name: str, queue: str) -> None:
    store = create_store(target.dsn, target.schema)
    await store.open()
    try:
        config = ActorConfig(
            name=name,
            queue=queue,
            max_attempts=5,
            max_crashes=2,
            idempotent=True,
            cpu_bound=False,
            timeout=None,
        )
        await store.sync_actor_configs([config], force=True)
    finally:
        await store.close()


@pytest.mark.parametrize("json_flag", [(), ("--json",)])
def test_jobs_list_into_a_pipe_closed_early_is_quiet(
    migrated: StoreTarget, json_flag: tuple[str, ...]
) -> None:
    with taskq.Client(migrated.dsn, schema=migrated.schema) as client:
        client.enqueue_many("filler", [((i,), {}) for i in range(3000)], queue="q")
    script = (
        f"{sys.executable} -m taskq jobs list --limit 3000 {' '.join(json_flag)} | head -1; "
        'echo "taskq_status=${PIPESTATUS[0]}" >&2'
    )
    done = subprocess.run(
        ["bash", "-c", script],
        env=migrated.env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert len(done.stdout.splitlines()) == 1
    status_line = done.stderr.strip().splitlines()
    assert status_line == ["taskq_status=141"], done.stderr  # nothing else: no traceback


def test_a_delay_past_the_year_9999_is_one_line_and_writes_nothing(migrated: StoreTarget) -> None:
    proc = run(migrated, "enqueue", "x", "--queue", "q", "--delay", "1e12", check=False)
    assert_one_line_error(proc, "delay of 1e+12 seconds is too far in the future")
    assert sum(_stats(migrated).values()) == 0
    with taskq.Client(migrated.dsn, schema=migrated.schema) as client:
        with pytest.raises(taskq.ConfigError, match="too far in the future"):
            client.enqueue_with("x", queue="q", delay=1e12)


def test_version(target: StoreTarget) -> None:
    proc = run(target, "--version")
    assert proc.stdout.strip() == f"taskq {taskq.__version__}"


async def test_enqueue_by_name_of_an_actor_the_store_never_saw_is_refused(
    migrated: StoreTarget,
) -> None:
    proc = run(migrated, "enqueue", "resize", "--args", '["a.png"]', check=False)
    assert_one_line_error(proc, "unknown actor 'resize'", "actor object", "run a worker", "--queue")
    assert proc.returncode == 1
    with taskq.Client(migrated.dsn, schema=migrated.schema) as client:
        with pytest.raises(taskq.ActorNotFound, match=r"unknown actor 'resize'.*queue="):
            client.enqueue("resize", "a.png")
    async with taskq.AsyncClient(migrated.dsn, schema=migrated.schema) as client:
        with pytest.raises(taskq.ActorNotFound, match="unknown actor 'resize'"):
            await client.enqueue("resize", "a.png")
    assert sum(_stats(migrated).values()) == 0  # nothing written

    # each fix works: a queue given ...
    given = run(migrated, "enqueue", "resize", "--queue", "images").stdout.strip()
    # ... or a worker having recorded the actor (its queue is then used)
    await _record_actor(migrated, "resize", "thumbs")
    recorded = run(migrated, "enqueue", "resize").stdout.strip()
    with taskq.Client(migrated.dsn, schema=migrated.schema) as client:
        assert client.get(given).queue == "images"
        assert client.get(recorded).queue == "thumbs"
        assert client.get(client.enqueue("resize", "b.png")).queue == "thumbs"


def _options(parser: argparse.ArgumentParser, path: str = "taskq"):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _options(sub, f"{path} {name}")
        elif action.option_strings and action.dest not in ("help", "version"):
            yield path, action, parser


def test_every_option_has_help_and_says_its_default() -> None:
    missing = []
    for path, action, parser in _options(build_parser()):
        flag = action.option_strings[-1]
        if not action.help:
            missing.append(f"{path} {flag}: no help")
            continue
        if action.required or isinstance(action, argparse._StoreTrueAction):
            continue  # a switch is off unless given; a required option has no default
        text = parser.formatter_class(path)._get_help_string(action) or ""
        if "default" not in text:
            missing.append(f"{path} {flag}: no default in {text!r}")
    assert not missing, "\n".join(missing)
