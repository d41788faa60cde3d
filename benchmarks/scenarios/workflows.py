"""(l) Workflows (issue 22): a group of 1,000 no-op steps and one fan-in step after all of
them, against the same 1,000 bodies as plain jobs, each system at its defaults (taskq:
``taskq.group(..., then=...)``, the real ``taskq worker``; Celery: ``chord(group(...),
callback)`` on Redis with its result backend, ``celery worker`` prefork); and the
enqueue of one 10,000-step workflow (9,999 side by side and their fan-in), the call
alone. Bodies and timing: ``peers/_workflows.py``."""

from __future__ import annotations

from .base import Case, Metric

FANIN_STEPS = 1000
ENQUEUE_STEPS = 10_000
PEERS = ("celery",)

CASES = (
    Case(
        id="wf_fanin",
        family="workflows",
        title="(l) 1,000-step group + a fan-in step vs 1,000 plain jobs",
        script_scenario="wf_fanin",
        subject="taskq",
        peers=PEERS,
        full={"n": FANIN_STEPS, "batch": 1000, "reps": 5},
        quick={"n": 200, "batch": 200, "reps": 1},
        metrics=(
            Metric("fanin_s", "group of 1,000 + fan-in, first body -> fan-in done", "s", False, 3),
            Metric("plain_s", "the same 1,000 bodies as plain jobs", "s", False, 3),
            Metric("overhead_x", "workflow time / plain jobs' time (same system)", "x", False, 2),
            Metric("fanin_s_with_startup", "group + fan-in, with worker start-up", "s", False, 3),
        ),
    ),
    Case(
        id="wf_enqueue",
        family="workflows",
        title="(l) enqueue one 10,000-step workflow",
        script_scenario="wf_enqueue",
        subject="taskq",
        peers=PEERS,
        full={"n": ENQUEUE_STEPS, "runs": 3},
        quick={"n": 1000, "runs": 1},
        metrics=(
            Metric("enqueue_s", "enqueue of the workflow (the call)", "s", False, 3),
            Metric("steps_per_s", "steps enqueued per second", "steps/s"),
            Metric("build_s", "building it before the call", "s", False, 3),
        ),
    ),
)
