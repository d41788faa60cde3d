"""The store conformance suite: the ``Store`` and ``Insight`` contracts, call by call,
against every engine, so the engines cannot drift.

Every test here takes the ``store`` fixture (or ``target``), parametrised by this
module's ``target`` over ``ENGINES``: SQLite (a fresh file per test) and Postgres (a
fresh schema per test). A new engine, or a new way to reach one, is one more entry here.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import StoreTarget, store_target

ENGINES = ["sqlite", "postgres"]


@pytest.fixture(params=ENGINES)
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StoreTarget]:
    yield from store_target(request.param, request, tmp_path)
