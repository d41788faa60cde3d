"""`taskq enqueue --unique-key/--meta/--tag` and `taskq jobs list --tag`, as a user runs them."""

from __future__ import annotations

import json
import uuid

import pytest

from tests.acceptance.test_cli import assert_one_line_error, taskq
from tests.conftest import StoreTarget


@pytest.fixture
def migrated(target: StoreTarget) -> StoreTarget:
    taskq(target, "migrate")
    return target


def test_a_duplicate_unique_key_prints_the_holder(migrated: StoreTarget) -> None:
    first = taskq(
        migrated, "enqueue", "a", "--queue", "default", "--unique-key", "nightly"
    ).stdout.strip()
    uuid.UUID(first)
    second = taskq(
        migrated, "enqueue", "a", "--queue", "default", "--unique-key", "nightly"
    ).stdout.strip()
    assert second == f"duplicate of {first}"
    stats = json.loads(taskq(migrated, "jobs", "stats", "--json").stdout)
    assert stats["queued"] == 1


def test_meta_and_tags_are_shown_and_filtered(migrated: StoreTarget) -> None:
    tagged = taskq(
        migrated,
        "enqueue",
        "a",
        "--queue",
        "default",
        "--meta",
        '{"by": "ops"}',
        "--tag",
        "import",
        "--tag",
        "eu",
    ).stdout.strip()
    taskq(migrated, "enqueue", "b", "--queue", "default", "--tag", "eu")
    taskq(migrated, "enqueue", "c", "--queue", "default")
    shown = json.loads(taskq(migrated, "jobs", "show", tagged, "--json").stdout)
    assert shown["meta"] == {"by": "ops"} and shown["tags"] == ["import", "eu"]
    text = taskq(migrated, "jobs", "show", tagged).stdout
    assert '{"by": "ops"}' in text and '["import", "eu"]' in text
    imports = json.loads(taskq(migrated, "jobs", "list", "--tag", "import", "--json").stdout)
    assert [j["id"] for j in imports] == [tagged]
    eu = json.loads(taskq(migrated, "jobs", "list", "--tag", "eu", "--json").stdout)
    assert len(eu) == 2
    assert json.loads(taskq(migrated, "jobs", "list", "--tag", "none", "--json").stdout) == []


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--meta", "[1]"], "--meta must be a JSON object"),
        (["--tag", " padded "], "a tag must be a printable string"),
        (["--unique-key", ""], "a unique key must be a non-empty string"),
    ],
)
def test_bad_options_are_one_line(migrated: StoreTarget, args: list[str], fragment: str) -> None:
    assert_one_line_error(
        taskq(migrated, "enqueue", "a", "--queue", "default", *args, check=False), fragment
    )
    stats = json.loads(taskq(migrated, "jobs", "stats", "--json").stdout)
    assert stats["queued"] == 0
