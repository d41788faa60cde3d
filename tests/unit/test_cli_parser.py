"""``taskq`` builds only the parser of the command a line names; nothing it parses or
prints changes for that."""

from __future__ import annotations

import pytest

from taskq.cli import COMMANDS, build_parser

LINES = (
    ["worker", "--actors", "app.tasks:registry", "--max-concurrency", "3", "--queues", "a"],
    ["jobs", "list", "--state", "dead"],
    ["queues", "pause", "emails"],
    ["migrate"],
    ["workgroup", "validate", "wg.toml"],
)


@pytest.mark.parametrize("line", LINES, ids=lambda line: line[0])
def test_a_command_parses_the_same_with_only_its_parser_built(line: list[str]) -> None:
    assert vars(build_parser(line[0]).parse_args(line)) == vars(build_parser().parse_args(line))


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_commands_help_is_the_same_with_only_its_parser_built(command: str) -> None:
    def help_of(parser) -> str:
        (sub,) = (a for a in parser._actions if a.dest == "command")
        return str(sub.choices[command].format_help())

    assert help_of(build_parser(command)) == help_of(build_parser())


def test_the_whole_parser_names_every_command() -> None:
    text = build_parser().format_help()
    assert all(name in text for name in COMMANDS)
