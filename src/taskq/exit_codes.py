"""Every exit code taskq's processes end with, in one place.

====  ==================  ==================================================================
code  name                meaning
====  ==================  ==================================================================
0     OK                  done; ``worker`` / ``workgroup start``: a clean shutdown after a
                          signal (or, for a worker, a vanished workgroup parent)
1     ERROR               one ``taskq: ...`` line says why: bad input, unreadable file,
                          unreachable store; ``worker``: cannot start (bad ``--actors``,
                          store unreachable or not migrated, actor-config drift)
2     USAGE               bad command-line usage (argparse)
3     CRASH_LOOP          ``worker``: the crash-loop guard tripped (every consumer gave up)
3     ALREADY_FINISHED    ``jobs cancel``: a job had already finished; nothing changed for it
4     COMPONENT_FAILED    ``worker``: a part of the worker died unexpectedly
5     ORPHANED            ``worker``: a workgroup child whose supervisor died before it
                          started
70    POOL_INIT_FAILED    a CPU pool process whose initializers failed (seen by the pool,
                          never by a shell)
141   BROKEN_PIPE         the output went to a reader that stopped reading (128 + SIGPIPE)
====  ==================  ==================================================================

Only constants: ``parentdeath`` imports this before anything else of taskq.
"""

OK = 0
ERROR = 1
CANNOT_START = ERROR  # the worker's name for it
USAGE = 2
CRASH_LOOP = 3
ALREADY_FINISHED = 3  # jobs cancel (another command than the worker's CRASH_LOOP)
COMPONENT_FAILED = 4
ORPHANED = 5
POOL_INIT_FAILED = 70
BROKEN_PIPE = 128 + 13

#: the codes a worker process exits with by its own decision, never a job's os._exit /
#: sys.exit (taskq.blame: such an exit of a workgroup child blames no job)
WORKER_OWN = frozenset({OK, ERROR, CRASH_LOOP, COMPONENT_FAILED, ORPHANED})
