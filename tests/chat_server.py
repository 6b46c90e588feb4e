"""A chat-completions server on loopback for the tests: OpenAI's protocol, scripted answers.

The request's ``model`` picks the behaviour, so one server serves every scenario:
a good grade, a low one, fenced JSON in prose, malformed then good, always
malformed, nested past the JSON parser's depth, token counts past 64 bits, HTTP
errors, a slow answer, a body that is not JSON, an endless body, a key check,
and a weather agent that calls a tool and answers from its result; a request with
``stream: true`` gets its answer as server-sent events. Every request is recorded
for assertions.
"""

from __future__ import annotations

import http.server
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


def completion(content: str) -> bytes:
    return json.dumps({"id": "x", "object": "chat.completion", "choices": [
        {"index": 0, "message": {"role": "assistant", "content": content},
         "finish_reason": "stop"}]}).encode()


def stream_of(completion: dict[str, Any]) -> bytes:
    """A completion as OpenAI streams it (server-sent events): the text and each tool
    call's arguments in two pieces, then the usage, then ``[DONE]``."""
    message = completion["choices"][0]["message"]
    base = {"id": completion["id"], "object": "chat.completion.chunk", "created": 1,
            "model": completion.get("model", "m")}
    deltas: list[dict[str, Any]] = [{"role": "assistant", "content": ""}]
    text = message.get("content") or ""
    deltas += [{"content": text[:len(text) // 2]}, {"content": text[len(text) // 2:]}]
    for index, call in enumerate(message.get("tool_calls") or []):
        arguments = call["function"]["arguments"]
        deltas.append({"tool_calls": [{"index": index, "id": call["id"], "type": "function",
                                       "function": {"name": call["function"]["name"],
                                                    "arguments": arguments[:5]}}]})
        deltas.append({"tool_calls": [{"index": index,
                                       "function": {"arguments": arguments[5:]}}]})
    chunks = [{**base, "choices": [{"index": 0, "delta": d, "finish_reason": None}]}
              for d in deltas]
    chunks.append({**base, "choices": [], "usage": completion.get("usage")})
    return b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) \
        + b"data: [DONE]\n\n"


class ChatServer:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self._server: http.server.ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_port}/v1"

    def count(self, model: str) -> int:
        return sum(1 for r in self.requests if r.get("model") == model)

    def reply(self, model: str) -> tuple[int, bytes, float]:
        """(status, body, delay) for a request to ``model``."""
        grade = {"score": 0.9, "reasoning": "clear and polite"}
        if model == "good":
            return 200, completion(json.dumps(grade)), 0
        if model == "low":
            return 200, completion('{"score": 0.3, "reasoning": "rude tone"}'), 0
        if model == "fenced":
            return 200, completion("Sure.\n```json\n" + json.dumps(grade) + "\n```\nDone."), 0
        if model == "flaky":
            first = self.count("flaky") == 1
            return 200, completion("I think it is fine." if first else json.dumps(grade)), 0
        if model == "garbage":
            return 200, completion("no idea, sorry"), 0
        if model == "error500":
            return 500, b'{"error": "overloaded"}', 0
        if model == "slow":
            return 200, completion(json.dumps(grade)), 5.0
        if model == "deep":  # deeper than Python's JSON parser can go
            return 200, b'{"choices": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", 0
        if model == "huge-usage":  # token counts no usage can keep; the grade is good
            return 200, completion(json.dumps(grade))[:-1] + (
                b', "usage": {"prompt_tokens": 1' + b"0" * 400 + b', "completion_tokens": 5}}'), 0
        if model == "badbody":
            return 200, b"<html>gateway</html>", 0
        if model == "needs-key":
            auth = self.headers[-1].get("Authorization", "")
            if auth != "Bearer sk-test-123":
                return 401, b'{"error": "bad key"}', 0
            return 200, completion(json.dumps(grade)), 0
        if model == "weather-agent":
            return 200, self.weather_agent(self.requests[-1]["messages"]), 0
        return 404, b'{"error": "no such model"}', 0

    @staticmethod
    def weather_agent(messages: list[dict[str, Any]]) -> bytes:
        """A model that calls a tool: asked about weather it calls get_weather (content
        null, its own call id); given the tool's result it answers from it."""
        last = messages[-2] if len(messages) > 1 else messages[-1]
        usage = {"prompt_tokens": 50 * len(messages), "completion_tokens": 10}
        if messages[-1]["content"].startswith("weather in"):
            message: dict[str, Any] = {
                "role": "assistant", "content": None,
                "tool_calls": [{"id": "call_srv_1", "type": "function", "function": {
                    "name": "get_weather", "arguments": '{"city": "Paris"}'}}]}
        elif last["role"] == "tool":
            result = json.loads(last["content"])
            said = f"It is {result['temp_c']} C in Paris ({last['tool_call_id']})."
            message = {"role": "assistant", "content": said}
        else:
            message = {"role": "assistant", "content": "You are welcome."}
        return json.dumps({"id": "x", "object": "chat.completion", "model": "weather-agent",
                           "choices": [{"index": 0, "message": message,
                                        "finish_reason": "stop"}], "usage": usage}).encode()

    @contextmanager
    def running(self) -> Iterator[ChatServer]:
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                request = json.loads(body)
                owner.requests.append(request)
                owner.headers.append(dict(self.headers))
                model = request.get("model", "")
                if model == "endless":
                    self.send_response(200)
                    self.end_headers()
                    try:
                        for _ in range(10_000):
                            self.wfile.write(b"x" * 65536)
                    except OSError:
                        pass
                    return
                status, reply, delay = owner.reply(model)
                time.sleep(delay)
                if request.get("stream") and status == 200:
                    self.send_response(200)
                    self.send_header("Content-Type", "text/event-stream")
                    self.end_headers()
                    self.wfile.write(stream_of(json.loads(reply)))
                    return
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(reply)))
                    self.end_headers()
                    self.wfile.write(reply)
                except OSError:
                    pass

            def log_message(self, *args: object) -> None:
                pass

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        # a short poll interval: shutdown() waits for the next poll (0.5 s by default)
        thread = threading.Thread(target=self._server.serve_forever, args=(0.02,),
                                  daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self._server.shutdown()
            self._server.server_close()
