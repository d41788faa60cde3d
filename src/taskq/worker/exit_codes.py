"""Exit codes of ``taskq worker`` (``taskq.worker.main.run``)."""

from .. import parentdeath

OK = 0  # clean shutdown after SIGTERM/SIGINT or a vanished parent
CANNOT_START = 1  # bad --actors reference, store unreachable, schema missing, actor drift
CRASH_LOOP = 3  # the crash-loop guard tripped: consumers kept dying (> 10 in 60 s)
COMPONENT_FAILED = 4  # a part of the worker (fetcher, acker, heartbeat, ...) died
ORPHANED = parentdeath.ORPHANED  # a workgroup child whose supervisor died before it started
