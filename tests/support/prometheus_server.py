"""A real Prometheus server for the tests (Debian's ``prometheus`` package, which .ci/run
installs): one process on a free port with its data in a temporary directory, scraping
the targets it is given every second and evaluating the shipped alert rules every
second, read through its HTTP API. ``installed()`` says whether it can run here."""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import yaml

from tests.support.pgbouncer import free_port

RULES = Path(__file__).resolve().parents[2] / "deploy" / "prometheus" / "alerts.yml"
START_TIMEOUT = 30.0
INSTALL = "apt-get install -y prometheus"


def installed() -> str | None:
    return shutil.which("prometheus") or (
        "/usr/bin/prometheus" if Path("/usr/bin/prometheus").exists() else None
    )


class Prometheus:
    def __init__(self, targets: list[str]) -> None:
        self.port = free_port()
        self.dir = Path(tempfile.mkdtemp(prefix="taskq-prometheus-"))
        self.log = self.dir / "prometheus.log"
        self.targets = targets
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> Prometheus:
        binary = installed()
        assert binary, f"prometheus is not installed ({INSTALL})"
        config = self.dir / "prometheus.yml"
        config.write_text(
            yaml.safe_dump(
                {
                    "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
                    "rule_files": [str(RULES)],
                    "scrape_configs": [
                        {"job_name": "taskq", "static_configs": [{"targets": self.targets}]}
                    ],
                }
            )
        )
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(
                [
                    binary,
                    f"--config.file={config}",
                    f"--storage.tsdb.path={self.dir / 'data'}",
                    f"--web.listen-address=127.0.0.1:{self.port}",
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + START_TIMEOUT
        while not self._ready():
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(
                    f"prometheus did not start on port {self.port}; its log:\n"
                    + self.log.read_text(errors="replace")
                )
            time.sleep(0.1)
        return self

    def _ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/-/ready", timeout=2) as answer:
                return bool(answer.status == 200)
        except (urllib.error.URLError, OSError):
            return False

    def api(self, path: str, **params: str) -> Any:
        """``data`` of a successful ``/api/v1/<path>`` answer."""
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        with urllib.request.urlopen(f"{self.url}/api/v1/{path}{query}", timeout=10) as answer:
            body = json.load(answer)
        assert body["status"] == "success", body
        return body["data"]

    def query(self, expr: str) -> list[dict[str, Any]]:
        """The instant vector of ``expr``: ``[{"metric": {...}, "value": [t, "v"]}]``."""
        data = self.api("query", query=expr)
        assert data["resultType"] == "vector", data
        result: list[dict[str, Any]] = data["result"]
        return result

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        shutil.rmtree(self.dir, ignore_errors=True)
