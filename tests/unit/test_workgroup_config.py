"""The workgroup TOML: defaults, inheritance, and an error naming the key for each mistake."""

from __future__ import annotations

import tomllib
import uuid
from pathlib import Path

import pytest

from taskq.cli import build_parser
from taskq.exceptions import InvalidWorkgroupConfig
from taskq.worker.config import WORKER_DEFAULTS
from taskq.workgroup.child import build_command
from taskq.workgroup.config import (
    CHILD_TEARDOWN_MARGIN,
    MAX_NAME_LENGTH,
    WORKER_SHUTDOWN_GRACE,
    health_socket_path,
    load_config,
    parse_config,
)
from taskq.workgroup.validate import warnings_for

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "workgroup.toml"


def minimal(**extra: object) -> dict:
    doc: dict = {"actors": "tests.support.workgroup_actors:registry", "workers": [{"name": "api"}]}
    doc.update(extra)
    return doc


def errors_of(doc: dict) -> list[str]:
    with pytest.raises(InvalidWorkgroupConfig) as info:
        parse_config(doc, "wg.toml")
    return info.value.errors


def test_seed_example_parses_with_its_values_and_inheritance() -> None:
    config = load_config(EXAMPLE)
    api, batch = config.workers
    assert (api.name, api.queues, api.max_concurrency, api.poll_interval) == (
        "api",
        ("default",),
        8,
        0.5,
    )
    assert api.health.enabled and api.health.check_interval == 15.0
    assert api.health.stale_after == 60.0 and api.health.consecutive_failure_limit == 3
    # batch sets queues/poll/concurrency and inherits worker_group from [defaults]
    assert batch.queues == ("email", "report", "cleanup") and batch.max_concurrency == 2
    assert batch.worker_group == "default" and not batch.health.enabled
    assert config.supervisor.shutdown_grace == 100.0


def test_defaults_without_any_optional_table() -> None:
    config = parse_config(minimal())
    sup, (worker,) = config.supervisor, config.workers
    assert (
        sup.shutdown_grace,
        sup.backoff_initial,
        sup.backoff_max,
        sup.backoff_factor,
        sup.burst_limit,
        sup.burst_window,
    ) == (100.0, 0.5, 30.0, 2.0, 10, 60.0)
    assert sup.health_pg_dsn is None and sup.health_pg_schema is None and sup.http_port is None
    # like a standalone worker: every queue of the registry; the worker picks its concurrency
    assert worker.queues == () and worker.max_concurrency is None
    assert worker.poll_interval == 1.0 and worker.worker_group == "default"
    assert not worker.force_update_actor_config
    h = worker.health
    assert (
        h.enabled,
        h.check_interval,
        h.stale_after,
        h.startup_grace,
        h.consecutive_failure_limit,
    ) == (False, 15.0, 60.0, 15.0, 3)


def test_defaults_table_is_inherited_and_overridden() -> None:
    doc = minimal(
        defaults={
            "queues": ["a", "b"],
            "max_concurrency": 3,
            "poll_interval": 0.2,
            "worker_group": "g",
        },
        workers=[{"name": "x"}, {"name": "y", "queues": ["c"], "max_concurrency": 1}],
    )
    x, y = parse_config(doc).workers
    assert (x.queues, x.max_concurrency, x.poll_interval, x.worker_group) == (
        ("a", "b"),
        3,
        0.2,
        "g",
    )
    assert (y.queues, y.max_concurrency, y.poll_interval) == (("c",), 1, 0.2)


def test_heartbeat_is_at_most_a_third_of_stale_after() -> None:
    doc = minimal(
        workers=[{"name": "a", "health": {"enabled": True, "stale_after": 1.5}}, {"name": "b"}]
    )
    a, b = parse_config(doc).workers
    assert a.heartbeat_interval == 0.5
    assert b.heartbeat_interval == 2.0  # the worker default, already below 60 / 3


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        (
            minimal(workers=[{"name": "api"}, {"name": "batch", "queuez": ["a"]}]),
            'workers[1] ("batch"): unknown key "queuez"',
        ),
        (minimal(supervisor={"shutdown_grase": 1}), '[supervisor]: unknown key "shutdown_grase"'),
        (minimal(defaults={"leases": 1}), '[defaults]: unknown key "leases"'),
        (
            minimal(workers=[{"name": "api", "health": {"enable": True}}]),
            'workers[0] ("api") [health]: unknown key "enable"',
        ),
        (minimal(extra=1), 'unknown key "extra"'),
        (
            minimal(workers=[{"name": "api", "max_concurrency": "8"}]),
            'workers[0] ("api"): "max_concurrency" must be an integer, not a string',
        ),
        (
            minimal(workers=[{"name": "api", "max_concurrency": 0}]),
            'workers[0] ("api"): "max_concurrency" must be >= 1, got 0',
        ),
        (
            minimal(workers=[{"name": "api", "force_update_actor_config": 1}]),
            'workers[0] ("api"): "force_update_actor_config" must be true or false, not an integer',
        ),
        (
            minimal(workers=[{"name": "api", "queues": []}]),
            'workers[0] ("api"): "queues" must name at least one queue',
        ),
        (
            minimal(workers=[{"name": "api", "queues": "default"}]),
            'workers[0] ("api"): "queues" must be an array of strings, not a string',
        ),
        (
            minimal(supervisor={"backoff_factor": 0.5}),
            '[supervisor]: "backoff_factor" must be >= 1, got 0.5',
        ),
        (
            minimal(supervisor={"burst_window": 0}),
            '[supervisor]: "burst_window" must be > 0, got 0',
        ),
        (
            minimal(supervisor={"shutdown_grace": True}),
            '[supervisor]: "shutdown_grace" must be a number of seconds, not a boolean',
        ),
        (
            minimal(supervisor={"backoff_initial": 5.0, "backoff_max": 1.0}),
            '[supervisor]: "backoff_max" (1) must be >= "backoff_initial" (5)',
        ),
        (
            minimal(supervisor={"http_port": 70000}),
            '[supervisor]: "http_port" must be between 0 and 65535, got 70000',
        ),
        (
            minimal(supervisor={"health_pg_dsn": "mysql://x"}),
            '[supervisor]: "health_pg_dsn": invalid DSN',
        ),
        (
            minimal(supervisor={"health_pg_schema": "Bad-Schema"}),
            '[supervisor]: "health_pg_schema": invalid schema name',
        ),
        (
            minimal(workers=[{"name": "api", "health": {"consecutive_failure_limit": 0}}]),
            'workers[0] ("api") [health]: "consecutive_failure_limit" must be >= 1, got 0',
        ),
        (
            minimal(workers=[{"name": "api", "health": {"stale_after": -1}}]),
            'workers[0] ("api") [health]: "stale_after" must be > 0, got -1',
        ),
        (
            minimal(workers=[{"name": "api"}, {"name": "api"}]),
            'workers[1] ("api"): duplicate name: workers[0] is also "api"',
        ),
        (
            minimal(workers=[{"name": "n" * (MAX_NAME_LENGTH + 1)}]),
            f'"name" is {MAX_NAME_LENGTH + 1} characters; at most {MAX_NAME_LENGTH}',
        ),
        (minimal(workers=[{"name": "a/b"}]), '"name" may only use letters, digits'),
        (minimal(workers=[{"queues": ["a"]}]), 'workers[0]: "name" is required'),
        (
            minimal(defaults={"keep_succeeded": -1}),
            '[defaults]: "keep_succeeded" must be >= 0, got -1',
        ),
        (
            minimal(defaults={"keep_succeeded": "forever"}),
            '[defaults]: "keep_succeeded" must be a number of seconds, not a string',
        ),
        (
            minimal(workers=[{"name": "api", "keep_dead": "never"}]),
            'workers[0] ("api"): "keep_dead" must be a number of seconds or "forever", '
            "got 'never'",
        ),
        (
            minimal(workers=[{"name": "api", "keep_cancelled": True}]),
            'workers[0] ("api"): "keep_cancelled" must be a number of seconds or "forever", '
            "not a boolean",
        ),
        (
            minimal(workers=[{"name": "api", "prune_interval": 0}]),
            'workers[0] ("api"): "prune_interval" must be > 0, got 0',
        ),
        (
            minimal(defaults={"prune_interval": "1m"}),
            '[defaults]: "prune_interval" must be a number of seconds, not a string',
        ),
        (
            minimal(workers=[{"name": "api", "keep_silent_workers": 2}]),
            'workers[0] ("api"): "keep_silent_workers" (2) must be longer than '
            '"heartbeat_interval" (2)',
        ),
        (
            minimal(defaults={"vacuum_after_prune": "yes"}),
            '[defaults]: "vacuum_after_prune" must be true or false, not a string',
        ),
        (minimal(workers=[]), "at least one [[workers]] entry is required"),
        ({"workers": [{"name": "api"}]}, 'missing required key "actors"'),
        (minimal(actors="no_colon"), '"actors" must be a "MODULE:ATTR" string'),
    ],
)
def test_each_mistake_is_one_error_naming_the_key(doc: dict, expected: str) -> None:
    errors = errors_of(doc)
    assert len(errors) == 1, errors
    assert expected in errors[0]


def test_every_problem_is_reported_and_the_message_is_one_line() -> None:
    doc = minimal(supervisor={"burst_limit": -1}, workers=[{"name": "a", "queuez": 1}])
    with pytest.raises(InvalidWorkgroupConfig) as info:
        parse_config(doc, "wg.toml")
    assert len(info.value.errors) == 2
    assert "\n" not in str(info.value) and str(info.value).startswith("wg.toml: 2 problems")


def test_files_missing_or_not_toml(tmp_path: Path) -> None:
    with pytest.raises(InvalidWorkgroupConfig, match="no such file"):
        load_config(tmp_path / "absent.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text('actors = "a:b"\n[[workers]\nname = "x"\n')
    with pytest.raises(InvalidWorkgroupConfig, match=r"invalid TOML: .*line 2"):
        load_config(bad)


def test_name_budget_fits_the_unix_socket_limit() -> None:
    instance = uuid.uuid4()
    path = health_socket_path(instance, "n" * MAX_NAME_LENGTH)
    assert len(path.encode()) <= 107
    assert path.endswith(f"taskq-{instance}-{'n' * MAX_NAME_LENGTH}.sock")


def test_child_shutdown_grace_fits_inside_the_supervisors() -> None:
    default = parse_config(minimal()).supervisor
    assert default.child_shutdown_grace == WORKER_SHUTDOWN_GRACE
    assert default.child_worst_case_exit == WORKER_SHUTDOWN_GRACE + CHILD_TEARDOWN_MARGIN
    assert default.child_worst_case_exit < default.shutdown_grace
    short = parse_config(minimal(supervisor={"shutdown_grace": 25.0})).supervisor
    assert short.child_shutdown_grace == 25.0 - CHILD_TEARDOWN_MARGIN
    assert short.child_worst_case_exit <= short.shutdown_grace
    assert (
        parse_config(minimal(supervisor={"shutdown_grace": 3.0})).supervisor.child_shutdown_grace
        == 0.0
    )


def test_warnings_for_a_short_grace_and_an_unconsumed_queue() -> None:
    from tests.support.workgroup_actors import registry

    config = parse_config(
        minimal(
            supervisor={"shutdown_grace": 20.0}, workers=[{"name": "api", "queues": ["default"]}]
        )
    )
    warnings = warnings_for(config, registry)
    assert any(
        "shutdown_grace 20s is below a child's worst-case clean exit of 45s" in w for w in warnings
    )
    unconsumed = sorted(w for w in warnings if "no [[workers]] entry consumes" in w)
    assert sorted(w.split('"')[3] for w in unconsumed) == ["cleanup", "email", "report"]
    assert warnings_for(load_config(EXAMPLE), registry) == []
    # a worker that names no queues consumes every queue of the registry (as `taskq worker`)
    assert warnings_for(parse_config(minimal()), registry) == []


def test_the_example_is_the_seed_toml() -> None:
    doc = tomllib.loads(EXAMPLE.read_text())
    assert set(doc) == {"actors", "defaults", "supervisor", "workers"}
    assert [w["name"] for w in doc["workers"]] == ["api", "batch"]


def test_pruning_defaults_are_the_worker_s_and_inherit_like_the_other_keys() -> None:
    (plain,) = parse_config(minimal()).workers
    for name in ("prune_interval", "keep_succeeded", "keep_dead", "keep_cancelled"):
        assert getattr(plain.config, name) == getattr(WORKER_DEFAULTS, name)
    assert plain.config.keep_silent_workers == WORKER_DEFAULTS.keep_silent_workers
    doc = minimal(
        defaults={"keep_succeeded": 3600, "keep_dead": "forever", "prune_interval": 30},
        workers=[{"name": "a"}, {"name": "b", "keep_dead": 86400, "keep_silent_workers": 90}],
    )
    a, b = parse_config(doc).workers
    assert (a.config.keep_succeeded, a.config.keep_dead, a.config.prune_interval) == (
        3600.0,
        None,
        30.0,
    )
    assert a.config.keep_cancelled == WORKER_DEFAULTS.keep_cancelled
    assert (b.config.keep_succeeded, b.config.keep_dead, b.config.keep_silent_workers) == (
        3600.0,
        86400.0,
        90.0,
    )


def test_a_child_s_pruning_flags_are_what_taskq_worker_parses() -> None:
    doc = minimal(
        defaults={"keep_succeeded": 60, "keep_cancelled": "forever", "vacuum_after_prune": True},
        workers=[
            {"name": "api", "prune_interval": 5, "keep_silent_workers": 120.5},
            {"name": "plain", "vacuum_after_prune": False},
        ],
    )
    config = parse_config(doc)
    api, plain = (
        build_parser().parse_args(list(argv[argv.index("worker") :]))
        for argv in (
            build_command(
                spec, actors="m:r", instance=uuid.uuid4(), supervisor=config.supervisor
            ).argv
            for spec in config.workers
        )
    )
    assert (api.prune_interval, api.keep_succeeded, api.keep_cancelled) == (5.0, 60.0, None)
    assert (api.keep_dead, api.keep_silent_workers) == (WORKER_DEFAULTS.keep_dead, 120.5)
    assert api.vacuum_after_prune is True and plain.vacuum_after_prune is False
