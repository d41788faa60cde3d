"""Find a Postgres for the test suite, or start one; print its DSN on stdout.

Order, as CONTRACT.md describes:
1. ``TASKQ_TEST_PG_DSN`` if set (it must answer, or we fail: a DSN the user chose is
   never silently replaced);
2. the local server at ``postgresql://root@127.0.0.1:5432/test``;
3. the machine's own cluster, started with ``pg_ctlcluster`` when its binaries exist;
4. a throwaway cluster under ``.pgtmp/`` built with ``initdb`` from the binaries on
   the machine.
Anything else ends with one line on stderr and exit status 1.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import psycopg

LOCAL_DSN = "postgresql://root@127.0.0.1:5432/test"
THROWAWAY_PORT = 54329
ROOT = Path(__file__).resolve().parent.parent


def answers(dsn: str, wait: float = 0.0) -> bool:
    deadline = time.monotonic() + wait
    while True:
        try:
            with psycopg.connect(dsn, connect_timeout=3) as conn:
                conn.execute("SELECT 1")
            return True
        except psycopg.Error:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.5)


def fail(message: str) -> None:
    print(f"ensure_postgres: {message}", file=sys.stderr)
    sys.exit(1)


def start_machine_cluster() -> bool:
    if not shutil.which("pg_ctlcluster") or not os.path.isdir("/etc/postgresql"):
        return False
    for version in sorted(os.listdir("/etc/postgresql")):
        subprocess.run(
            ["pg_ctlcluster", "--skip-systemctl-redirect", version, "main", "start"],
            capture_output=True,
            check=False,
        )
    return answers(LOCAL_DSN, wait=20)


def pg_bin(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return candidates[-1] if candidates else None


class ThrowawayCluster:
    """A Postgres cluster of our own, built with ``initdb`` from the machine's binaries
    under ``base`` (``base/data``) and listening on 127.0.0.1:``port``: Postgres's default
    settings, but for where it listens (the benchmarks run their soak on one when the
    machine's server has autovacuum off). ``start()`` builds it if ``base`` has none and
    returns its DSN (None: no binaries, or it did not answer); ``stop()``; ``remove()``
    stops it and deletes ``base``."""

    def __init__(self, base: Path, port: int) -> None:
        self.base, self.data, self.port = base, base / "data", port
        self.dsn = f"postgresql://postgres@127.0.0.1:{port}/postgres"
        self.initdb, self.pg_ctl = pg_bin("initdb"), pg_bin("pg_ctl")
        self.log = self.base / "server.log"
        self.run_as: list[str] = []
        if os.geteuid() == 0:  # initdb and the server refuse to run as root
            self.run_as = ["runuser", "-u", "postgres", "--"]

    @property
    def available(self) -> bool:
        """The binaries are there (and, as root, a way to run them as postgres)."""
        return bool(self.initdb and self.pg_ctl) and (
            not self.run_as or shutil.which("runuser") is not None
        )

    def start(self) -> str | None:
        if not self.available:
            return None
        assert self.initdb and self.pg_ctl
        if answers(self.dsn):
            return self.dsn
        self.base.mkdir(parents=True, exist_ok=True)
        if self.run_as:
            shutil.chown(self.base, "postgres")
        if not self.data.exists():
            subprocess.run(
                [*self.run_as, self.initdb, "-D", str(self.data), "-U", "postgres", "--auth=trust"],
                capture_output=True,
                check=True,
            )
        subprocess.run(
            [
                *self.run_as,
                self.pg_ctl,
                "-D",
                str(self.data),
                "-l",
                str(self.log),
                "-w",
                "-o",
                f"-p {self.port} -k /tmp -c listen_addresses=127.0.0.1",
                "start",
            ],
            capture_output=True,
            check=False,
        )
        return self.dsn if answers(self.dsn, wait=20) else None

    def stop(self) -> None:
        """Stop the server (fast: running sessions are ended) and wait for it; a server
        that is not running is not an error."""
        if self.pg_ctl and self.data.exists():
            subprocess.run(
                [*self.run_as, self.pg_ctl, "-D", str(self.data), "-m", "fast", "-w", "stop"],
                capture_output=True,
                check=False,
                timeout=120,
            )

    def remove(self) -> None:
        self.stop()
        shutil.rmtree(self.base, ignore_errors=True)


def start_throwaway_cluster() -> str | None:
    """The test suite's cluster under ``.pgtmp/``, kept between runs."""
    return ThrowawayCluster(ROOT / ".pgtmp", THROWAWAY_PORT).start()


def main() -> None:
    chosen = os.environ.get("TASKQ_TEST_PG_DSN")
    if chosen:
        if not answers(chosen, wait=5):
            fail(f"TASKQ_TEST_PG_DSN={chosen!r} does not answer; start that server or unset it")
        print(chosen)
        return
    if answers(LOCAL_DSN) or start_machine_cluster():
        print(LOCAL_DSN)
        return
    dsn = start_throwaway_cluster()
    if dsn:
        print(dsn)
        return
    fail(
        "no Postgres reachable at 127.0.0.1:5432 and no Postgres binaries found to start one; "
        "install PostgreSQL or set TASKQ_TEST_PG_DSN"
    )


if __name__ == "__main__":
    main()
