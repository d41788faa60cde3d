"""``taskq workgroup validate`` / ``start`` on good and bad files: real CLI processes.

Every bad config ends with exit 1 and exactly one ``taskq: ...`` line on stderr, never a
traceback; the seed's example validates.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support.workgroup_harness import REPO, run_cli, write_config

EXAMPLE = REPO / "examples" / "workgroup.toml"


def assert_one_error_line(result, *needles: str) -> None:
    assert result.returncode == 1, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("taskq: ")
    assert "Traceback" not in result.stderr + result.stdout
    for needle in needles:
        assert needle in lines[0], lines[0]


def test_the_seed_example_validates_and_prints_each_worker() -> None:
    result = run_cli("workgroup", "validate", str(EXAMPLE))
    assert result.returncode == 0, result.stderr
    assert "api: queues=default max_concurrency=8 poll_interval=0.5s" in result.stdout
    assert "batch: queues=email,report,cleanup max_concurrency=2 poll_interval=5s" in result.stdout
    assert "health every 15s, stale after 60s" in result.stdout
    assert "purge_tmp: 0 3 * * * (Europe/Paris) -> purge_tmp, missed=skip" in result.stdout
    assert result.stderr == ""  # every actor's queue is consumed; 100 s grace is enough


def test_validate_warns_but_passes(tmp_path: Path) -> None:
    config = write_config(
        tmp_path / "wg.toml",
        '[supervisor]\nshutdown_grace = 20.0\n[[workers]]\nname = "api"\nqueues = ["default"]\n',
    )
    result = run_cli("workgroup", "validate", str(config))
    assert result.returncode == 0, result.stderr
    warnings = result.stderr.strip().splitlines()
    assert any("shutdown_grace 20s is below a child's worst-case clean exit" in w for w in warnings)
    assert any('queue "email", which no [[workers]] entry consumes' in w for w in warnings)
    assert all(w.startswith("taskq: warning: ") for w in warnings)


def test_validate_shows_each_worker_s_pruning(tmp_path: Path) -> None:
    config = write_config(
        tmp_path / "wg.toml",
        '[defaults]\nkeep_succeeded = 3600\nkeep_dead = "forever"\n'
        '[[workers]]\nname = "api"\n[[workers]]\nname = "batch"\nprune_interval = 30\n',
    )
    result = run_cli("workgroup", "validate", str(config))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    pruning = [line.strip() for line in lines if line.strip().startswith("pruning:")]
    assert pruning == [
        "pruning: every 1 min; keeps succeeded jobs 1 h, dead forever, cancelled 7 days, "
        "silent worker rows 10 min",
        "pruning: every 30 s; keeps succeeded jobs 1 h, dead forever, cancelled 7 days, "
        "silent worker rows 10 min",
    ]


BAD = {
    "unknown_key": (
        '[[workers]]\nname = "api"\n[[workers]]\nname = "batch"\nqueuez = ["a"]\n',
        ('workers[1] ("batch"): unknown key "queuez"',),
    ),
    "wrong_type": (
        '[[workers]]\nname = "api"\nmax_concurrency = "8"\n',
        ('"max_concurrency" must be an integer',),
    ),
    "out_of_range": (
        '[supervisor]\nbackoff_factor = 0.5\n[[workers]]\nname = "api"\n',
        ('"backoff_factor" must be >= 1',),
    ),
    "duplicate_name": (
        '[[workers]]\nname = "api"\n[[workers]]\nname = "api"\n',
        ("duplicate name",),
    ),
    "long_name": (f'[[workers]]\nname = "{"n" * 44}"\n', ("at most 43",)),
    "bad_retention": (
        '[defaults]\nkeep_dead = "never"\n[[workers]]\nname = "api"\n',
        ('[defaults]: "keep_dead" must be a number of seconds or "forever"',),
    ),
    "toml_syntax": ('[[workers]\nname = "api"\n', ("invalid TOML", "line 2")),
}


@pytest.mark.parametrize("command", ["validate", "start"])
@pytest.mark.parametrize("case", sorted(BAD))
def test_each_bad_config_is_one_line_and_exit_1(tmp_path: Path, case: str, command: str) -> None:
    body, needles = BAD[case]
    config = write_config(tmp_path / "wg.toml", body)
    assert_one_error_line(run_cli("workgroup", command, str(config)), *needles)


def test_missing_actors_key(tmp_path: Path) -> None:
    config = tmp_path / "wg.toml"
    config.write_text('[[workers]]\nname = "api"\n')
    assert_one_error_line(
        run_cli("workgroup", "validate", str(config)), 'missing required key "actors"'
    )


@pytest.mark.parametrize(
    ("actors", "needle"),
    [
        ("tests.no_such_module:registry", "no such module"),
        ("tests.support.workgroup_actors:nothing", "has no attribute"),
        ("tests.support.workgroup_actors:nap", "not a taskq.Registry"),
    ],
)
def test_unimportable_actors(tmp_path: Path, actors: str, needle: str) -> None:
    config = write_config(tmp_path / "wg.toml", '[[workers]]\nname = "api"\n', actors=actors)
    assert_one_error_line(run_cli("workgroup", "validate", str(config)), actors, needle)


def test_actors_module_raising_on_import(tmp_path: Path) -> None:
    config = write_config(tmp_path / "wg.toml", '[[workers]]\nname = "api"\n')
    result = run_cli(
        "workgroup", "validate", str(config), env={**os.environ, "WG_TEST_BREAK_IMPORT": "1"}
    )
    assert_one_error_line(result, "broken on purpose")


@pytest.mark.parametrize("command", ["validate", "start"])
def test_missing_file(tmp_path: Path, command: str) -> None:
    assert_one_error_line(
        run_cli("workgroup", command, str(tmp_path / "absent.toml")), "absent.toml", "no such file"
    )


def test_start_exits_1_when_the_health_store_cannot_open(tmp_path: Path) -> None:
    config = write_config(
        tmp_path / "wg.toml",
        '[supervisor]\nhealth_pg_dsn = "postgresql://nobody@127.0.0.1:1/none"\n'
        '[[workers]]\nname = "api"\n[workers.health]\nenabled = true\n',
    )
    assert_one_error_line(
        run_cli("workgroup", "start", str(config)), "health-check store could not be opened"
    )


def test_validate_warns_about_a_startup_grace_too_short_to_register(tmp_path: Path) -> None:
    config = write_config(
        tmp_path / "wg.toml",
        '[[workers]]\nname = "api"\n[workers.health]\nenabled = true\nstartup_grace = 0.5\n',
    )
    result = run_cli("workgroup", "validate", str(config))
    assert result.returncode == 0, result.stderr
    assert 'workers[0] ("api"): health startup_grace 0.5s is shorter than' in result.stderr
