"""What multiprocessing's fork server imports before it forks a pool process.

The pool names this module in ``set_forkserver_preload``; nothing else imports it (its
import changes the importing process's SIGTERM disposition, which only the fork server
wants: ``signals.py``). Preloading the child's module means each pool process starts with
``taskq`` already imported.
"""

from __future__ import annotations

from . import child  # noqa: F401  (imported here once, not in every pool process)
from .signals import ignore_in_fork_server

ignore_in_fork_server()
