"""The ``pg_dsn`` fixture: a bare ``pytest`` without a Postgres skips the Postgres tests
with one line; under ``make test`` (``TASKQ_TEST_PG_DSN`` set) a Postgres that does not
answer is a failure, never a skip."""

from __future__ import annotations

import pytest

from tests import conftest

NOWHERE = "postgresql://root@127.0.0.1:1/none"  # port 1: nothing listens


def test_without_make_test_no_postgres_is_one_skip(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TASKQ_TEST_PG_DSN", raising=False)
    monkeypatch.setattr(conftest, "PG_DSN", NOWHERE)
    with pytest.raises(pytest.skip.Exception) as info:
        conftest.find_pg_dsn()
    message = str(info.value)
    assert "\n" not in message and NOWHERE in message and "make test" in message


def test_under_make_test_a_silent_postgres_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TASKQ_TEST_PG_DSN", NOWHERE)
    monkeypatch.setattr(conftest, "PG_DSN", NOWHERE)
    with pytest.raises(pytest.fail.Exception, match="does not answer"):
        conftest.find_pg_dsn()
