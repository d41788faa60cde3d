"""``taskq workgroup validate`` against the store (issue 20 item 2): real CLI processes on
real stores. What a child would refuse is an error before the deploy; what the children
will take on is listed; a consumed queue nothing uses is a warning; a store that cannot
be reached is said and skipped."""

from __future__ import annotations

from pathlib import Path

import pytest

from taskq.jobs import ActorConfig
from tests.support.workgroup_actors import registry
from tests.support.workgroup_harness import run_cli, write_config

pytestmark = pytest.mark.slow

WORKERS = """
[[workers]]
name = "api"
queues = ["default"]
force_update_actor_config = {force}

[[workers]]
name = "batch"
queues = [{queues}]
"""


def config(tmp_path: Path, *, force: bool = False, extra: str | None = None) -> Path:
    queues = ", ".join(
        f'"{q}"' for q in ["email", "report", "cleanup", *([extra] if extra else [])]
    )
    body = WORKERS.format(force=str(force).lower(), queues=queues)
    return write_config(tmp_path / "wg.toml", body)


async def record(store, **changes) -> None:
    """What workers of an earlier deploy recorded: this registry with ``nap`` changed."""
    configs = [a.config() for a in registry]
    nap = next(c for c in configs if c.name == "nap")
    fields = {k: getattr(nap, k) for k in ActorConfig.__dataclass_fields__}
    configs[configs.index(nap)] = ActorConfig(**{**fields, **changes})
    await store.sync_actor_configs(configs, force=True)


async def test_a_queue_change_a_child_would_refuse_is_an_error(target, store, tmp_path: Path):
    await record(store, queue="naps")
    result = run_cli("workgroup", "validate", str(config(tmp_path)), env=target.env)
    assert result.returncode == 1, result.stdout
    errors = [line for line in result.stderr.splitlines() if not line.startswith("taskq: warn")]
    (line,) = errors
    assert line.startswith(f"taskq: {tmp_path / 'wg.toml'}: actor 'nap' moved from queue 'naps'")
    assert "--force-update-actor-config" in line
    assert line.endswith("(these children would refuse to start: api, batch)")
    # api alone has force_update_actor_config: batch would refuse
    result = run_cli("workgroup", "validate", str(config(tmp_path, force=True)), env=target.env)
    assert result.returncode == 1
    assert result.stderr.rstrip().endswith("(these children would refuse to start: batch)")
    # both have it: they record it
    forced = write_config(
        tmp_path / "forced.toml",
        config(tmp_path, force=True).read_text().split("\n", 1)[1]
        + "force_update_actor_config = true\n",
    )
    result = run_cli("workgroup", "validate", str(forced), env=target.env)
    assert result.returncode == 0, result.stderr
    assert (
        "the children will record (force_update_actor_config): nap: queue 'naps' -> 'default'"
        in result.stdout
    )


async def test_changes_the_children_take_on_are_listed(target, store, tmp_path: Path):
    await record(store, max_attempts=5, timeout=9.0)
    result = run_cli("workgroup", "validate", str(config(tmp_path)), env=target.env)
    assert result.returncode == 0, result.stderr
    assert "store: " in result.stdout and "(checked)" in result.stdout
    assert (
        "the children will take on (actor-config-updated): nap: max_attempts 5 -> 3; "
        "nap: timeout 9.0 -> None"
    ) in result.stdout


async def test_a_consumed_queue_nothing_uses_warns_unless_the_store_knows_it(
    target, store, tmp_path: Path
):
    await record(store)
    result = run_cli("workgroup", "validate", str(config(tmp_path, extra="emial")), env=target.env)
    assert result.returncode == 0, result.stderr
    assert (
        'taskq: warning: workers[1] ("batch") consumes queue "emial", which no actor uses '
        "and no job is on (a typo?)"
    ) in result.stderr.splitlines()
    # an actor another deployment recorded uses it: no warning
    other = ActorConfig(
        "elsewhere.task", "emial", 3, 2, idempotent=False, cpu_bound=False, timeout=None
    )
    await store.sync_actor_configs([other], force=False)
    result = run_cli("workgroup", "validate", str(config(tmp_path, extra="emial")), env=target.env)
    assert result.returncode == 0 and "emial" not in result.stderr, result.stderr


def test_a_store_that_cannot_be_reached_is_said_and_skipped(tmp_path: Path):
    path = config(tmp_path, extra="emial")
    dsn = "postgresql://taskq:hunter2@127.0.0.1:1/nowhere"
    result = run_cli("workgroup", "validate", str(path), env={"TASKQ_DSN": dsn})
    assert result.returncode == 0, result.stderr
    (line,) = [x for x in result.stdout.splitlines() if x.strip().startswith("store: not")]
    assert "not checked (cannot connect to Postgres at postgresql://taskq:***@127.0.0.1:1" in line
    assert "hunter2" not in result.stdout + result.stderr
    assert "emial" in result.stderr  # the registry alone still decides the queues
    # a SQLite file that does not exist: said, and not created
    missing = tmp_path / "none.sqlite3"
    result = run_cli("workgroup", "validate", str(path), env={"TASKQ_DSN": f"sqlite:///{missing}"})
    assert result.returncode == 0, result.stderr
    assert f"store: sqlite:///{missing} does not exist yet: not checked" in result.stdout
    assert not missing.exists()


def test_a_store_not_migrated_is_said_and_skipped(pg_target, tmp_path: Path):
    result = run_cli("workgroup", "validate", str(config(tmp_path)), env=pg_target.env)
    assert result.returncode == 0, result.stderr
    assert "run `taskq migrate`" in result.stdout and "not checked" in result.stdout
