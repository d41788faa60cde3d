"""A real PgBouncer in transaction pooling mode in front of the tests' Postgres.

``PgBouncer(dsn).start()`` runs Debian's ``/usr/sbin/pgbouncer`` (``.ci/run`` installs
it) on a free port of 127.0.0.1, ``pool_mode = transaction``, forwarding every database
to the server of ``dsn`` with the same user, and returns the DSN that goes through it;
``stop()`` ends it (``start()`` again: a restart), ``close()`` ends it and removes its
directory. The root conftest starts one per test session when a test asks for
``pgbouncer_dsn`` and stops it at the end; without pgbouncer installed those tests skip
with one line saying how to install it.

PgBouncer refuses to run as root: as root it is started with ``-u nobody`` (its config
is written world-readable in a directory of its own). Its log goes to its stderr, kept
in ``pgbouncer.log`` there for a failing test to read.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.parse
from pathlib import Path

import psycopg
from psycopg.conninfo import conninfo_to_dict

#: the pids of the PgBouncers running now: children of the test process for the whole
#: session, which process-leak checks must not count (tests/support/procpool_support.py)
RUNNING: set[int] = set()
BINARY = "/usr/sbin/pgbouncer"
INSTALL = "apt-get install -y pgbouncer"
START_TIMEOUT = 20.0


def installed() -> str | None:
    """The pgbouncer binary, or None."""
    if os.access(BINARY, os.X_OK):
        return BINARY
    return shutil.which("pgbouncer")


def through(dsn: str, port: int) -> str:
    """``dsn`` (a ``postgresql://`` URL, as taskq takes) pointed at 127.0.0.1:``port``."""
    url = urllib.parse.urlsplit(dsn)
    credentials = url.netloc.rpartition("@")[0]
    netloc = f"{credentials}@127.0.0.1:{port}" if credentials else f"127.0.0.1:{port}"
    return urllib.parse.urlunsplit(url._replace(netloc=netloc))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class PgBouncer:
    """One PgBouncer process in front of the server ``dsn`` names."""

    def __init__(self, dsn: str, *, pool_size: int = 20) -> None:
        self.server = conninfo_to_dict(dsn)
        self.pool_size = pool_size
        self.port = free_port()
        self.dir = Path(tempfile.mkdtemp(prefix="taskq-pgbouncer-"))
        self.log = self.dir / "pgbouncer.log"
        self.process: subprocess.Popen[bytes] | None = None
        self.dsn = through(dsn, self.port)

    def _config(self) -> Path:
        host = self.server.get("host") or "127.0.0.1"
        port = self.server.get("port") or "5432"
        user = self.server.get("user") or os.environ.get("USER", "postgres")
        password = self.server.get("password")
        target = f"host={host} port={port}" + (f" password={password}" if password else "")
        (self.dir / "users.txt").write_text(f'"{user}" "{password or ""}"\n')
        ini = self.dir / "pgbouncer.ini"
        ini.write_text(
            "[databases]\n"
            f"* = {target}\n"
            "[pgbouncer]\n"
            "listen_addr = 127.0.0.1\n"
            f"listen_port = {self.port}\n"
            "unix_socket_dir =\n"
            "auth_type = trust\n"
            f"auth_file = {self.dir / 'users.txt'}\n"
            "pool_mode = transaction\n"
            "max_client_conn = 2000\n"
            f"default_pool_size = {self.pool_size}\n"
            "logfile =\n"
            "pidfile =\n"
        )
        for path in (self.dir, ini, self.dir / "users.txt"):
            path.chmod(0o755 if path.is_dir() else 0o644)
        return ini

    def start(self) -> str:
        """Start it and wait until it answers; returns the DSN through it."""
        binary = installed()
        assert binary, f"pgbouncer is not installed ({INSTALL})"
        command = [binary, str(self._config())]
        if os.geteuid() == 0:
            command[1:1] = ["-u", "nobody"]
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        RUNNING.add(self.process.pid)
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            try:
                with psycopg.connect(self.dsn, connect_timeout=2) as conn:
                    conn.execute("SELECT 1")
                return self.dsn
            except psycopg.Error as exc:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(
                        f"pgbouncer did not start on port {self.port}: {exc}; its log:\n"
                        + self.log.read_text(errors="replace")
                    ) from exc
                time.sleep(0.1)

    def stop(self) -> None:
        """End it (SIGINT: a fast shutdown) and wait; idempotent."""
        process, self.process = self.process, None
        if process is None:
            return
        RUNNING.discard(process.pid)
        if process.poll() is not None:
            return
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)

    def close(self) -> None:
        """Stop it and remove its directory (config, log)."""
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def restart(self) -> None:
        """Stop it and start it again on the same port (clients see an outage)."""
        self.stop()
        self.start()
