"""Steps a running step adds to its own workflow: ``taskq.current_job().fan_out``.

The additions are a small ``Workflow`` of their own (``FanOut``: the same ``add``, the
same checks) kept by the run's context. Nothing is written while the step runs: when it
succeeds, the worker turns them into rows (``rows``) that go with its outcome, and the
store writes both in one transaction (``Store.complete_fanout``). So a step that crashes
or fails after adding steps added nothing, and its next run adds them again, once.

Each added step runs after the step that added it (and after the added steps its
``after`` names); the steps after the adding step wait for every added step too (the
store links them). An added step's default name is ``<adding step>/<actor>`` (``-2``,
``-3``, ... when repeated).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from ..jobs import ClaimedJob, StepRow
from ..payload import DEFAULT_MAX_PAYLOAD_BYTES
from ..registry import AnyActor
from ..specs import JobBuilder
from .graph import Step, Workflow
from .plan import step_specs, workflow_row

_builder = JobBuilder(DEFAULT_MAX_PAYLOAD_BYTES)


class FanOut(Workflow):
    """The steps one run adds to its workflow (``current_job().fan_out``)."""

    def __init__(self, adding_step: str) -> None:
        super().__init__("fan-out")
        self.adding_step = adding_step

    def _default_name(self, made: Step) -> str:
        return f"{self.adding_step}/{made.actor_name}"


def rows(job: ClaimedJob, added: FanOut, actors: Mapping[str, AnyActor]) -> tuple[StepRow, ...]:
    """The added steps as rows: each after ``job`` (the adding step) and its own
    ``after``; their downstream among themselves (the store adds the adding step's
    downstream steps). An actor given by name is the worker's own actor of that name.
    Raises a ``TaskqError`` (payload, unknown actor) with nothing written."""
    upstream, specs = step_specs(added, _builder, {}, actors)
    names = [r.name for r in added.steps]
    on_failure = [str(r.on_failure) for r in added.steps]
    made = workflow_row(job.id, added.name, specs, names, upstream, on_failure)
    return tuple(replace(row, upstream=(job.id, *row.upstream)) for row in made.steps)
