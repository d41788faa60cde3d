"""The pool's defaults a worker also has as options (``--cpu-max-tasks-per-child``,
``--cpu-max-payload-bytes``): declared once, here, in a module that imports nothing, so
``WorkerConfig`` reads them without loading the pool (``PoolConfig`` reads them too)."""

#: a pool process is replaced after this many jobs (None or 0: never)
MAX_TASKS_PER_CHILD = 1000
#: the largest arguments (JSON bytes) a job may send its pool process
MAX_PAYLOAD_BYTES = 64 * 1024 * 1024
