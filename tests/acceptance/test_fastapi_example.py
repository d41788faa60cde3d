"""examples/fastapi_app over HTTP: a real uvicorn serving it, a real `taskq worker`
running its jobs, on Postgres. The order and its job are written in one transaction
(the request's SQLAlchemy AsyncSession): both, or neither."""

from __future__ import annotations

import asyncio
import json
import os
import re
import secrets
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict
from sqlalchemy.engine import URL

from tests.support.django_project import LogProcess
from tests.support.helpers import migrate, wait_until

ROOT = Path(__file__).resolve().parents[2]
ACTORS = "examples.fastapi_app.tasks:registry"
pytestmark = pytest.mark.slow


def _sqlalchemy_url(dsn: str, schema: str) -> str:
    params = conninfo_to_dict(dsn)
    url = URL.create(
        "postgresql+psycopg",
        username=params.get("user"),
        password=params.get("password"),
        host=params.get("host"),
        port=int(params["port"]) if params.get("port") else None,
        database=params.get("dbname"),
        query={"options": f"-c search_path={schema}"},
    )
    return url.render_as_string(hide_password=False)


@pytest.fixture
def served(pg_dsn: str, tmp_path: Path) -> Iterator[dict[str, Any]]:
    token = secrets.token_hex(5)
    taskq_schema, app_schema = f"taskq_fa_{token}", f"app_fa_{token}"
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{app_schema}"')
    asyncio.run(migrate(pg_dsn, taskq_schema))
    env = {k: v for k, v in os.environ.items() if not k.startswith("TASKQ_")}
    env.update(
        TASKQ_DSN=pg_dsn,
        TASKQ_SCHEMA=taskq_schema,
        TASKQ_LOG_FORMAT="json",
        DATABASE_URL=_sqlalchemy_url(pg_dsn, app_schema),
        PYTHONPATH=str(ROOT),
    )
    server = LogProcess(
        [sys.executable, "-m", "uvicorn", "examples.fastapi_app.app:app", "--port", "0"],
        cwd=ROOT,
        env=env,
        log=tmp_path / "uvicorn.log",
    )
    worker = LogProcess(
        [sys.executable, "-m", "taskq", "worker", "--actors", ACTORS, "--poll-interval", "0.2"],
        cwd=ROOT,
        env=env,
        log=tmp_path / "worker.log",
    )
    try:

        def port() -> int | None:
            if server.proc.poll() is not None:
                raise AssertionError("uvicorn exited:\n" + server.log_path.read_text())
            found = re.search(r"running on http://127\.0\.0\.1:(\d+)", server.log_path.read_text())
            return int(found.group(1)) if found else None

        base = f"http://127.0.0.1:{wait_until(port, timeout=60, what='uvicorn to listen')}"
        worker.wait_for_event("worker-started")
        yield {"base": base, "server": server, "worker": worker}
    finally:
        for proc in (server, worker):
            proc.stop(signal.SIGTERM)
        with psycopg.connect(pg_dsn, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{app_schema}" CASCADE')
            conn.execute(f'DROP SCHEMA IF EXISTS "{taskq_schema}" CASCADE')


def _call(method: str, url: str, body: Any = None) -> tuple[int, Any]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        url, data=data, method=method, headers={"content-type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_the_order_and_its_job_commit_together_or_not_at_all(served: dict[str, Any]) -> None:
    base = served["base"]
    status, created = _call("POST", f"{base}/orders", {"note": "two lamps"})
    assert status == 201, created

    def done() -> dict[str, Any] | None:
        _, job = _call("GET", f"{base}/jobs/{created['job']}")
        return job if job.get("state") == "succeeded" else None

    job = wait_until(done, timeout=60, what="the receipt job to succeed")
    assert job["result"] == f"receipt for order {created['order']}: two lamps"

    status, failed = _call("POST", f"{base}/orders", {"note": "never", "fail": True})
    assert status == 409, failed
    gone = failed["detail"]["rolled_back_job"]
    assert _call("GET", f"{base}/jobs/{gone}") == (404, {"detail": "no such job"})

    assert served["server"].stop(signal.SIGINT) == 0  # the lifespan closes the client
    assert "Application shutdown complete" in served["server"].log_path.read_text()


def test_import_taskq_loads_neither_fastapi_nor_starlette() -> None:
    code = (
        "import sys, taskq, taskq.contrib.fastapi; "
        "print('fastapi' in sys.modules, 'starlette' in sys.modules)"
    )
    bare = "import sys, taskq; print('fastapi' in sys.modules, 'starlette' in sys.modules)"
    assert subprocess.check_output([sys.executable, "-c", bare], text=True).split() == [
        "False",
        "False",
    ]
    # the helper itself needs Starlette only
    assert subprocess.check_output([sys.executable, "-c", code], text=True).split() == [
        "False",
        "True",
    ]
