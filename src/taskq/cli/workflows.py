"""``taskq workflows [--json]``, ``taskq workflows show ID [--json]`` and
``taskq workflows cancel ID`` (docs/workflows.md)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from .. import redaction
from . import args
from .output import EXIT_OK, print_json, print_table, with_client

if TYPE_CHECKING:
    from ..client import AsyncClient
    from ..workflows.model import StepInfo, WorkflowInfo


def add_workflows(sub: args.Subparsers) -> None:
    from ..workflows.model import WorkflowState  # only when this command's parser is built

    wf = sub.add_parser(
        "workflows", help="recent workflows with their state and step counts; show, cancel"
    )
    wf.set_defaults(run=cmd_list)
    wf.add_argument(
        "--state", choices=[s.value for s in WorkflowState], help="only this state (default: all)"
    )
    wf.add_argument("--limit", type=args.positive_int, default=50, help="at most this many")
    args.json_flag(wf, "a JSON array of workflow objects (without their steps)")
    wf_sub = args.subcommands(wf, "workflows_command", "show|cancel")
    show = wf_sub.add_parser("show", help="one workflow: every step, its state and its after")
    show.set_defaults(run=cmd_show)
    show.add_argument("id", help="the workflow's id")
    args.json_flag(show, "one JSON workflow object with its steps")
    cancel = wf_sub.add_parser(
        "cancel", help="cancel a workflow: queued steps now, running ones asked to stop"
    )
    cancel.set_defaults(run=cmd_cancel)
    cancel.add_argument("id", help="the workflow's id")


def _shown(info: WorkflowInfo, *, with_steps: bool) -> dict[str, Any]:
    out: dict[str, Any] = redaction.value(info.to_dict(with_steps=with_steps))
    return out


def cmd_list(ns: argparse.Namespace) -> int:
    found = with_client(ns, lambda c: c.workflows(state=ns.state, limit=ns.limit))
    if ns.json:
        print_json([_shown(w, with_steps=False) for w in found])
        return EXIT_OK
    print_table(
        "{:<36}  {:<24.24} {:<10} {:>6} {:>6} {:>6} {:>9}  {}",
        ("id", "name", "state", "steps", "left", "dead", "cancelled", "created_at"),
        (
            (
                str(w.id),
                redaction.text(w.name),
                w.state,
                w.step_count,
                w.steps_left,
                w.failed_steps,
                w.cancelled_steps,
                w.created_at.isoformat(timespec="seconds"),
            )
            for w in found
        ),
    )
    return EXIT_OK


def _reason(step: StepInfo) -> str:
    if step.dead_reason:
        return step.dead_reason
    if step.cancelled_by:
        return f"cancelled by {step.cancelled_by}"
    return ""


def cmd_show(ns: argparse.Namespace) -> int:
    info = with_client(ns, lambda c: c.workflow(ns.id))
    if ns.json:
        print_json(_shown(info, with_steps=True))
        return EXIT_OK
    print(f"workflow {info.id}  {redaction.text(info.name)!r}")
    print(
        f"state {info.state}: {info.step_count} steps, {info.steps_left} not ended, "
        f"{info.failed_steps} dead, {info.cancelled_steps} cancelled"
    )
    if info.cancelled_by:
        print(f"cancelled by {redaction.text(info.cancelled_by)}")
    print()
    print_table(
        "{:<24.24} {:<10} {:<20.20} {:>3}  {:<30.30}  {}",
        ("step", "state", "actor", "att", "after", "reason"),
        (
            (
                redaction.text(s.name),
                s.state,
                s.actor,
                s.attempts,
                ", ".join(s.after) or "-",
                _reason(s) + ("" if s.on_failure == "cancel" else "  (on_failure=run)"),
            )
            for s in info.steps
        ),
    )
    return EXIT_OK


def cmd_cancel(ns: argparse.Namespace) -> int:
    from ..inputs import who

    async def go(client: AsyncClient) -> int:
        moved = await client.cancel_workflow(ns.id, by=f"cli:{who()}")
        print(f"cancelled workflow {ns.id}: {moved} step(s) cancelled or asked to stop")
        return EXIT_OK

    return with_client(ns, go)
