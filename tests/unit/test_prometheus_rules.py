"""The shipped alert rules (deploy/prometheus/alerts.yml) and their promtool unit tests
(deploy/prometheus/*_test.yml): the rules load, every test passes, and every alert is
tested both firing and not firing. Needs ``promtool`` (Debian's ``prometheus`` package,
which .ci/run installs); without it these tests skip and say so."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

PROMETHEUS = Path(__file__).resolve().parents[2] / "deploy" / "prometheus"
RULES = PROMETHEUS / "alerts.yml"
RULE_TESTS = sorted(PROMETHEUS.glob("*_test.yml"))
PROMTOOL = shutil.which("promtool")

needs_promtool = pytest.mark.skipif(
    PROMTOOL is None, reason="promtool is not installed (apt-get install prometheus)"
)


def alert_names() -> list[str]:
    groups = yaml.safe_load(RULES.read_text())["groups"]
    return [rule["alert"] for group in groups for rule in group["rules"] if "alert" in rule]


def rule_cases() -> list[dict[str, Any]]:
    """Every ``alert_rule_test`` entry of every test file."""
    cases = []
    for path in RULE_TESTS:
        document = yaml.safe_load(path.read_text())
        assert document["rule_files"] == ["alerts.yml"], path
        for test in document["tests"]:
            cases += test.get("alert_rule_test", [])
    return cases


def promtool(*args: str) -> subprocess.CompletedProcess[str]:
    assert PROMTOOL is not None
    return subprocess.run(
        [PROMTOOL, *args], cwd=PROMETHEUS, capture_output=True, text=True, timeout=120
    )


@needs_promtool
def test_the_rules_load() -> None:
    result = promtool("check", "rules", RULES.name)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(alert_names())} rules found" in result.stdout


@needs_promtool
@pytest.mark.parametrize("path", RULE_TESTS, ids=lambda p: p.name)
def test_the_rule_tests_pass(path: Path) -> None:
    result = promtool("test", "rules", path.name)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


def test_every_alert_is_tested_firing_and_quiet() -> None:
    """Read without promtool: a new alert without a test (or tested one way only) fails
    here whatever is installed."""
    assert RULE_TESTS, "no deploy/prometheus/*_test.yml"
    cases = rule_cases()
    firing = {c["alertname"] for c in cases if c.get("exp_alerts")}
    quiet = {c["alertname"] for c in cases if not c.get("exp_alerts")}
    names = alert_names()
    assert len(names) == len(set(names))
    assert [n for n in names if n not in firing] == []
    assert [n for n in names if n not in quiet] == []
    assert (firing | quiet) <= set(names)
    for case in cases:  # what Alertmanager receives is checked, not only that it fires
        for alert in case.get("exp_alerts") or []:
            assert set(alert.get("exp_annotations", {})) == {"summary", "description"}, case
