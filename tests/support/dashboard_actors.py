"""Actors for the dashboard tests: jobs that succeed, fail with a cause, and carry
secrets."""

from __future__ import annotations

import taskq

registry = taskq.Registry()


@registry.actor(queue="default")
def add(a: int, b: int) -> int:
    return a + b


@registry.actor(queue="reports", max_attempts=2)
def load_report(path: str) -> None:
    """Fails every time: a KeyError that causes a ValueError (dead after 2 attempts)."""
    try:
        {}["missing"]
    except KeyError as exc:
        raise ValueError(f"cannot load {path} from postgresql://app:hunter2@db/prod") from exc


@registry.actor(queue="default", max_attempts=1)
def charge(card: str, amount: int, api_token: str = "") -> int:
    return amount


@registry.actor(queue="default", max_attempts=1)
def flaky_once() -> str:
    """Dead at once, then succeeds after a retry: the marker file decides."""
    import os

    marker = os.environ.get("TASKQ_TEST_MARKER")
    if marker and not os.path.exists(marker):
        open(marker, "w").close()
        raise RuntimeError("first run fails")
    return "ok"


@registry.periodic("0 3 * * *", name="nightly-cleanup", missed="run_once")
@registry.actor(queue="default")
def nightly_cleanup() -> None:
    """A periodic job (the schedules page shows it): 03:00 UTC, does nothing."""
