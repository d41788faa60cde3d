"""The pool's defaults a worker also has as options (``--cpu-workers``,
``--cpu-max-tasks-per-child``, ``--cpu-max-payload-bytes``): declared once, here, in a
module that imports nothing but ``os``, so ``WorkerConfig`` reads them without loading the
pool (``PoolConfig`` reads them too)."""

import os

#: a pool process is replaced after this many jobs (None or 0: never)
MAX_TASKS_PER_CHILD = 1000
#: the largest arguments (JSON bytes) a job may send its pool process
MAX_PAYLOAD_BYTES = 64 * 1024 * 1024


def pool_size(processes: int | None) -> int:
    """A pool's processes: ``processes``, or one a core when it is None (or 0)."""
    return processes or os.cpu_count() or 1
