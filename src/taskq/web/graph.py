"""A workflow's graph laid out for the dashboard's server-side SVG (no script draws it).

Steps are placed left to right in layers: a step's layer is one more than the deepest of
the steps it runs after (the longest path from a step with none), and in a layer they
keep the order they were added. Every step is a box coloured by its state (CSS classes
``wf-<state>``, in the stylesheet); every ``after`` an edge from the upstream box's right
side to the downstream box's left side. The template turns this into SVG elements, so
Jinja escapes every name. Past ``MAX_DRAWN`` steps nothing is drawn (the table lists
them).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..workflows.model import StepInfo

MAX_DRAWN = 300
BOX_W, BOX_H = 170, 30
GAP_X, GAP_Y = 60, 14
MARGIN = 10
LABEL_CHARS = 22


@dataclass(frozen=True, slots=True)
class Box:
    step: StepInfo
    x: int
    y: int
    label: str  # the name, cut to fit the box

    @property
    def state(self) -> str:
        return self.step.state


@dataclass(frozen=True, slots=True)
class Edge:
    path: str  # an SVG path: a curve from the upstream box to the downstream one
    state: str  # the upstream step's state (an edge out of a dead step is drawn so)


@dataclass(frozen=True, slots=True)
class Drawing:
    width: int
    height: int
    boxes: list[Box]
    edges: list[Edge]


def layers(steps: Sequence[StepInfo]) -> list[int]:
    """Each step's layer: 0 without upstream steps, else one past its deepest one (Kahn's
    order over ``after``; no recursion, so a chain of any length is fine)."""
    index = {s.name: i for i, s in enumerate(steps)}
    downstream: list[list[int]] = [[] for _ in steps]
    waiting = [0] * len(steps)
    for i, step in enumerate(steps):
        for name in step.after:
            if name in index:
                downstream[index[name]].append(i)
                waiting[i] += 1
    layer = [0] * len(steps)
    ready = [i for i, n in enumerate(waiting) if n == 0]
    while ready:
        i = ready.pop()
        for d in downstream[i]:
            layer[d] = max(layer[d], layer[i] + 1)
            waiting[d] -= 1
            if waiting[d] == 0:
                ready.append(d)
    return layer


def draw(steps: Sequence[StepInfo]) -> Drawing | None:
    """The drawing of ``steps`` (None past ``MAX_DRAWN`` or for none)."""
    if not steps or len(steps) > MAX_DRAWN:
        return None
    placed = layers(steps)
    rows: dict[int, int] = {}
    boxes: list[Box] = []
    for step, layer in zip(steps, placed, strict=True):
        row = rows.get(layer, 0)
        rows[layer] = row + 1
        label = step.name if len(step.name) <= LABEL_CHARS else step.name[: LABEL_CHARS - 1] + "…"
        x = MARGIN + layer * (BOX_W + GAP_X)
        y = MARGIN + row * (BOX_H + GAP_Y)
        boxes.append(Box(step, x, y, label))
    by_name = {b.step.name: b for b in boxes}
    edges = []
    for box in boxes:
        for name in box.step.after:
            up = by_name.get(name)
            if up is None:
                continue
            x1, y1 = up.x + BOX_W, up.y + BOX_H // 2
            x2, y2 = box.x, box.y + BOX_H // 2
            bend = max((x2 - x1) // 2, 20)
            path = f"M{x1},{y1} C{x1 + bend},{y1} {x2 - bend},{y2} {x2},{y2}"
            edges.append(Edge(path, up.state))
    width = MARGIN * 2 + (max(placed) + 1) * (BOX_W + GAP_X) - GAP_X
    height = MARGIN * 2 + max(rows.values()) * (BOX_H + GAP_Y) - GAP_Y
    return Drawing(width, height, boxes, edges)
