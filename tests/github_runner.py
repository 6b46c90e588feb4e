"""Workflow commands as GitHub's runner finds them in a step's output (for the tests).

The rules followed (actions/runner, ActionCommandManager and ActionCommand):
- output is split into lines at LF, CRLF and a bare CR;
- after ``::stop-commands::TOKEN`` nothing is a command until a line ``::TOKEN::``;
- a line whose text, leading whitespace trimmed, starts with ``::`` is a command
  ``::name key=value,key=value::data``;
- otherwise the legacy form ``##[name key=value;…]data`` counts anywhere in a line;
- data unescapes ``%0D``, ``%0A``, ``%25``; properties also ``%3A`` and ``%2C``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field


@dataclass
class Command:
    name: str
    properties: dict[str, str] = field(default_factory=dict)
    data: str = ""


def _unescape_data(text: str) -> str:
    return text.replace("%0D", "\r").replace("%0A", "\n").replace("%25", "%")


def _unescape_property(text: str) -> str:
    return _unescape_data(text.replace("%3A", ":").replace("%2C", ","))


def _v2(line: str) -> Command | None:
    body = line.lstrip()
    if not body.startswith("::"):
        return None
    end = body.find("::", 2)
    if end < 0:
        return None
    head, data = body[2:end], body[end + 2:]
    name, _, props = head.partition(" ")
    if not name:
        return None
    properties = {}
    for pair in filter(None, props.split(",")):
        key, _, value = pair.partition("=")
        properties[key] = _unescape_property(value)
    return Command(name, properties, _unescape_data(data))


_LEGACY = re.compile(r"##\[([^\]\s;]+)([^\]]*)\](.*)")


def parse(output: str) -> list[Command]:
    commands: list[Command] = []
    stop_token: str | None = None
    for line in re.split(r"\r\n|\n|\r", output):
        if stop_token is not None:
            if line.strip() == f"::{stop_token}::":
                stop_token = None
            continue
        command = _v2(line)
        if command is None:
            legacy = _LEGACY.search(line)
            if legacy:
                command = Command(legacy.group(1), {}, legacy.group(3))
        if command is None:
            continue
        if command.name == "stop-commands":
            stop_token = command.data
        commands.append(command)
    return commands
