"""The benchmarks' throwaway Postgres (benchmarks/servers.py, on scripts/ensure_postgres.py's
``ThrowawayCluster``): started from the machine's binaries with Postgres's defaults when
the bench server has autovacuum off, and gone afterwards, also when the case fails."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest
from benchmarks import pgadmin, servers
from scripts.ensure_postgres import ThrowawayCluster, answers

pytestmark = pytest.mark.slow

OFF = {"autovacuum": {"value": "off", "default": False}}
ON = {"autovacuum": {"value": "on", "default": True}}


def test_a_server_with_autovacuum_is_used_as_it_is(pg_dsn: str) -> None:
    with servers.default_vacuum_server(pg_dsn, ON) as (dsn, server):
        assert dsn == pg_dsn and server["where"] == servers.BENCH_SERVER


def test_without_autovacuum_a_throwaway_cluster_with_the_defaults(pg_dsn: str) -> None:
    available = ThrowawayCluster(Path("/nonexistent"), 1).available
    with servers.default_vacuum_server(pg_dsn, OFF) as (dsn, server):
        if not available:  # no Postgres binaries on this machine: said, and the bench server
            assert dsn == pg_dsn and "no Postgres binaries" in str(server["why"])
            return
        assert dsn != pg_dsn and str(server["where"]).startswith("a throwaway cluster")
        assert server["settings"]["autovacuum"] == {"value": "on", "default": True}
        assert all(s["default"] for s in server["settings"].values()), server["settings"]
        assert pgadmin.server_version(dsn) == server["postgres"]
    assert not answers(dsn), "the cluster still answers"
    assert not list((servers.ROOT / ".pgtmp").glob("bench-*"))


def test_the_cluster_is_removed_when_the_case_fails(pg_dsn: str) -> None:
    seen = ""
    with pytest.raises(RuntimeError, match="the case failed"):
        with servers.default_vacuum_server(pg_dsn, OFF) as (dsn, _server):
            seen = dsn
            with psycopg.connect(dsn) as conn:
                conn.execute("SELECT 1")
            raise RuntimeError("the case failed")
    if seen != pg_dsn:  # a cluster of ours (not the fallback to the bench server)
        assert not answers(seen)
    assert not list((servers.ROOT / ".pgtmp").glob("bench-*"))
