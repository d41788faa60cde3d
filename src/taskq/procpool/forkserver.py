"""multiprocessing's fork server for the pool: what it preloads, and starting it early.

Every pool process is forked by the fork server, which imports ``preload.py`` (``taskq``
and the child's module) once, before its first fork. Started by the pool's first
``Process.start()``, that import (~120 ms) and the server's own interpreter were on the
path to a worker's first CPU job after everything else the worker starts; ``start_now``
(the worker calls it as soon as its registry says it will run a pool) starts the server
at once, so it imports while the worker goes on importing its store and connecting, and
the pool's first processes fork from a server that is ready. Starting it does not wait
for its import (the first fork does), and it exits with its owner (it watches a pipe
the owner holds), so a worker that then fails to start leaves nothing behind.
"""

from __future__ import annotations

import multiprocessing
from multiprocessing import forkserver
from multiprocessing.context import BaseContext

#: the module the fork server imports before it forks (``preload.py``; nothing else
#: imports it: its import makes the importing process ignore SIGTERM)
PRELOAD = "taskq.procpool.preload"


def configure(ctx: BaseContext) -> None:
    """Have ``ctx``'s fork server (if it is a forkserver context) preload ``PRELOAD``."""
    if ctx.get_start_method() == "forkserver":
        ctx.set_forkserver_preload([PRELOAD])


def start_now() -> None:
    """Start the fork server (preloading ``PRELOAD``) now, if it is not running yet."""
    configure(multiprocessing.get_context("forkserver"))
    forkserver.ensure_running()
