"""One cached venv per peer under ``benchmarks/.venvs/<name>``, with the peer pinned.

A venv is rebuilt only when its requirement list changes (a stamp file holds the list
it was built with). A failed build is reported, never raised: the peer shows as
"unavailable: <reason>" in the table.

``byte_compile`` gives taskq's own source the ``__pycache__`` an install would.
"""

from __future__ import annotations

import compileall
import importlib.util
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent / ".venvs"


@dataclass(frozen=True)
class VenvResult:
    python: Path | None
    error: str | None = None


def ensure(name: str, requirements: tuple[str, ...], *, offline: bool = False) -> VenvResult:
    home = ROOT / name
    python = home / "bin" / "python"
    stamp = home / ".bench-requirements"
    wanted = "\n".join(requirements) + "\n"
    if python.exists() and stamp.exists() and stamp.read_text() == wanted:
        return VenvResult(python)
    if offline:
        return VenvResult(None, "not installed (offline run)")
    try:
        if not python.exists():
            subprocess.run(
                [sys.executable, "-m", "venv", str(home)],
                check=True,
                capture_output=True,
                text=True,
                timeout=300,
            )
        subprocess.run(
            [
                str(python),
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                *requirements,
            ],
            check=True,
            capture_output=True,
            text=True,
            timeout=900,
        )
    except subprocess.CalledProcessError as exc:
        lines = [
            ln
            for ln in (exc.stderr or exc.stdout or "").splitlines()
            if ln.strip() and not ln.startswith("WARNING")
        ]
        return VenvResult(None, (lines[-1] if lines else f"exit {exc.returncode}")[:200])
    except (OSError, subprocess.TimeoutExpired) as exc:
        return VenvResult(None, f"{type(exc).__name__}: {exc}"[:200])
    stamp.write_text(wanted)
    return VenvResult(python)


def installed_version(python: Path, dist: str) -> str | None:
    proc = subprocess.run(
        [str(python), "-c", f"import importlib.metadata as m; print(m.version({dist!r}))"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    return proc.stdout.strip() or None if proc.returncode == 0 else None


def byte_compile(*folders: Path) -> None:
    """Write the ``__pycache__`` of taskq's package (``src/taskq`` of the running
    interpreter's install) and of ``folders``, as installing a wheel does. pip compiles
    the peers' packages; taskq's editable install has no bytecode, and where
    ``PYTHONDONTWRITEBYTECODE=1`` is set (as on the machines of docs/benchmarks.md) every
    taskq process would compile its ~60 modules again at start (~100 ms of CPU a worker
    here), a cost no installed taskq pays and the drain's start-up would count."""
    spec = importlib.util.find_spec("taskq")
    if spec is not None and spec.origin is not None:
        compileall.compile_dir(Path(spec.origin).parent, quiet=1)
    for folder in folders:
        compileall.compile_dir(folder, quiet=1)
