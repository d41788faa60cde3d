"""``taskq dashboard`` as a process (issue 21 items 3 and 7): it logs
``dashboard.listening`` only once it is bound (the URL it names answers at once, also
for ``--port 0``), a taken port is one ``taskq:`` line and exit 1 with no "listening"
line before it, a bad ``--allowed-host`` likewise, and the host names it answers to
are the ones it says."""

from __future__ import annotations

import json
import socket
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.support.dashboard_process import start, stop
from tests.support.helpers import wait_until
from tests.support.workgroup_harness import run_cli

pytestmark = pytest.mark.slow


def events(log: Path, name: str) -> list[dict]:
    found = []
    for line in log.read_text(errors="replace").splitlines():
        if line.startswith("{"):
            record = json.loads(line)
            if record.get("event") == name:
                found.append(record)
    return found


def get(url: str, host: str | None = None) -> int:
    request = urllib.request.Request(url, headers={"Host": host} if host else {})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return exc.code


def test_listening_is_logged_once_bound_and_names_its_hosts(sqlite_target, tmp_path) -> None:
    env = sqlite_target.env
    assert run_cli("migrate", env=env).returncode == 0
    log = tmp_path / "dash.log"
    proc = start(["dashboard", "--port", "0", "--allowed-host", "dash.example"], env, log)
    try:
        (listening,) = wait_until(
            lambda: events(log, "dashboard.listening"), timeout=30, what="dashboard.listening"
        )
        url = listening["url"]
        assert not url.endswith(":0/")
        assert get(url) == 200  # bound before it said so: no retry needed
        assert listening["hosts"] == sorted(["127.0.0.1", "::1", "dash.example", "localhost"])
        assert get(url + "jobs", host="dash.example") == 200
        assert get(url + "jobs", host="attacker.example") == 421
    finally:
        stop(proc)


def test_a_taken_port_is_one_line_and_no_listening_line(sqlite_target) -> None:
    env = sqlite_target.env
    assert run_cli("migrate", env=env).returncode == 0
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        done = run_cli("dashboard", "--port", str(port), env=env)
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert lines == [f"taskq: cannot listen on 127.0.0.1:{port}: the port is taken"], lines
    assert "dashboard.listening" not in done.stdout + done.stderr


@pytest.mark.parametrize("host", ["https://dash.example", "dash.example:8760", "a b", "x/y"])
def test_a_bad_allowed_host_is_one_line(sqlite_target, host: str) -> None:
    env = sqlite_target.env
    assert run_cli("migrate", env=env).returncode == 0
    done = run_cli("dashboard", "--port", "0", "--allowed-host", host, env=env)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        f"taskq: --allowed-host {host!r} is not a host name: give the name alone, no scheme "
        "and no port (e.g. taskq.example.com)"
    ]
