"""The ``elizon_prompt`` fixture: a package's registry prompts, rendered by name.

The fixture returns a :class:`PromptRenderer` for the package the requesting test belongs
to (docs/format.md#prompts): an Elizon case's own package, or for any other test the
package of the nearest ``elizon.yaml`` at or above its file. Rendering picks the version
the case's variant pins (docs/format.md#variants), else the default (the last listed),
unless the caller names one (``"support@1"``); each prompt a case rendered is appended
once, in order, to the case's ``rendered_prompts``, which its result records. The
renderer works for as long as its case runs, so an ``elizon_entry`` fixture may keep it
and render per input at call time. Each package's prompts are read once per session.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from ..decide.results_data import PromptRecord
from ..errors import ELIZON_PROMPT_INVALID, ElizonError
from ..load.discovery import display_path, read_once
from ..load.prompts import PromptRegistry, load_registry, split_reference

__all__ = ["PromptRenderer", "elizon_prompt"]

_MANIFEST = "elizon.yaml"
#: Each package's registry (or why it cannot be read), by package folder, for the session.
_REGISTRIES = pytest.StashKey[dict[Path, PromptRegistry | ElizonError]]()


class PromptRenderer:
    """Renders a package's prompts: ``renderer("support", question=…)`` is the text.

    ``renderer("NAME", **variables)`` renders the version the variant pins, else the
    default; ``renderer("NAME@VERSION", **variables)`` that version. The prompt is
    positional-only, so any variable name (``name``, ``version``, ``self``) is a keyword.
    """

    def __init__(self, registry: PromptRegistry, pins: Mapping[str, str] | None = None,
                 variant: str | None = None, rendered: list[PromptRecord] | None = None
                 ) -> None:
        self.registry = registry
        #: NAME -> VERSION the current variant pins.
        self.pins: Mapping[str, str] = dict(pins or {})
        self.variant = variant
        #: Where each rendered prompt is noted, once (the case's ``rendered_prompts``).
        self._rendered: list[PromptRecord] = rendered if rendered is not None else []
        # an entry may render from several threads at once (a case's repeats run together)
        self._lock = threading.Lock()

    def __call__(self, prompt: str, /, **variables: object) -> str:
        if not isinstance(prompt, str):
            raise TypeError(f"elizon_prompt: the prompt is 'NAME' or 'NAME@VERSION', got "
                            f"{type(prompt).__name__}")
        name, version = split_reference(prompt)
        if version is None and name in self.pins:
            version = self.pins[name]
            found = self.registry.prompt(name)
            if version not in found.labels:  # said with who asked for it
                raise ElizonError(ELIZON_PROMPT_INVALID, [
                    f"{found.display}: prompt {name!r} has no version {version!r}, which "
                    f"variant {self.variant!r} pins; its versions: {', '.join(found.labels)}"])
        rendered = self.registry.render(name, version, variables)
        with self._lock:
            if rendered.record not in self._rendered:
                self._rendered.append(rendered.record)
        return rendered.text

    @property
    def records(self) -> tuple[PromptRecord, ...]:
        """What it rendered, each prompt version once, in order."""
        with self._lock:
            return tuple(self._rendered)


def _package_folder(request: pytest.FixtureRequest) -> Path:
    """The folder of the package the requesting test belongs to."""
    node = request.node
    package = getattr(getattr(node, "parent", None), "package", None)
    folder = getattr(package, "folder", None)
    if isinstance(folder, Path):  # an Elizon case: its own package
        return folder
    path = Path(node.path)
    for candidate in (path.parent, *path.parent.parents):
        if (candidate / _MANIFEST).is_file():
            return candidate
    shown = display_path(request.config.rootpath, path)
    raise ElizonError(ELIZON_PROMPT_INVALID, [
        f"{shown}: elizon_prompt renders a package's prompts, and there is no {_MANIFEST} "
        "in this test's folder or any folder above it"])


@pytest.fixture
def elizon_prompt(request: pytest.FixtureRequest) -> PromptRenderer:
    """The package's versioned prompts (prompts/NAME.yaml), rendered by name.

    ``elizon_prompt("support", question=..., name=...)`` is the text of the version the
    case's variant pins, else the last one listed; ``elizon_prompt("support@1", ...)``
    renders version 1. A missing or undeclared variable is an ELIZON_PROMPT_INVALID error.
    An Elizon case records each prompt it rendered (name, version, SHA-256) in its result;
    a function-scoped elizon_entry fixture may keep the renderer and call it per input.
    """
    folder = _package_folder(request)
    config = request.config
    registries = config.stash.setdefault(_REGISTRIES, {})

    def load() -> PromptRegistry:
        return load_registry(folder, lambda path: display_path(config.rootpath, path))

    registry = read_once(registries, folder, load)
    node: Any = request.node
    variant = getattr(node, "variant", None)
    pins = getattr(variant, "prompts", None)
    rendered = getattr(node, "rendered_prompts", None)
    return PromptRenderer(registry, pins if isinstance(pins, Mapping) else None,
                          getattr(variant, "name", None),
                          rendered if isinstance(rendered, list) else None)
