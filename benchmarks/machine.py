"""What the numbers were measured on."""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path


def describe(
    pg_version: str | None, pg_settings: dict[str, dict[str, object]] | None = None
) -> dict[str, object]:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem_gib = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem_gib = round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    redis = None
    if shutil.which("redis-server"):
        out = subprocess.run(["redis-server", "--version"], capture_output=True, text=True)
        version = [w for w in out.stdout.split() if w.startswith("v=")]
        redis = "Redis " + version[0][2:] if version else out.stdout.strip()
    pgbench = None
    if shutil.which("pgbench"):
        pgbench = (
            subprocess.run(["pgbench", "--version"], capture_output=True, text=True)
            .stdout.strip()
            .split(" (Debian")[0]
        )
    return {
        "nproc": os.cpu_count(),
        "memory_gib": mem_gib,
        "cpu": cpu,
        "kernel": platform.release(),
        "python": sys.version.split()[0],
        "postgres": pg_version,
        "postgres_settings": pg_settings or {},
        "redis": redis,
        "pgbench": pgbench,
        "sqlite": __import__("sqlite3").sqlite_version,
    }
