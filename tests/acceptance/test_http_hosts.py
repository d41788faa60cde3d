"""Where taskq's probe and metrics endpoints listen (issue 21 item 7): a worker's
``--health-port`` and a workgroup's ``[supervisor] http_port`` bind 127.0.0.1 unless
``--health-host`` / ``[supervisor] http_host`` say otherwise (the workgroup's always
bound 0.0.0.0 before, with no key to change it). Read from the kernel's table of
listening sockets, real processes; a bad ``http_host`` is one validation line."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from tests.acceptance.test_workgroup_cli import assert_one_error_line
from tests.support.helpers import wait_until
from tests.support.worker_harness import WorkerProcess
from tests.support.workgroup_harness import Workgroup, run_cli, write_config

pytestmark = pytest.mark.slow


def listening_on(port: int) -> set[str]:
    """The local addresses of the TCP sockets listening on ``port`` (IPv4)."""
    found = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        address, hex_port = fields[1].split(":")
        if int(hex_port, 16) == port and fields[3] == "0A":  # LISTEN
            found.add(socket.inet_ntoa(bytes.fromhex(address)[::-1]))
    return found


@pytest.mark.parametrize(
    ("args", "bound"), [((), "127.0.0.1"), (("--health-host", "0.0.0.0"), "0.0.0.0")]
)
def test_a_workers_health_port_binds_loopback_unless_told(
    sqlite_target, tmp_path: Path, args: tuple[str, ...], bound: str
) -> None:
    assert run_cli("migrate", env=sqlite_target.env).returncode == 0
    worker = WorkerProcess(
        sqlite_target, "--health-port", "0", *args, log_path=tmp_path / "worker.log"
    )
    try:
        started = worker.wait_for_event("health-server-started")
        assert started["host"] == bound
        assert listening_on(started["port"]) == {bound}
    finally:
        worker.stop()


@pytest.mark.parametrize(
    ("line", "bound"), [("", "127.0.0.1"), ('http_host = "0.0.0.0"', "0.0.0.0")]
)
def test_a_workgroups_http_port_binds_loopback_unless_told(
    sqlite_target, tmp_path: Path, line: str, bound: str
) -> None:
    assert run_cli("migrate", env=sqlite_target.env).returncode == 0
    config = write_config(
        tmp_path / "wg.toml",
        f'[supervisor]\nhttp_port = 0\n{line}\n\n[[workers]]\nname = "w"\nqueues = ["default"]\n',
    )
    group = Workgroup(config, sqlite_target.env)
    try:
        (listening,) = group.wait_event("workgroup-http-listening")
        assert listening["host"] == bound
        assert wait_until(lambda: listening_on(listening["port"]), timeout=10) == {bound}
    finally:
        group.cleanup()
    shown = run_cli("workgroup", "validate", str(config), env=sqlite_target.env)
    assert f"http={bound}:0" in shown.stdout


@pytest.mark.parametrize("value", ['""', "5", '"a b"', '"http://x"'])
def test_a_bad_http_host_is_one_line(tmp_path: Path, value: str) -> None:
    config = write_config(
        tmp_path / "wg.toml",
        f'[supervisor]\nhttp_port = 0\nhttp_host = {value}\n\n[[workers]]\nname = "w"\n',
    )
    assert_one_error_line(run_cli("workgroup", "validate", str(config)), '"http_host"')
