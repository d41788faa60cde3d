"""What a worker says about autovacuum: the problem it names for each way autovacuum can
miss the jobs table, and a fix that says how to turn it on or vacuum instead."""

from __future__ import annotations

import pytest

from taskq.insight import Autovacuum


def _state(**changes: object) -> Autovacuum:
    values: dict = {
        "table": "taskq.jobs",
        "server": True,
        "track_counts": True,
        "table_enabled": None,
        "can_vacuum": True,
        "role": "app",
    }
    values.update(changes)
    return Autovacuum(**values)


@pytest.mark.parametrize("table_enabled", [None, True])
def test_autovacuum_on_is_no_problem(table_enabled: bool | None) -> None:
    assert _state(table_enabled=table_enabled).problem is None


@pytest.mark.parametrize(
    ("changes", "problem", "fix"),
    [
        ({"server": False}, "autovacuum = off", "autovacuum = on in postgresql.conf"),
        ({"track_counts": False}, "track_counts is off", "track_counts = on in postgresql.conf"),
        (
            {"table_enabled": False},
            "autovacuum is off for taskq.jobs",
            "ALTER TABLE taskq.jobs RESET (autovacuum_enabled)",
        ),
    ],
)
def test_each_way_autovacuum_misses_the_table_has_its_words(
    changes: dict, problem: str, fix: str
) -> None:
    state = _state(**changes)
    assert state.problem is not None and problem in state.problem
    assert fix in state.fix
    assert "VACUUM taskq.jobs regularly" in state.fix and "--vacuum-after-prune" in state.fix


def test_the_server_setting_comes_first() -> None:
    state = _state(server=False, table_enabled=False)
    assert state.problem is not None and "on the Postgres server" in state.problem
