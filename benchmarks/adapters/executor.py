"""The CPU-bound ceiling: a bare ``ProcessPoolExecutor(os.cpu_count())`` mapping the same
job body, with the project's interpreter (standard library only)."""

from __future__ import annotations

from .base import Adapter

ADAPTER = Adapter(
    name="executor",
    label="ProcessPoolExecutor",
    dist="",
    script="executor_bench.py",
    backend="none",
    defaults="concurrent.futures.ProcessPoolExecutor(os.cpu_count()), default start method, "
    "executor.map over the jobs (chunksize 1); no queue, no store: the ceiling",
)
