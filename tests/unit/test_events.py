"""The event vocabulary (taskq/events.py): every call names a declared event with its
declared fields, every declared event is logged somewhere, names follow the rule
(docs/events.md is checked by test_docs_generated.py)."""

from __future__ import annotations

import ast
import json
import logging
import re
from pathlib import Path

from taskq import events, metrics
from taskq.logs import get_logger

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "taskq"
KEBAB = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)+$")


def _calls() -> list[tuple[str, int, str, list[str]]]:
    """(file, line, event constant, keyword names) of every ``log.event(...)`` in src/."""
    found = []
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "event"
                and node.args
            ):
                continue
            names = [a.id for a in ast.walk(node.args[0]) if isinstance(a, ast.Name)]
            keywords = [k.arg for k in node.keywords if k.arg not in (None, "exc_info")]
            for name in names:
                if name.isupper():
                    found.append((str(path.relative_to(ROOT)), node.lineno, name, keywords))
    return found


def test_every_call_names_a_declared_event_with_its_declared_fields() -> None:
    problems = []
    for where, line, name, keywords in _calls():
        event = getattr(events, name, None)
        if not isinstance(event, events.Event):
            problems.append(f"{where}:{line}: {name} is not an event of taskq.events")
            continue
        extra = [k for k in keywords if k not in event.fields]
        if extra:
            problems.append(f"{where}:{line}: {event.name} does not declare {extra}")
    assert problems == []


def test_every_declared_event_is_logged_somewhere() -> None:
    used = {name for _, _, name, _ in _calls()}
    constants = {n for n, v in vars(events).items() if isinstance(v, events.Event)}
    assert sorted(constants - used) == []
    assert len(constants) == len(events.ALL)


def test_names_are_kebab_case_unless_the_contract_spells_them() -> None:
    odd = [n for n in events.ALL if not KEBAB.match(n) and n not in events.FROZEN]
    assert odd == []


def test_no_event_names_its_error_text_otherwise_than_error() -> None:
    # one field for error text: `exception` is the traceback (exc_info), `reason` a word
    for event in events.ALL.values():
        assert "exception" not in event.fields, event.name
        assert "component" not in event.fields, event.name


def test_counts_name_metrics_and_fields_that_exist() -> None:
    for event in events.ALL.values():
        for count in event.counts:
            family = getattr(metrics, count.metric)
            assert len(count.labels) == len(family.labelnames), event.name
            assert set(count.labels) <= set(event.fields), event.name


def test_an_event_counts_its_metric_even_when_its_level_is_not_logged() -> None:
    log = get_logger("taskq.tests.events")
    logging.getLogger("taskq.tests.events").setLevel(logging.CRITICAL)
    family = metrics.process_pool_recycles.labels("max_tasks")
    before = family.value
    log.event(events.PROCESS_POOL_RECYCLED, reason="max_tasks", pid=1, slot=0, tasks_done=3)
    assert family.value == before + 1


def test_the_hand_written_parent_gone_line_is_the_declared_event(capfd) -> None:
    # parentdeath writes it before logging exists; it must still be the event declared
    from taskq import parentdeath

    parentdeath._say_orphaned(1)
    line = json.loads(capfd.readouterr().err)
    assert line["event"] == events.PARENT_GONE.name
    assert line["level"] == logging.getLevelName(events.PARENT_GONE.level).lower()
    extra = set(line) - {"event", "level", "timestamp"} - set(events.PARENT_GONE.fields)
    assert extra == set()
