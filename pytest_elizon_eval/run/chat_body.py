"""The chat-completions request an ``output: openai`` entry is sent (docs/format.md#entry-url).

Owns the entry's request keys — ``system`` (a system prompt), ``tools`` (tool
definitions, given inline or as a file) and ``body`` (other body fields, a
template in which ``{{messages}}`` and ``{{input}}`` place the case's
conversation and input) — how they are checked, with a message naming the
key, and how one request is built from them. Pure functions of plain values;
no pytest import here.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["PLACEHOLDERS", "build", "check_body", "check_tools", "load_tools"]

#: What a ``body`` template may place, by name.
PLACEHOLDERS = ("messages", "input")
_PLACEHOLDER = re.compile(r"\{\{\s*([^{}]*?)\s*\}\}")


def _where(trail: tuple[object, ...]) -> str:
    return "body" + "".join(f"[{k}]" if isinstance(k, int) else f".{k}" for k in trail)


def check_body(body: object) -> None:
    """ValueError naming the first thing wrong with a ``body`` template: not a mapping,
    an unknown placeholder, ``{{messages}}`` inside a longer string, ``messages`` given
    as fixed content (the conversation goes there), or placed twice."""
    if not isinstance(body, Mapping):
        raise ValueError(f"body must be a mapping of request fields, found "
                         f"{type(body).__name__}")
    if "messages" in body and body["messages"] != "{{messages}}":
        raise ValueError("body.messages is where the conversation goes: leave it out, or "
                         "write messages: '{{messages}}'")
    placed = 0
    stack: list[tuple[object, tuple[object, ...]]] = [(body, ())]
    while stack:
        node, trail = stack.pop()
        if isinstance(node, Mapping):
            stack.extend((v, (*trail, k)) for k, v in node.items())
        elif isinstance(node, list):
            stack.extend((v, (*trail, i)) for i, v in enumerate(node))
        elif isinstance(node, str):
            for match in _PLACEHOLDER.finditer(node):
                name = match.group(1)
                if name not in PLACEHOLDERS:
                    raise ValueError(f"{_where(trail)}: unknown placeholder "
                                     f"{match.group(0)!r}; use '{{{{messages}}}}' (the "
                                     "conversation) or '{{input}}' (the case's input)")
                if name == "messages":
                    if node.strip() != match.group(0):
                        raise ValueError(f"{_where(trail)}: '{{{{messages}}}}' is a list and "
                                         "must be the whole value, not part of a string")
                    placed += 1
            if "{{" in _PLACEHOLDER.sub("", node):
                raise ValueError(f"{_where(trail)}: unclosed placeholder in {node!r}; write "
                                 "'{{input}}' or '{{messages}}'")
    if placed > 1:
        raise ValueError("body places '{{messages}}' more than once; place it once")


def check_tools(tools: object, where: str = "tools") -> None:
    """ValueError naming the first tool definition that is not an OpenAI tool: a mapping
    with a ``type``, and for ``type: function`` a ``function`` with a ``name``."""
    if not isinstance(tools, list):
        raise ValueError(f"{where} must be a list of tool definitions, found "
                         f"{type(tools).__name__}")
    for index, tool in enumerate(tools):
        if not isinstance(tool, Mapping) or not isinstance(tool.get("type"), str):
            raise ValueError(f"{where}[{index}] is not a tool definition: expected a mapping "
                             "with a 'type' (e.g. {type: function, function: {name: …, "
                             "parameters: {…}}})")
        if tool["type"] == "function":
            function = tool.get("function")
            if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
                raise ValueError(f"{where}[{index}] (type function) has no function.name")


def load_tools(path: Path) -> list[Any]:
    """Tool definitions from a JSON or YAML file (a list, or a mapping with ``tools``);
    ValueError saying what is wrong with the file."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"cannot read the tools file {path}: {exc.strerror or exc}") from None
    if path.suffix.lower() == ".json":
        try:
            data = json.loads(text)
        except (ValueError, RecursionError) as exc:
            raise ValueError(f"the tools file {path} is not valid JSON: {exc}") from None
    else:
        import yaml  # deferred: only a YAML tools file needs it

        try:
            data = yaml.safe_load(text)
        except (yaml.YAMLError, RecursionError) as exc:
            raise ValueError(f"the tools file {path} is not valid YAML: {exc}") from None
    if isinstance(data, Mapping) and "tools" in data:
        data = data["tools"]
    check_tools(data, f"the tools file {path}")
    return list(data)


def _fill(node: Any, messages: list[dict[str, Any]], case_input: object) -> Any:
    if isinstance(node, Mapping):
        return {k: _fill(v, messages, case_input) for k, v in node.items()}
    if isinstance(node, list):
        return [_fill(v, messages, case_input) for v in node]
    if isinstance(node, str):
        whole = _PLACEHOLDER.fullmatch(node.strip())
        if whole is not None:
            return messages if whole.group(1) == "messages" else case_input
        text = case_input if isinstance(case_input, str) else json.dumps(case_input,
                                                                          ensure_ascii=False)
        return _PLACEHOLDER.sub(lambda m: text, node)
    return node


def _places_messages(node: Any) -> bool:
    if isinstance(node, Mapping):
        return any(_places_messages(v) for v in node.values())
    if isinstance(node, list):
        return any(_places_messages(v) for v in node)
    return isinstance(node, str) and node.strip() == "{{messages}}"


def build(messages: list[dict[str, Any]], case_input: object, *, model: str | None = None,
          system: str | None = None, tools: list[Any] | None = None,
          body: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """One request: the ``body`` template filled in (the conversation in ``messages``
    unless the template places it), ``model`` and ``tools`` set, the ``system`` prompt
    first in the conversation."""
    if system is not None:
        messages = [{"role": "system", "content": system}, *messages]
    template = copy.deepcopy(dict(body or {}))
    request: dict[str, Any] = _fill(template, messages, case_input)
    if not _places_messages(template):
        request["messages"] = messages
    if model:
        request["model"] = model
    if tools is not None:
        request["tools"] = tools
    return request
