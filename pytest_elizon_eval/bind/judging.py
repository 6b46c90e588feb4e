"""What a judge is: a second model that grades an answer against a rubric.

A :class:`Judge` has one method, ``grade(rubric, input, output, *,
deadline) -> Grade``, that never raises (docs/contract.md#assertions,
``judge``). The kinds:

* :class:`CallableJudge` — a callable ``(rubric, input, output) -> score |
  (score, reasoning)``, sync or async, run under the deadline like an entry.
* :class:`EndpointJudge` — an OpenAI-compatible chat-completions endpoint
  (OpenAI, vLLM, llama.cpp's server, Ollama, LM Studio). It sends
  :data:`GRADING_SYSTEM_PROMPT` and :func:`grading_prompt`, asks for
  ``{"score": 0..1, "reasoning": "…"}``, parses the answer robustly (fenced
  JSON, prose around it) and asks once more after a malformed answer. The
  API key is read from the named environment variable at call time and only
  ever sent as a header.

Anything that cannot be turned into a score is a :class:`Grade` with an
``error`` — never a silent pass. No pytest import here.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Protocol

from ..load.runtime import JudgeEndpoint
from ..run.answers import is_token_count
from ..run.calls import EntryCall, Usage
from ..run.retrying import RETRY_STATUSES, Refusal, Tally, attempts, gave_up, wait_from_headers
from ..text import without_userinfo
from .calling import call_with_deadline, run_blocking
from .http_client import HttpClient, HttpError, HttpReply, PastDeadline, excerpt, limit_key_of

__all__ = [
    "GRADING_SYSTEM_PROMPT",
    "CallableJudge",
    "EndpointJudge",
    "Grade",
    "Judge",
    "JudgeError",
    "grading_prompt",
    "judge_from",
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


def _tokens(value: object) -> int | None:
    """A judge's token count as usage keeps it: a whole number that fits in 64 bits (as an
    entry point's must), else unknown — the grade itself does not depend on it."""
    return value if is_token_count(value) else None


class JudgeError(Exception):
    """The judge could not produce a score; the case fails with this reason."""


def grading_prompt(rubric: str, case_input: object, output: str) -> str:
    """The user message sent to an endpoint judge."""
    shown_input = case_input if isinstance(case_input, str) else json.dumps(
        case_input, ensure_ascii=False, indent=2)
    return (f"Rubric:\n{rubric}\n\nInput given to the application:\n{shown_input}\n\n"
            f"The application's answer:\n{output}\n\nGrade the answer against the rubric.")


def _shown(value: object) -> str:
    """``value`` as a message shows it, at most 60 characters (a score may be any size)."""
    try:
        text = repr(value)
    except Exception:  # too large to print (ints past 4,300 digits) or a broken repr
        text = f"<a {type(value).__name__} that cannot be shown>"
    return text if len(text) <= 60 else text[:60] + "…"


def score_of(value: object) -> tuple[float, str]:
    """Check what a judge returned: a score in [0, 1], or (score, reasoning)."""
    reasoning: object = ""
    if isinstance(value, tuple) and len(value) == 2:
        value, reasoning = value
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or not 0 <= value <= 1:  # compared as it is: a 400-digit int has no float
        raise JudgeError(f"the judge returned {_shown(value)}; expected a score from 0 to 1 or a "
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


@dataclass(frozen=True)
class Grade:
    """A judge's verdict on one answer: a score, or why there is none."""

    score: float | None = None
    reasoning: str = ""
    #: Why there is no score (the judge failed or answered nonsense).
    error: str | None = None
    timed_out: bool = False
    #: What grading cost, when the judge reports it (an endpoint's ``usage``).
    usage: Usage | None = None
    #: Requests retried after a refusal, the seconds waited, and whether one was a rate
    #: limit (docs/contract.md#retries).
    retries: int = 0
    waited_s: float = 0.0
    rate_limited: bool = False


class Judge(Protocol):
    """Grades an answer against a rubric."""

    #: What it is, for reports (never a secret).
    description: str

    def grade(self, rubric: str, case_input: object, output: str, *, deadline: float) -> Grade:
        """A grade by ``deadline`` (``time.monotonic()``), or a timed-out one. Never raises."""
        ...

    def close(self) -> None:
        """Release what the judge keeps for the session (connections)."""
        ...


class CallableJudge:
    """A Python callable used as a judge."""

    def __init__(self, fn: Callable[..., Any], description: str) -> None:
        self.fn = fn
        self.description = description

    def __repr__(self) -> str:
        return self.description

    def close(self) -> None:
        pass

    def grade(self, rubric: str, case_input: object, output: str, *, deadline: float) -> Grade:
        call = call_with_deadline(self.fn, (rubric, case_input, output), {}, deadline,
                                  lambda raw, latency: EntryCall(value=score_of(raw),
                                                                 latency_ms=latency),
                                  self.description)
        if call.timed_out:
            return Grade(timed_out=True)
        if call.error is not None:  # a JudgeError's message says it all; others need the type
            error = call.error
            return Grade(error=error.message if error.type == "JudgeError" else error.text)
        score, reasoning = call.value
        return Grade(score=score, reasoning=reasoning)


class EndpointJudge:
    """An OpenAI-compatible chat-completions endpoint used as a judge."""

    @staticmethod
    def endpoint(spec: JudgeEndpoint) -> str:
        """The chat-completions URL ``spec`` names (its base URL, or the full one)."""
        base = spec.url.rstrip("/")
        return base if base.endswith("/chat/completions") else f"{base}/chat/completions"

    @classmethod
    def describe(cls, spec: JudgeEndpoint) -> str:
        """What a judge of ``spec`` is called in reports (its API key never shows, nor the
        URL's user name and password)."""
        return f"chat-completions judge {spec.model!r} at {without_userinfo(cls.endpoint(spec))}"

    def __init__(self, spec: JudgeEndpoint) -> None:
        self.url = self.endpoint(spec)
        self.model = spec.model
        self.api_key_env = spec.api_key_env
        self.description = self.describe(spec)
        self._client = HttpClient()

    def __repr__(self) -> str:
        return self.description

    def close(self) -> None:
        self._client.close()

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        if self.api_key_env:
            key = os.environ.get(self.api_key_env)
            if not key:
                raise JudgeError(f"the environment variable {self.api_key_env} (apiKeyEnv) "
                                 "is not set")
            headers["Authorization"] = f"Bearer {key}"
        return headers

    def _once(self, body: dict[str, Any], headers: dict[str, str], deadline: float
              ) -> tuple[HttpReply | HttpError, Refusal | None]:
        """One exchange, and whether it was a refusal worth another attempt."""
        try:
            reply = self._client.exchange("POST", self.url, body, headers, deadline=deadline,
                                          limit=MAX_RESPONSE_BYTES)
        except HttpError as exc:
            return exc, Refusal(None, False) if exc.reset else None
        if reply.status in RETRY_STATUSES:
            return reply, Refusal(wait_from_headers(reply.headers), reply.status == 429)
        return reply, None

    def _ask(self, body: dict[str, Any], deadline: float, spent: list[Usage],
                   tally: Tally) -> str:
        """The reply's message content (its usage added to ``spent``); JudgeError for
        transport and HTTP errors (refusals retried first), ValueError for a reply that is
        not a chat completion."""
        headers = self._headers()
        before = tally.attempts
        reply, _ = attempts(lambda: self._once(body, headers, deadline),
                            lambda outcome: outcome[1], deadline=deadline, tally=tally,
                            key=limit_key_of(self.url))
        made = tally.attempts - before
        said = gave_up(tally, made) if made > 1 else ""
        if isinstance(reply, HttpError):
            raise JudgeError(f"{reply}{said}")
        if not reply.ok:
            raise JudgeError(f"HTTP {reply.status}: {excerpt(reply.body, _QUOTED)}{said}")
        try:
            data = json.loads(reply.body)
            content = data["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError, RecursionError):
            raise ValueError(f"the reply is not a chat completion: "
                             f"{excerpt(reply.body, _QUOTED)}") from None
        usage = data.get("usage") if isinstance(data, dict) else None
        if isinstance(usage, dict):
            tokens_in, tokens_out = usage.get("prompt_tokens"), usage.get("completion_tokens")
            spent.append(Usage(_tokens(tokens_in), _tokens(tokens_out), model=self.model))
        if not isinstance(content, str):
            raise ValueError(f"the reply's content is {type(content).__name__}, not text")
        return content

    def _grade(self, rubric: str, case_input: object, output: str, deadline: float,
                     tally: Tally) -> Grade:
        body = {
            "model": self.model,
            "temperature": 0,
            "messages": [
                {"role": "system", "content": GRADING_SYSTEM_PROMPT},
                {"role": "user", "content": grading_prompt(rubric, case_input, output)},
            ],
        }
        problem = ""
        spent: list[Usage] = []

        def usage() -> Usage | None:
            return sum(spent[1:], spent[0]) if spent else None

        try:
            for _attempt in range(2):  # a malformed answer is asked again, once
                try:
                    score, reasoning = parse_grade(self._ask(body, deadline, spent, tally))
                    return Grade(score=score, reasoning=reasoning, usage=usage())
                except ValueError as exc:
                    problem = str(exc)
        except JudgeError as exc:
            return Grade(error=str(exc), usage=usage())
        return Grade(error=f"malformed answer twice: {problem}", usage=usage())

    def grade(self, rubric: str, case_input: object, output: str, *, deadline: float) -> Grade:
        tally = Tally()
        try:
            grade = run_blocking(lambda: self._grade(rubric, case_input, output, deadline,
                                                     tally), deadline)
        except PastDeadline:
            grade = None
        grade = grade if grade is not None else Grade(timed_out=True)
        if tally.retries == 0 and not tally.rate_limited:
            return grade
        return replace(grade, retries=tally.retries, waited_s=tally.waited_s,
                       rate_limited=tally.rate_limited)


def judge_from(value: object, description: str) -> Judge:
    """The judge for a resolved source value: a callable or an endpoint spec."""
    if isinstance(value, JudgeEndpoint):
        return EndpointJudge(value)
    if callable(value):
        return CallableJudge(value, description)
    raise TypeError(f"not a judge: {type(value).__name__}")
