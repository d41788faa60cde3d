"""Fixtures shared by the integration tests (beyond the root conftest's stores)."""

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from taskq.client import Client
from taskq.procpool import causes
from tests.support.worker_harness import runs_file  # noqa: F401 (the worker tests' run record)


@pytest.fixture
def cgroup(tmp_path: Path) -> tuple[Path, Path]:
    """A copy of this process's memory cgroup counter: (root, counter file)."""
    real = causes.OomCounter.for_pid(os.getpid())
    if real is None:
        pytest.skip("no memory cgroup counter readable here to copy")
    root = tmp_path / "cgroup"
    counter = root / real.path.relative_to(causes.CGROUP_ROOT)
    counter.parent.mkdir(parents=True)
    counter.write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 7\n")
    return root, counter


@pytest.fixture
def client(target, store) -> Iterator[Client]:
    """A ``taskq.Client`` on the test's store, migrated (a module may define its own)."""
    del store  # migrated
    with Client(target.dsn, schema=target.schema) as c:
        yield c
