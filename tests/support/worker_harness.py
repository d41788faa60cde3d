"""Running workers in tests: in-process (``Worker``) and as real ``taskq worker`` processes."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from taskq.store import Store
from taskq.worker import Worker, WorkerConfig
from taskq.worker.acker import Acker
from tests.support.helpers import async_wait_until, wait_until

ROOT = Path(__file__).resolve().parents[2]
ACTORS = "tests.support.worker_actors:registry"
FAST = {"heartbeat_interval": 0.3, "lease": 2.0, "poll_interval": 0.1, "shutdown_grace": 5.0}


@pytest.fixture
def runs_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Where ``tests.support.worker_actors`` records runs of in-process workers
    (TASKQ_TEST_RUNS)."""
    path = tmp_path / "runs.log"
    monkeypatch.setenv("TASKQ_TEST_RUNS", str(path))
    return path


def config_for(target: Any, **overrides: Any) -> WorkerConfig:
    values: dict[str, Any] = {
        "actors": ACTORS,
        "dsn": target.dsn,
        "schema": target.schema,
        "max_concurrency": 4,
        **FAST,
    }
    values.update(overrides)
    return WorkerConfig(**values)


@contextlib.asynccontextmanager
async def running_worker(
    target: Any, *, middleware: Sequence[Any] = (), **overrides: Any
) -> AsyncIterator[Worker]:
    worker = Worker(config_for(target, **overrides), middleware=middleware)
    task = asyncio.create_task(worker.run())

    async def started() -> bool:
        if task.done():
            task.result()  # start-up failed: raise it here
        return worker.supervisor is not None and worker.supervisor.alive > 0

    await async_wait_until(started, timeout=20, what="the worker to start")
    try:
        yield worker
    finally:
        worker.request_stop("test over")
        worker.exit_code = await asyncio.wait_for(task, 60)


async def run_acker(acker: Acker, until: Callable[[], Any]) -> None:
    """Run ``acker`` until ``until`` (an async predicate) holds, then stop it and let it
    write what is left."""
    task = asyncio.create_task(acker.run())
    try:
        await async_wait_until(until, what="the acker's write")
    finally:
        acker.stop()
        await asyncio.wait_for(task, 10)


async def wait_for_states(
    store: Store, ids: Sequence[Any], states: set[str], *, timeout: float = 30.0
) -> list[Any]:
    async def all_there() -> list[Any] | None:
        jobs = [await store.get_job(i) for i in ids]
        return jobs if all(j is not None and j.state in states for j in jobs) else None

    return await async_wait_until(
        all_there, timeout=timeout, what=f"{len(ids)} jobs to reach {sorted(states)}"
    )


class WorkerProcess:
    """A real ``python -m taskq worker`` subprocess with its stderr (JSON logs) captured."""

    def __init__(
        self,
        target: Any,
        *args: str,
        env: dict[str, str] | None = None,
        log_path: Path,
        new_session: bool = False,
    ) -> None:
        """``new_session``: the worker leads a process group (and session) of its own,
        as under a service manager, so a test can signal the whole group."""
        self.log_path = log_path
        self._log = open(log_path, "wb")  # closed in wait()
        full_env = dict(target.env if env is None else env)
        full_env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(ROOT), full_env.get("PYTHONPATH", "")) if p
        )
        cmd = [
            sys.executable,
            "-m",
            "taskq",
            "worker",
            "--actors",
            ACTORS,
            "--heartbeat-interval",
            "0.3",
            "--lease",
            "2",
            "--poll-interval",
            "0.1",
            *args,
        ]
        self.proc = subprocess.Popen(
            cmd,
            cwd=ROOT,
            env=full_env,
            stdout=subprocess.DEVNULL,
            stderr=self._log,
            start_new_session=new_session,
        )

    @property
    def pid(self) -> int:
        return self.proc.pid

    def logs(self) -> list[dict[str, Any]]:
        out = []
        for line in self.log_path.read_text(errors="replace").splitlines():
            with contextlib.suppress(ValueError):
                out.append(json.loads(line))
        return out

    def events(self, name: str) -> list[dict[str, Any]]:
        return [e for e in self.logs() if e.get("event") == name]

    def wait_for_event(self, name: str, timeout: float = 20.0) -> dict[str, Any]:
        def seen() -> dict[str, Any] | None:
            found = self.events(name)
            if not found and self.proc.poll() is not None:
                raise AssertionError(
                    f"worker exited ({self.proc.returncode}) before {name!r}:\n"
                    + self.log_path.read_text()
                )
            return found[0] if found else None

        return wait_until(seen, timeout=timeout, what=f"log event {name!r}")

    def signal(self, sig: int) -> None:
        self.proc.send_signal(sig)

    def wait(self, timeout: float = 60.0) -> int:
        try:
            return self.proc.wait(timeout)
        finally:
            self._log.close()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.wait(10)


def _request(path: str) -> bytes:
    return f"GET {path} HTTP/1.0\r\nHost: taskq\r\n\r\n".encode()


def _parse(raw: bytes) -> tuple[int, str]:
    head, _, body = raw.partition(b"\r\n\r\n")
    return int(head.split()[1]), body.decode()


async def http_get(
    path: str, *, socket_path: str | None = None, port: int | None = None
) -> tuple[int, str]:
    """GET from a worker's health server (Unix socket or 127.0.0.1:port)."""
    if socket_path is not None:
        reader, writer = await asyncio.open_unix_connection(socket_path)
    else:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(_request(path))
    await writer.drain()
    raw = await asyncio.wait_for(reader.read(), 10)
    writer.close()
    await writer.wait_closed()
    return _parse(raw)


def http_get_sync(
    path: str, *, socket_path: str | None = None, port: int | None = None
) -> tuple[int, str]:
    import socket

    if socket_path is not None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        address: Any = socket_path
    else:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        address = ("127.0.0.1", port)
    with sock:
        sock.settimeout(10)
        sock.connect(address)
        sock.sendall(_request(path))
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return _parse(b"".join(chunks))


def metric_value(text: str, name: str) -> float | None:
    """The value of an unlabelled sample in Prometheus text."""
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return None


@contextlib.contextmanager
def worker_processes(
    target: Any, log_dir: Path, *first: str, env: dict[str, str] | None = None
) -> Iterator[Callable[..., WorkerProcess]]:
    """``start(*args)`` starts a real worker (with ``first`` before ``args``, and ``env``
    over the target's); every worker started is stopped when the block ends."""
    started: list[WorkerProcess] = []

    def start(*args: str) -> WorkerProcess:
        log_path = log_dir / f"worker{len(started)}.log"
        worker = WorkerProcess(target, *first, *args, env=env, log_path=log_path)
        started.append(worker)
        return worker

    try:
        yield start
    finally:
        for worker in started:
            worker.stop()
