"""The names of the workgroup documentation taskq follows work as documented aliases:
``TASKQ_PG_DSN``, ``TASKQ_SCHEMA_NAME``, ``TASKQ_PG_DSN_DIRECT``, and
``TASKQ_RELOAD_INTERVAL`` reloads credentials where SIGHUP cannot be sent. Real
``taskq`` processes, both stores."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import taskq
from tests.acceptance.test_cli import assert_one_line_error
from tests.acceptance.test_cli import taskq as run
from tests.support.helpers import wait_until
from tests.support.worker_harness import ROOT, WorkerProcess
from tests.support.workgroup_harness import write_config

pytestmark = pytest.mark.slow


def _aliased(target) -> dict[str, str]:
    env = dict(target.env)
    env["TASKQ_PG_DSN"] = env.pop("TASKQ_DSN")
    env["TASKQ_SCHEMA_NAME"] = env.pop("TASKQ_SCHEMA", target.schema)
    env.pop("TASKQ_DSN_FILE", None)
    return env


def test_the_aliases_reach_the_same_store(target, store) -> None:
    env = _aliased(target)
    job_id = run(None, "enqueue", "x", "--queue", "q", env=env).stdout.strip()
    with taskq.Client(target.dsn, schema=target.schema) as client:
        assert client.get(job_id).queue == "q"
    same = {**env, "TASKQ_DSN": env["TASKQ_PG_DSN"], "TASKQ_SCHEMA": env["TASKQ_SCHEMA_NAME"]}
    assert json.loads(run(None, "jobs", "stats", "--json", env=same).stdout)["queued"] == 1


@pytest.mark.parametrize(
    ("name", "alias", "value", "other"),
    [
        ("TASKQ_DSN", "TASKQ_PG_DSN", "postgresql://u:s3cret@db/a", "postgresql://u:s3cret@db/b"),
        ("TASKQ_SCHEMA", "TASKQ_SCHEMA_NAME", "one", "two"),
    ],
)
def test_a_name_and_its_alias_disagreeing_is_one_clear_error(
    sqlite_target, name: str, alias: str, value: str, other: str
) -> None:
    env = {**sqlite_target.env, name: value, alias: other}
    proc = run(None, "jobs", "stats", env=env, check=False)
    assert_one_line_error(proc, name, alias, "different values")
    assert proc.returncode == 1 and "s3cret" not in proc.stderr


def test_the_health_checks_use_the_direct_dsn(sqlite_target, tmp_path: Path) -> None:
    config = write_config(
        tmp_path / "wg.toml", '[[workers]]\nname = "api"\n[workers.health]\nenabled = true\n'
    )
    env = {**sqlite_target.env, "TASKQ_PG_DSN_DIRECT": "postgresql://nobody:pw@127.0.0.1:1/x"}
    proc = run(None, "workgroup", "start", str(config), env=env, check=False)
    assert proc.returncode == 1
    assert "health-check store" in proc.stderr and "127.0.0.1:1" in proc.stderr
    assert ":pw@" not in proc.stderr


def _equivalent(dsn: str) -> str:
    """The same store, spelled differently (so the file's content changes)."""
    if dsn.startswith("sqlite:///"):
        head, _, name = dsn.rpartition("/")
        return f"{head}/./{name}"
    return dsn + ("&" if "?" in dsn else "?") + "application_name=taskq-reloaded"


async def test_the_reload_interval_rereads_the_dsn_file(target, store, tmp_path: Path) -> None:
    dsn_file = tmp_path / "dsn"
    dsn_file.write_text(target.dsn)
    env = {**target.env, "TASKQ_DSN_FILE": str(dsn_file), "TASKQ_RELOAD_INTERVAL": "0.2"}
    env.pop("TASKQ_DSN", None)
    worker = WorkerProcess(target, env=env, log_path=tmp_path / "w.log")
    try:
        worker.wait_for_event("worker-started")
        assert not worker.events("credentials-reloaded")  # nothing changed: no reload
        dsn_file.write_text(_equivalent(target.dsn))
        wait_until(lambda: worker.events("credentials-reloaded"), what="the periodic reload")
    finally:
        worker.stop()


def test_a_bad_reload_interval_stops_the_worker_with_one_line(sqlite_target, tmp_path) -> None:
    dsn_file = tmp_path / "dsn"
    dsn_file.write_text(sqlite_target.dsn)
    env = {
        **sqlite_target.env,
        "PYTHONPATH": str(ROOT),
        "TASKQ_DSN_FILE": str(dsn_file),
        "TASKQ_RELOAD_INTERVAL": "soon",
        "TASKQ_LOG_FORMAT": "console",
    }
    proc = run(
        None, "worker", "--actors", "tests.support.worker_actors:registry", env=env, check=False
    )
    assert_one_line_error(proc, "TASKQ_RELOAD_INTERVAL='soon' is not a number of seconds")
