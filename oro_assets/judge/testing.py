"""A real OpenAI-compatible HTTP server on 127.0.0.1 that replays scripted answers (for tests).

``POST /v1/chat/completions`` answers with the next scripted :class:`Reply` (or the default
once the script is spent): a chat completion with given content, an HTTP error, or a delayed
answer to provoke client timeouts. Every request body is recorded. Other test suites (teacher,
evaluation) reuse it::

    with StubOpenAIServer([verdict_reply(0.7)]) as server:
        client = OpenAI(base_url=server.base_url, api_key="k")
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass(frozen=True)
class Reply:
    status: int = 200
    content: str | None = None  # assistant message content of a 200 answer
    raw_body: str | None = None  # exact body instead of a generated one
    delay_s: float = 0.0
    prompt_tokens: int = 120
    completion_tokens: int = 30
    tool_calls: list[dict] | None = None


def verdict_reply(score: float, explanation: str = "Gate walk done.", **kw) -> Reply:
    return Reply(content=json.dumps({"reasoning_quality": score, "explanation": explanation}), **kw)


def content_reply(content: str, **kw) -> Reply:
    return Reply(content=content, **kw)


def error_reply(status: int, message: str = "scripted error") -> Reply:
    body = json.dumps({"error": {"message": message, "type": "stub_error", "code": status}})
    return Reply(status=status, raw_body=body)


def slow_reply(delay_s: float, then: Reply | None = None) -> Reply:
    base = then or verdict_reply(0.5)
    return Reply(status=base.status, content=base.content, raw_body=base.raw_body, delay_s=delay_s,
                 prompt_tokens=base.prompt_tokens, completion_tokens=base.completion_tokens)


Responder = Callable[[dict], Reply]


@dataclass
class RecordedRequest:
    path: str
    headers: dict[str, str]  # names lower-cased
    body: dict

    @property
    def model(self) -> str | None:
        return self.body.get("model")


@dataclass
class _State:
    script: deque = field(default_factory=deque)
    default: Reply | Responder | None = None
    requests: list[RecordedRequest] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    counter: int = 0
    in_flight: int = 0
    max_in_flight: int = 0  # most requests the stub was answering at the same moment


def _completion_body(reply: Reply, model: str | None, n: int) -> str:
    message: dict = {"role": "assistant", "content": reply.content}
    if reply.tool_calls:
        message["tool_calls"] = reply.tool_calls
    return json.dumps({
        "id": f"chatcmpl-stub-{n}",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": model or "stub",
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if reply.tool_calls else "stop"}],
        "usage": {"prompt_tokens": reply.prompt_tokens, "completion_tokens": reply.completion_tokens,
                  "total_tokens": reply.prompt_tokens + reply.completion_tokens},
    })


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args) -> None:  # noqa: A002 - stdlib signature; keep test output quiet
        return

    def do_POST(self) -> None:  # noqa: N802 - stdlib naming
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {"_unparseable": raw.decode("utf-8", "replace")}
        state = self.server.state
        with state.lock:
            state.requests.append(RecordedRequest(self.path, {k.lower(): v for k, v in self.headers.items()}, body))
            state.counter += 1
            n = state.counter
            item = state.script.popleft() if state.script else state.default
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._send(404, json.dumps({"error": {"message": "not found"}}))
            return
        if item is None:
            self._send(500, json.dumps({"error": {"message": "stub script exhausted"}}))
            return
        with state.lock:  # requests received and not yet answered (the client's real concurrency)
            state.in_flight += 1
            state.max_in_flight = max(state.max_in_flight, state.in_flight)
        try:
            reply = item(body) if callable(item) else item
            if reply.delay_s:
                time.sleep(reply.delay_s)
            text = reply.raw_body if reply.raw_body is not None else _completion_body(reply, body.get("model"), n)
        finally:
            with state.lock:
                state.in_flight -= 1
        self._send(reply.status, text)

    def _send(self, status: int, text: str) -> None:
        data = text.encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout tests)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # socketserver's default backlog of 5 stalls clients that open many connections
    state: _State

    def handle_error(self, request, client_address) -> None:  # timeouts close sockets mid-answer
        return


class StubOpenAIServer:
    """Context manager running the stub on 127.0.0.1 with an ephemeral port."""

    def __init__(self, script: list[Reply | Responder] | None = None, default: Reply | Responder | None = None) -> None:
        self._state = _State(script=deque(script or []), default=default)
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.state = self._state
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._state.lock:
            return list(self._state.requests)

    @property
    def max_in_flight(self) -> int:
        """The most requests the stub was answering at once (a client's real concurrency)."""
        with self._state.lock:
            return self._state.max_in_flight

    def push(self, *replies: Reply | Responder) -> None:
        with self._state.lock:
            self._state.script.extend(replies)

    def start(self) -> StubOpenAIServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> StubOpenAIServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
