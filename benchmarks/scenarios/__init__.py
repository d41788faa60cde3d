"""Scenario families (issues 6 and 13), one module each; ``CASES`` in run order."""

from __future__ import annotations

from . import (
    ceiling,
    claims,
    cpu,
    dashboard,
    latency,
    memory,
    recovery,
    soak,
    sqlite,
    throughput,
    web,
    workflows,
)
from .base import Case, Metric, lookup

CASES: tuple[Case, ...] = (
    *throughput.CASES,
    *web.CASES,
    *latency.CASES,
    *recovery.CASES,
    *claims.CASES,
    *sqlite.CASES,
    *ceiling.CASES,
    *cpu.CASES,
    *workflows.CASES,
    *dashboard.CASES,
    *throughput.SWEEP,
    *memory.CASES,
    *soak.CASES,
)
FAMILIES = tuple(dict.fromkeys(c.family for c in CASES))

__all__ = ["CASES", "FAMILIES", "Case", "Metric", "lookup"]
