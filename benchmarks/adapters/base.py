"""What the harness knows about a system under test, and how it runs one scenario."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from .. import venvs

PEERS = Path(__file__).resolve().parent.parent / "peers"


@dataclass(frozen=True)
class Prepared:
    python: Path | None
    version: str | None
    error: str | None = None


@dataclass(frozen=True)
class Adapter:
    name: str  # the system's key in results and on the command line
    label: str  # what the table header says
    dist: str  # distribution whose version is reported
    script: str  # peers/<script>: one scenario per invocation, one JSON line out
    backend: str  # postgres | sqlite | redis | none
    defaults: str  # the settings used, in words (docs and JSON)
    requirements: tuple[str, ...] = ()  # () = the project's own interpreter
    redis_db: int = 9  # backend redis: the database number of its runs
    #: backend redis: the run's key prefix (``--db-prefix``) travels as ``#PREFIX`` in the
    #: DSN, and the peer deletes only its own keys
    redis_key_prefix: bool = False
    #: scenario -> why it does not apply ("n/a (...)"), shown instead of a number
    not_applicable: dict[str, str] = field(default_factory=dict)
    #: case id -> parameters that replace the case's for this system only
    overrides: dict[str, dict[str, object]] = field(default_factory=dict)
    #: case id -> at most this many runs (a result that is "not re-run within the
    #: window" is the same every time, and the window is long)
    max_runs: dict[str, int] = field(default_factory=dict)

    @property
    def is_taskq(self) -> bool:
        return not self.requirements

    def prepare(self, *, offline: bool) -> Prepared:
        venvs.byte_compile(PEERS)  # taskq's modules and the peer scripts' own, as installed
        if self.is_taskq:
            python = Path(sys.executable)
            return Prepared(
                python,
                venvs.installed_version(python, self.dist) if self.dist else _python_version(),
            )
        built = venvs.ensure(self.name, self.requirements, offline=offline)
        if built.python is None:
            return Prepared(None, None, built.error)
        return Prepared(built.python, venvs.installed_version(built.python, self.dist))

    def run(
        self,
        python: Path,
        scenario: str,
        dsn: str,
        workdir: Path,
        params: dict[str, object],
        timeout: float,
    ) -> dict:
        cmd = [
            str(python),
            str(PEERS / self.script),
            scenario,
            "--dsn",
            dsn,
            "--path",
            str(workdir),
        ]
        for key, value in params.items():
            cmd += [f"--{key.replace('_', '-')}", str(value)]
        workdir.mkdir(parents=True, exist_ok=True)
        stderr_path = workdir / f"{scenario}.stderr"
        with open(stderr_path, "w") as stderr:
            proc = subprocess.Popen(
                cmd, stdout=subprocess.PIPE, stderr=stderr, text=True, cwd=PEERS
            )
            try:
                stdout, _ = proc.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                _end(proc)
                return {"ok": False, "error": f"timed out after {timeout:.0f}s"}
            except BaseException:  # Ctrl-C, SIGTERM (benchmarks/servers.py): no orphans
                _end(proc)
                raise
        for line in reversed(stdout.strip().splitlines()):
            if line.startswith("{"):
                try:
                    return json.loads(line)
                except json.JSONDecodeError:
                    break
        err = (stderr_path.read_text().strip().splitlines() or [f"exit {proc.returncode}"])[-1]
        return {"ok": False, "error": f"no result line (exit {proc.returncode}): {err[:300]}"}


def _python_version() -> str:
    return "Python " + ".".join(str(v) for v in sys.version_info[:3])


def _end(proc: subprocess.Popen) -> None:
    """SIGTERM a peer script (it kills the workers it started, then exits), then SIGKILL."""
    proc.terminate()
    try:
        proc.communicate(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
