"""The worker's options are declared once (``WorkerConfig``, ``taskq.options``): the flags,
the TOML keys and a workgroup child's command line all come from that one table and agree
on every value and every default."""

from __future__ import annotations

import dataclasses
import uuid
from typing import Any

import pytest

from taskq import kinds, options
from taskq.cli import build_parser
from taskq.cli.workgroup import worker_config
from taskq.exceptions import ConfigError
from taskq.worker.config import WORKER_DEFAULTS, WorkerConfig
from taskq.workgroup.child import build_command
from taskq.workgroup.config import parse_config

OPTIONS = options.options_of(WorkerConfig)


def _other(opt: options.Option) -> Any:
    """A valid value of ``opt`` that is not its default, as a TOML file would write it."""
    kind, default = opt.kind, opt.default
    if isinstance(kind, kinds.Switch):
        return not default
    if isinstance(kind, kinds.Queues):
        return ["a", "b"]
    if isinstance(kind, kinds.References):
        return ["tests.support.worker_actors:Noisy"]
    if isinstance(kind, kinds.Prefetch):
        return "auto"
    if isinstance(kind, kinds.Seconds):
        return 900.0 if default is None else default * 3 + 0.5
    if isinstance(kind, kinds.Integer):
        return 3 if default is None else default + 1
    return "x"


def _parsed(argv: list[str]) -> WorkerConfig:
    ns = build_parser().parse_args(argv)
    return worker_config(ns)


def test_every_field_is_an_option_and_its_flag_is_its_name() -> None:
    assert [o.name for o in OPTIONS] == [f.name for f in dataclasses.fields(WorkerConfig)]
    for opt in OPTIONS:
        assert opt.flag_name == "--" + opt.name.replace("_", "-")


def test_taskq_worker_defaults_are_the_declared_ones() -> None:
    assert _parsed(["worker", "--actors", "m:r"]) == dataclasses.replace(
        WORKER_DEFAULTS, actors="m:r"
    )


def test_every_toml_option_reaches_the_child_and_parses_back_to_the_same_value() -> None:
    settable = [o for o in OPTIONS if o.toml]
    assert {"lease", "prefetch", "cpu_workers", "cpu_max_tasks_per_child"} <= {
        o.name for o in settable
    }
    defaults = {o.name: _other(o) for o in settable}
    defaults["keep_silent_workers"] = 7200.0  # longer than the heartbeat
    defaults["heartbeat_interval"] = 1.5  # shorter than the lease
    config = parse_config(
        {"actors": "m:r", "defaults": defaults, "workers": [{"name": "api"}]}, "wg.toml"
    )
    (spec,) = config.workers
    for name, value in defaults.items():
        got = getattr(spec.config, name)
        want = None if value == "auto" else tuple(value) if isinstance(value, list) else value
        assert got == want, name
    instance = uuid.uuid4()
    argv = build_command(spec, actors="m:r", instance=instance, supervisor=config.supervisor).argv
    child = _parsed(list(argv[argv.index("worker") :]))
    assert child == dataclasses.replace(
        spec.config,
        workgroup_instance=instance,
        health_socket_path=child.health_socket_path,
        shutdown_grace=config.supervisor.child_shutdown_grace,
    )


def test_options_the_workgroup_sets_itself_are_not_toml_keys() -> None:
    doc = {"actors": "m:r", "workers": [{"name": "api", "lease": 5, "worker_label": "x"}]}
    with pytest.raises(Exception, match='unknown key "worker_label"'):
        parse_config(doc)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--heartbeat-interval", "10", "--lease", "5"], "--heartbeat-interval (10) must be"),
        (["--keep-silent-workers", "1"], "--keep-silent-workers (1) must be longer than"),
    ],
)
def test_one_validate_for_flags_toml_and_python(argv: list[str], message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        _parsed(["worker", "--actors", "m:r", *argv])
    with pytest.raises(ConfigError, match=r"^heartbeat_interval \(10\) must be shorter"):
        WorkerConfig(actors="m:r", heartbeat_interval=10, lease=5).validate(name=str)
    bad = WorkerConfig(actors="m:r", max_concurrency=0, prune_interval=-1)
    assert bad.problems() == [
        "--max-concurrency must be >= 1, got 0",
        "--prune-interval must be > 0, got -1",
    ]
