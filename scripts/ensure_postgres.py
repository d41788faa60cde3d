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


def start_throwaway_cluster() -> str | None:
    initdb, pg_ctl = pg_bin("initdb"), pg_bin("pg_ctl")
    if not initdb or not pg_ctl:
        return None
    data = ROOT / ".pgtmp" / "data"
    dsn = f"postgresql://postgres@127.0.0.1:{THROWAWAY_PORT}/postgres"
    if answers(dsn):
        return dsn
    run_as: list[str] = []
    if os.geteuid() == 0:  # initdb refuses to run as root
        if not shutil.which("runuser"):
            return None
        run_as = ["runuser", "-u", "postgres", "--"]
        (ROOT / ".pgtmp").mkdir(exist_ok=True)
        shutil.chown(ROOT / ".pgtmp", "postgres")
    if not data.exists():
        subprocess.run(
            [*run_as, initdb, "-D", str(data), "-U", "postgres", "--auth=trust"],
            capture_output=True,
            check=True,
        )
    subprocess.run(
        [
            *run_as,
            pg_ctl,
            "-D",
            str(data),
            "-l",
            str(data / "server.log"),
            "-w",
            "-o",
            f"-p {THROWAWAY_PORT} -k /tmp -c listen_addresses=127.0.0.1",
            "start",
        ],
        capture_output=True,
        check=False,
    )
    return dsn if answers(dsn, wait=20) else None


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
