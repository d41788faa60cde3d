"""The user docs say what the code does: the workgroup reference is the example file,
its numbers are the supervisor's, and no page points at files users do not have."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from taskq.workgroup import parse_config

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "workgroup.toml"
USER_DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def test_the_workgroup_reference_is_the_example_file_verbatim() -> None:
    docs = (ROOT / "docs" / "workgroups.md").read_text()
    assert EXAMPLE.read_text() in docs


def test_the_example_s_shutdown_numbers_are_the_supervisor_s() -> None:
    text = EXAMPLE.read_text()
    config = parse_config(tomllib.loads(text), str(EXAMPLE))
    worst = config.supervisor.child_worst_case_exit
    grace = config.supervisor.child_shutdown_grace
    assert f"{worst:g} s worst-case clean exit: {grace:g} s grace" in text
    docs = (ROOT / "docs" / "workgroups.md").read_text()
    assert f"need at\nmost {worst:g} s" in docs


def test_no_user_doc_talks_about_seeds_contracts_or_spans() -> None:
    found = []
    for page in USER_DOCS:
        for number, line in enumerate(page.read_text().splitlines(), 1):
            if re.search(r"\bseed (?:format|document|\d)|\bthe seeds\b|CONTRACT|span group", line):
                found.append(f"{page.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not found, "\n".join(found)


def test_the_restart_alert_is_described_as_its_rate() -> None:
    alerts = (ROOT / "deploy" / "prometheus" / "alerts.yml").read_text()
    assert "rate(taskq_pool_worker_restarts_total[5m]) > 0.1" in alerts
    worker = " ".join((ROOT / "docs" / "worker.md").read_text().split())
    assert "more than one restart every 10 seconds" in worker
