"""A local stand-in for OpenAI's ``POST /v1/chat/completions`` and ``POST /v1/responses``, good enough for the
real ``openai`` client and the OpenAI Agents SDK's ``OpenAIChatCompletionsModel`` / ``OpenAIResponsesModel``.

    with ChatCompletionsServer(answer="...") as srv:            # every call answers the same text
        client = openai.OpenAI(api_key="test", base_url=srv.base_url, max_retries=0)
        client.chat.completions.create(model="gpt-4o-mini", messages=[...])
        srv.requests          # every request body (dicts), in order

    replies = [[ToolCall("search_policies", '{"query": "refund"}', "call_1")], "Final answer."]
    with ChatCompletionsServer(replies=replies) as srv:      # scripted: one reply per call, in order
        ...                   # call 1 asks for the tool, call 2 answers; a third call gets HTTP 500

A scripted reply is a final text or a list of :class:`ToolCall`. On chat completions a tool-call reply is an
assistant message with ``tool_calls`` (finish_reason ``tool_calls``); on the Responses API it is ``function_call``
output items (``call_id`` = the ToolCall's id), and a text reply is a ``message`` with one ``output_text``. Both
routes share one script. Non-streaming only (the conformance flows do not stream). Binds 127.0.0.1 on a free port.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Sequence, Union

CHAT_ROUTES = ("/v1/chat/completions", "/chat/completions")
RESPONSES_ROUTES = ("/v1/responses", "/responses")


@dataclass(frozen=True)
class ToolCall:
    """One function call the model asks for: tool name, JSON arguments (a string, as the API sends them), call id."""

    name: str
    arguments: str
    id: str


#: a scripted reply: the final text, or the tool calls the model asks for
Reply = Union[str, Sequence[ToolCall]]


def _new_id(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex[:24]}"


def _tokens(text: str) -> int:
    return max(1, len(text) // 4)


def chat_completion_body(reply: Reply, model: str, prompt_chars: int) -> dict[str, Any]:
    """A ``chat.completion`` object for ``reply``."""
    if isinstance(reply, str):
        message = {"role": "assistant", "content": reply, "refusal": None}
        finish, out_chars = "stop", len(reply)
    else:
        calls = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}} for c in reply
        ]
        message = {"role": "assistant", "content": None, "refusal": None, "tool_calls": calls}
        finish, out_chars = "tool_calls", sum(len(c.arguments) for c in reply)
    prompt, completion = _tokens("x" * prompt_chars), _tokens("x" * out_chars)
    return {
        "id": _new_id("chatcmpl-"),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "system_fingerprint": "fp_fake",
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish}],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
    }


def response_body(reply: Reply, model: str, req: dict[str, Any], prompt_chars: int) -> dict[str, Any]:
    """A Responses API ``response`` object for ``reply`` (request settings echoed back, as the real API does)."""
    if isinstance(reply, str):
        output: list[dict[str, Any]] = [
            {
                "type": "message",
                "id": _new_id("msg_"),
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": reply, "annotations": []}],
            }
        ]
        out_chars = len(reply)
    else:
        output = [
            {
                "type": "function_call",
                "id": _new_id("fc_"),
                "call_id": c.id,
                "name": c.name,
                "arguments": c.arguments,
                "status": "completed",
            }
            for c in reply
        ]
        out_chars = sum(len(c.arguments) for c in reply)
    prompt, completion = _tokens("x" * prompt_chars), _tokens("x" * out_chars)
    return {
        "id": _new_id("resp_"),
        "object": "response",
        "created_at": int(time.time()),
        "status": "completed",
        "model": model,
        "output": output,
        "error": None,
        "incomplete_details": None,
        "instructions": req.get("instructions"),
        "metadata": req.get("metadata") or {},
        "parallel_tool_calls": req.get("parallel_tool_calls", True),
        "temperature": req.get("temperature", 1.0),
        "top_p": req.get("top_p", 1.0),
        "tool_choice": req.get("tool_choice", "auto"),
        "tools": req.get("tools") or [],
        "text": {"format": {"type": "text"}},
        "truncation": "disabled",
        "usage": {
            "input_tokens": prompt,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": completion,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": prompt + completion,
        },
    }


class ChatCompletionsServer:
    """Answers every call with a fixed text, or with the scripted ``replies`` in order; remembers request bodies."""

    def __init__(
        self, answer: str = "OK.", *, replies: Sequence[Reply] | None = None, response_model: str | None = None
    ) -> None:
        self.answer = answer
        self.replies: list[Reply] | None = list(replies) if replies is not None else None
        self.response_model = response_model
        self.requests: list[dict[str, Any]] = []
        self.routes: list[str] = []  # the route of each request, parallel to ``requests``
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def next_reply(self) -> Reply | None:
        """The reply for the request just recorded; None when a script has run out."""
        if self.replies is None:
            return self.answer
        n = len(self.requests) - 1
        return self.replies[n] if n < len(self.replies) else None

    # -- lifecycle ---------------------------------------------------------
    def __enter__(self) -> "ChatCompletionsServer":
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def start(self) -> "ChatCompletionsServer":
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def _send(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _error(self, status: int, message: str) -> None:
                self._send(status, {"error": {"message": message, "type": "invalid_request_error"}})

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b"{}"
                try:
                    req = json.loads(raw or b"{}")
                except ValueError:
                    self._error(400, "bad json")
                    return
                route = self.path.rstrip("/")
                if route not in CHAT_ROUTES + RESPONSES_ROUTES:
                    self._error(404, f"no route {self.path}")
                    return
                if req.get("stream"):
                    self._error(400, "streaming not supported")
                    return
                with outer._lock:
                    outer.requests.append(req)
                    outer.routes.append(route)
                    reply = outer.next_reply()
                if reply is None:
                    self._send(500, {"error": {"message": "fake server: script exhausted", "type": "server_error"}})
                    return
                model = outer.response_model or req.get("model", "fake-model")
                if route in CHAT_ROUTES:
                    prompt_chars = sum(len(str(m.get("content") or "")) for m in req.get("messages", []))
                    self._send(200, chat_completion_body(reply, model, prompt_chars))
                else:
                    self._send(200, response_body(reply, model, req, len(json.dumps(req.get("input", "")))))

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="fake-openai", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=2)
            self._thread = None

    @property
    def base_url(self) -> str:
        assert self._server is not None, "server not started"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"
