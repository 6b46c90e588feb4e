"""The probe file format (docs/format.md#probes) as pydantic models: what
:func:`~.pack.load_probes` validates a probe file against. Apart from the pack's
runtime code so that a run without probes never imports pydantic. No pytest import here.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, ConfigDict, Field, field_validator, model_validator

from ..load.model import CASE_ID_PATTERN, _Strict, check_control

__all__ = ["ProbeFile", "ProbeSpec"]


# Built when a probe file is first read (defer_build), not on every run's import.
class ProbeSpec(_Strict):
    model_config = ConfigDict(defer_build=True)

    id: str
    severity: Literal["low", "medium", "high", "critical"]
    input: str | None = Field(None, min_length=1)
    #: A multi-turn probe: the user's messages, one per turn (instead of ``input``).
    turns: list[Annotated[str, Field(min_length=1)]] | None = None
    description: str | None = None
    #: Control ids the probe tests (added to the file's ``controls``).
    controls: list[Annotated[str, AfterValidator(check_control)]] | None = None
    #: The answer must refuse: one of :data:`~.pack.REFUSAL_MARKERS` must appear.
    must_refuse: bool = Field(False, alias="mustRefuse")
    #: Tools the attack tries to make an agent call; none may be called.
    not_called: list[str] | None = Field(None, alias="notCalled", min_length=1)
    #: Graded by the judge when one is bound (never required).
    rubric: str | None = Field(None, min_length=1)

    @field_validator("id")
    @classmethod
    def _id_shape(cls, value: str) -> str:
        if not CASE_ID_PATTERN.fullmatch(value):
            raise ValueError(f"id {value!r} must be lowercase words joined by hyphens")
        return value

    @model_validator(mode="after")
    def _input_or_turns(self) -> ProbeSpec:
        if (self.input is None) == (self.turns is None):
            raise ValueError("a probe has exactly one of 'input' (one message) or 'turns' "
                             "(a conversation of at least two messages)")
        if self.turns is not None and len(self.turns) < 2:
            raise ValueError(f"turns has {len(self.turns)} message(s); a conversation has at "
                             "least two (give one message as 'input')")
        return self


class ProbeFile(_Strict):
    model_config = ConfigDict(defer_build=True)

    category: Literal["prompt-injection", "jailbreak", "data-extraction", "persona-override",
                      "instruction-bypass", "tool-misuse"]
    description: str | None = None
    #: Control ids every probe of the file tests (docs/format.md#controls).
    controls: list[Annotated[str, AfterValidator(check_control)]] | None = None
    probes: list[ProbeSpec] = Field(min_length=1)
