"""A local stand-in for OpenAI's ``POST /v1/chat/completions``, good enough for the real ``openai`` client.

    with ChatCompletionsServer(answer="...") as srv:
        client = openai.OpenAI(api_key="test", base_url=srv.base_url, max_retries=0)
        client.chat.completions.create(model="gpt-4o-mini", messages=[...])
        srv.requests          # every request body (dicts), in order

Non-streaming only (the conformance flows do not stream). Binds 127.0.0.1 on a free port.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class ChatCompletionsServer:
    """Answers every chat completion with a fixed text; remembers request bodies."""

    def __init__(self, answer: str = "OK.", *, response_model: str | None = None) -> None:
        self.answer = answer
        self.response_model = response_model
        self.requests: list[dict[str, Any]] = []
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

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

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b"{}"
                try:
                    req = json.loads(raw or b"{}")
                except ValueError:
                    self._send(400, {"error": {"message": "bad json", "type": "invalid_request_error"}})
                    return
                if self.path.rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
                    self._send(404, {"error": {"message": f"no route {self.path}", "type": "invalid_request_error"}})
                    return
                if req.get("stream"):
                    self._send(400, {"error": {"message": "streaming not supported", "type": "invalid_request_error"}})
                    return
                outer.requests.append(req)
                prompt_chars = sum(len(str(m.get("content") or "")) for m in req.get("messages", []))
                completion_tokens = max(1, len(outer.answer) // 4)
                prompt_tokens = max(1, prompt_chars // 4)
                self._send(
                    200,
                    {
                        "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
                        "object": "chat.completion",
                        "created": int(time.time()),
                        "model": outer.response_model or req.get("model", "fake-model"),
                        "system_fingerprint": "fp_fake",
                        "choices": [
                            {
                                "index": 0,
                                "message": {"role": "assistant", "content": outer.answer, "refusal": None},
                                "logprobs": None,
                                "finish_reason": "stop",
                            }
                        ],
                        "usage": {
                            "prompt_tokens": prompt_tokens,
                            "completion_tokens": completion_tokens,
                            "total_tokens": prompt_tokens + completion_tokens,
                        },
                    },
                )

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
