"""The judge: a second model grades an answer against a rubric (SPEC §4 ``judge``).

A judge is either a callable ``(rubric, input, output) -> score | (score,
reasoning)`` (sync or async), or an OpenAI-compatible chat-completions
endpoint — the protocol served by OpenAI, vLLM, llama.cpp's server, Ollama
and LM Studio. The endpoint judge sends :data:`GRADING_SYSTEM_PROMPT` and
:func:`grading_prompt`, asks for ``{"score": 0..1, "reasoning": "…"}``,
parses the answer robustly (fenced JSON, prose around it), asks once more
after a malformed answer, and raises :class:`JudgeError` for anything it
cannot turn into a score — never a silent pass. The API key is read from
the named environment variable at call time and only ever sent as a header.
No pytest import here.
"""

from __future__ import annotations

import json
import os
import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import httpx

__all__ = [
    "GRADING_SYSTEM_PROMPT",
    "EndpointJudge",
    "JudgeError",
    "grading_prompt",
    "parse_grade",
    "score_of",
]

GRADING_SYSTEM_PROMPT = (
    "You grade the answer of an AI application against a rubric. "
    "Reply with only a JSON object of the form "
    '{"score": <a number from 0 to 1>, "reasoning": "<one or two sentences>"}. '
    "A score of 1 means the answer fully meets the rubric; 0 means it does not meet it at all."
)
#: Characters of a judge's reply quoted in an error message.
_QUOTED = 200
#: Largest response body read from a judge endpoint.
MAX_RESPONSE_BYTES = 1024 * 1024


class JudgeError(Exception):
    """The judge could not produce a score; the case fails with this reason."""


def grading_prompt(rubric: str, case_input: object, output: str) -> str:
    """The user message sent to an endpoint judge."""
    shown_input = case_input if isinstance(case_input, str) else json.dumps(
        case_input, ensure_ascii=False, indent=2)
    return (f"Rubric:\n{rubric}\n\nInput given to the application:\n{shown_input}\n\n"
            f"The application's answer:\n{output}\n\nGrade the answer against the rubric.")


def score_of(value: object) -> tuple[float, str]:
    """Check what a judge returned: a score in [0, 1], or (score, reasoning)."""
    reasoning: object = ""
    if isinstance(value, tuple) and len(value) == 2:
        value, reasoning = value
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or not 0.0 <= float(value) <= 1.0:
        raise JudgeError(f"the judge returned {value!r}; expected a score from 0 to 1 or a "
                         "(score, reasoning) pair")
    if not isinstance(reasoning, str):
        raise JudgeError(f"the judge's reasoning is a {type(reasoning).__name__}, not text")
    return float(value), reasoning


_FENCED = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL | re.IGNORECASE)


#: Characters of a reply searched for the JSON grade (keeps parsing linear in practice).
_SEARCHED = 20_000


def _grade_objects(text: str) -> list[dict[str, Any]]:
    """JSON objects in a reply: fenced blocks first, then any object in the prose."""
    text = text[:_SEARCHED]
    decoder = json.JSONDecoder()
    found: list[dict[str, Any]] = []
    for source in [m.group(1).strip() for m in _FENCED.finditer(text)] + [text]:
        for start in (i for i, c in enumerate(source) if c == "{"):
            try:
                value, _ = decoder.raw_decode(source, start)
            except ValueError:
                continue
            if isinstance(value, dict):
                found.append(value)
    return found


def parse_grade(content: str) -> tuple[float, str]:
    """(score, reasoning) from a judge model's reply; ``ValueError`` if there is none."""
    for data in _grade_objects(content):
        if "score" not in data:
            continue
        score = data["score"]
        if isinstance(score, str):
            try:
                score = float(score)
            except ValueError:
                continue
        reasoning = data.get("reasoning", "")
        try:
            return score_of((score, reasoning if isinstance(reasoning, str) else str(reasoning)))
        except JudgeError as exc:
            raise ValueError(str(exc)) from None
    raise ValueError(f"no JSON object with a score in the reply: {content[:_QUOTED]!r}")


class EndpointJudge:
    """An OpenAI-compatible chat-completions endpoint used as a judge."""

    def __init__(self, url: str, model: str, api_key_env: str | None = None) -> None:
        base = url.rstrip("/")
        self.url = base if base.endswith("/chat/completions") else f"{base}/chat/completions"
        self.model = model
        self.api_key_env = api_key_env

    def __repr__(self) -> str:
        return f"chat-completions judge {self.model!r} at {self.url}"

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        if self.api_key_env:
            key = os.environ.get(self.api_key_env)
            if not key:
                raise JudgeError(f"the environment variable {self.api_key_env} (apiKeyEnv) "
                                 "is not set")
            headers["Authorization"] = f"Bearer {key}"
        return headers

    def _ask(self, client: httpx.Client, body: dict[str, Any]) -> str:
        """The reply's message content; JudgeError for transport and HTTP errors,
        ValueError for a reply that is not a chat completion."""
        import httpx  # deferred: costs import time on every run, needed by few
        try:
            with client.stream("POST", self.url, json=body, headers=self._headers()) as response:
                raw = b""
                for chunk in response.iter_bytes():
                    raw += chunk
                    if len(raw) > MAX_RESPONSE_BYTES:
                        raise ValueError(f"the reply is larger than {MAX_RESPONSE_BYTES:,} bytes")
        except httpx.TimeoutException:
            raise JudgeError("no answer in time") from None
        except httpx.HTTPError as exc:
            raise JudgeError(f"{type(exc).__name__}: {exc}") from None
        if not response.is_success:
            excerpt = raw[:_QUOTED].decode("utf-8", "replace")
            raise JudgeError(f"HTTP {response.status_code}: {excerpt!r}")
        try:
            data = json.loads(raw)
            content = data["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError):
            raise ValueError("the reply is not a chat completion: "
                             f"{raw[:_QUOTED].decode('utf-8', 'replace')!r}") from None
        if not isinstance(content, str):
            raise ValueError(f"the reply's content is {type(content).__name__}, not text")
        return content

    def grade(self, rubric: str, case_input: object, output: str, timeout_s: float = 90.0
              ) -> tuple[float, str]:
        """Ask the endpoint for a grade; a malformed reply is asked again once."""
        body = {
            "model": self.model,
            "temperature": 0,
            "messages": [
                {"role": "system", "content": GRADING_SYSTEM_PROMPT},
                {"role": "user", "content": grading_prompt(rubric, case_input, output)},
            ],
        }
        import httpx  # deferred: costs import time on every run, needed by few

        problem = ""
        with httpx.Client(timeout=timeout_s) as client:
            for _attempt in range(2):
                try:
                    return parse_grade(self._ask(client, body))
                except ValueError as exc:
                    problem = str(exc)
        raise JudgeError(f"malformed answer twice: {problem}")

    def __call__(self, rubric: str, case_input: object, output: str) -> tuple[float, str]:
        return self.grade(rubric, case_input, output)
