"""The events of workflows (declared with ``declare``; listed in docs/events.md)."""

from __future__ import annotations

from .declare import INFO, WARNING, declare

# -- workflows (docs/workflows.md) --------------------------------------------------------
_e = declare("workflows")
STEP_UPSTREAM_UNREADABLE = _e(
    "step-upstream-unreadable",
    WARNING,
    "job actor step error",
    "a workflow step's upstream results could not be read (the store did not answer): the "
    "step is given back, not charged, and runs when the store answers",
)
STEPS_ADDED = _e(
    "steps-added",
    INFO,
    "job actor step count",
    "a workflow step that succeeded added `count` steps to its workflow (its fan-out); they "
    "are written with its outcome",
)
