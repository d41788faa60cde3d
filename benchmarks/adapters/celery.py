"""Celery 5.7 on the local Redis (database 10, keys under the run's ``--db-prefix``).

Other benchmarks reuse its venv and app: ``ADAPTER.prepare(offline=False).python`` is
the interpreter of ``benchmarks/.venvs/celery``; ``benchmarks/peers/celery_app.py`` is
the app (see its docstring).
"""

from __future__ import annotations

from .base import Adapter

ADAPTER = Adapter(
    name="celery",
    label="Celery (Redis)",
    dist="celery",
    script="celery_bench.py",
    backend="redis",
    redis_db=10,
    redis_key_prefix=True,
    requirements=("celery[redis]>=5.7,<5.8",),
    defaults="Redis broker, results ignored; `celery worker` defaults: prefork pool at its "
    "default concurrency (os.cpu_count() processes), prefetch multiplier 4, early acks; "
    "at a given concurrency (32, the sweep): --pool threads; task.delay() / "
    "group(...).apply_async()",
)
