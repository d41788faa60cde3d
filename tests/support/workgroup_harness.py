"""Run ``taskq workgroup start`` as a real process and watch its JSON log.

``Workgroup`` starts the supervisor in its own session, reads its stderr on a thread
(every line parsed when it is JSON), answers "wait until the log shows X" with a
deadline, talks to its HTTP port, and at the end kills whatever is left: the supervisor
and every child pid it ever logged.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from tests.support.helpers import wait_until

REPO = Path(__file__).resolve().parents[2]


def pid_alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie counts as dead)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def write_config(
    path: Path, body: str, *, actors: str = "tests.support.workgroup_actors:registry"
) -> Path:
    path.write_text(f'actors = "{actors}"\n{body}')
    return path


def taskq_env(env: dict[str, str] | None = None, **extra: str) -> dict[str, str]:
    out = dict(os.environ if env is None else env)
    out["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), out.get("PYTHONPATH")]))
    out["TASKQ_LOG_FORMAT"] = "json"
    out.update(extra)
    return out


def run_cli(
    *args: str, env: dict[str, str] | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "taskq", *args],
        cwd=REPO,
        env=taskq_env(env),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


class Workgroup:
    def __init__(self, config: Path, env: dict[str, str]) -> None:
        self.lines: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "taskq", "workgroup", "start", str(config)],
            cwd=REPO,
            env=taskq_env(env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        self._readers = [
            threading.Thread(target=self._read, args=(self.proc.stderr,), daemon=True),
            threading.Thread(target=self._read, args=(self.proc.stdout,), daemon=True),
        ]
        for reader in self._readers:
            reader.start()

    def _read(self, stream: Any) -> None:
        for raw in stream:
            text = raw.decode("utf-8", errors="replace").rstrip("\n")
            try:
                line = json.loads(text)
            except ValueError:
                line = None
            if not isinstance(line, dict):
                line = {"event": "<text>", "text": text}
            with self._lock:
                self.lines.append(line)

    # -- the log --------------------------------------------------------------------------

    def snapshot(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self.lines)

    def events(self, event: str, **match: Any) -> list[dict[str, Any]]:
        return [
            line
            for line in self.snapshot()
            if line.get("event") == event and all(line.get(k) == v for k, v in match.items())
        ]

    def wait_event(
        self,
        event: str,
        *,
        count: int = 1,
        timeout: float = 30.0,
        where: Callable[[dict[str, Any]], bool] | None = None,
        **match: Any,
    ) -> list[dict[str, Any]]:
        def found() -> list[dict[str, Any]]:
            hits = [e for e in self.events(event, **match) if where is None or where(e)]
            return hits if len(hits) >= count else []

        try:
            return wait_until(found, timeout=timeout, what=f"{count} x {event} {match}")
        except AssertionError:
            tail = "\n".join(json.dumps(line)[:300] for line in self.snapshot()[-40:])
            raise AssertionError(
                f"no {count} x {event} {match} within {timeout}s; exit={self.proc.poll()}; "
                f"last log lines:\n{tail}"
            ) from None

    def child_pids(self) -> set[int]:
        return {e["child_pid"] for e in self.events("workgroup-child-started")}

    def started_pid(self, worker: str, *, nth: int = 1, timeout: float = 30.0) -> int:
        hits = self.wait_event("workgroup-child-started", count=nth, worker=worker, timeout=timeout)
        return hits[nth - 1]["child_pid"]

    @property
    def instance(self) -> str:
        return self.wait_event("workgroup-started")[0]["instance"]

    # -- HTTP -----------------------------------------------------------------------------

    @property
    def port(self) -> int:
        return self.wait_event("workgroup-http-listening")[0]["port"]

    def get(self, path: str) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=10) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode()

    def status(self) -> dict[str, Any]:
        code, body = self.get("/status")
        assert code == 200, body
        return json.loads(body)

    # -- the end --------------------------------------------------------------------------

    def signal(self, sig: signal.Signals) -> None:
        os.kill(self.proc.pid, sig)

    def wait_exit(self, timeout: float = 60.0) -> int:
        code = self.proc.wait(timeout=timeout)
        for reader in self._readers:
            reader.join(timeout=10)
        return code

    def stop(self, timeout: float = 60.0) -> int:
        self.signal(signal.SIGTERM)
        return self.wait_exit(timeout)

    def cleanup(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)
        for pid in self.child_pids():
            if pid_alive(pid):
                try:
                    os.killpg(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()


@contextlib.contextmanager
def workgroup_processes() -> Iterator[Callable[[Path, dict[str, str]], Workgroup]]:
    """``start(config, env)`` starts a real workgroup; each is cleaned up at the end."""
    started: list[Workgroup] = []

    def start(config: Path, env: dict[str, str]) -> Workgroup:
        wg = Workgroup(config, env)
        started.append(wg)
        return wg

    try:
        yield start
    finally:
        for wg in started:
            wg.cleanup()
