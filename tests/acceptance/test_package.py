"""The package as a user installs it: scripts/check_package.py builds the sdist and the
wheel, checks them (twine), installs the wheel, not editable, into a fresh venv and runs
a smoke test there (taskq --version, package data, migrate + enqueue + drain on SQLite,
the pytest plugin)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_the_built_wheel_installs_and_works(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "check_package.py"), "--workdir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "check_package: every check passed" in done.stdout
