"""No taskq module reaches into another module's private members (issue 25: ``Client``
reached into six of ``AsyncClient``'s, ``taskq.testing`` into ``Client._async`` and
``Client._call``): a ``thing._name`` in ``src/taskq`` on anything but ``self`` / ``cls``
must name something that module defines itself (another instance of its own class, as
``Registry.include`` reads ``other._actors``). What a module needs of another is a
public member of it."""

from __future__ import annotations

import ast
from pathlib import Path

import taskq

SRC = Path(taskq.__file__).parent

#: reach-ins into the standard library, each with its reason
ALLOWED = {
    # argparse has no public list of a parser's actions; Django's WORKER setting is
    # checked against the very parser `taskq worker` uses
    ("contrib/django/worker.py", "parser._actions"),
    ("contrib/django/worker.py", "argparse._AppendAction"),
}


def _defined(tree: ast.Module) -> set[str]:
    """Every private name the module defines: attributes it assigns (``x._a = ...``,
    slots, class bodies), functions, classes and module-level names."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            names.add(node.value)  # __slots__ = ("_a", ...)
    return names


def reach_ins(src: Path = SRC) -> list[str]:
    found = []
    for path in sorted(src.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        own = _defined(tree)
        rel = path.relative_to(src).as_posix()
        for node in ast.walk(tree):
            if not isinstance(node, ast.Attribute):
                continue
            attr = node.attr
            if not attr.startswith("_") or attr.startswith("__"):
                continue
            if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                continue
            shown = ast.unparse(node)
            if shown.startswith(("sys._", "os._")) or (rel, shown) in ALLOWED:
                continue
            if attr not in own:
                found.append(f"{rel}:{node.lineno}: {shown}")
    return found


def test_no_module_reaches_into_another_modules_private_members() -> None:
    assert reach_ins() == []


def test_the_check_finds_a_reach_in_and_leaves_a_modules_own_alone(tmp_path: Path) -> None:
    (tmp_path / "client.py").write_text(
        "class Client:\n"
        "    def __init__(self):\n"
        "        self._loop = None\n"
        "    def same(self, other):\n"
        "        return other._loop\n"  # its own class's member: fine
    )
    (tmp_path / "testing.py").write_text("def drain(client):\n    return client._loop\n")
    assert reach_ins(tmp_path) == ["testing.py:2: client._loop"]
