"""A local stand-in for the Anthropic Messages API (``POST /v1/messages``), good enough for the real SDK.

Use it with the real client::

    with MessagesServer() as srv:                      # default: the substring oracle
        client = anthropic.Anthropic(api_key="test", base_url=srv.base_url, max_retries=2)
        ...
        srv.requests                                   # every request body (dicts), in order

Scripting, in order of precedence per request:

1. the action queue: ``srv.fail(529, times=3)``, ``srv.delay(2.0)``, ``srv.enqueue(body_or_callable)``,
   ``srv.raw(b"<html>...", content_type="text/html")`` (bytes sent as they are, on any path: a proxy's
   page, a cut body) (each queued action serves exactly one request);
2. the responder: ``responder(request_json) -> response body dict`` (default ``oracle_responder``),
   optionally wrapped (``drop_claims(...)``, ``truncate_if(...)``).

Realism kept on purpose: token counts are estimated as ``len(text) // 4`` of
what the request sends (tools + system + messages), prompt caching is
simulated (the prefix up to the last ``cache_control`` system block is
"written" on first sight and "read" afterwards, if it is at least
``cache_min_tokens`` long), and the request's ``max_tokens`` is honoured: an
output estimated longer than it is cut and returned with
``stop_reason="max_tokens"``.

Latency: ``MessagesServer(latency=2.0)`` or ``latency=lognormal_latency(median_s=2.0)``
delays every request (a real Messages API call takes seconds); ``srv.max_concurrent``
is the most requests it held at once, so a test can see how many calls a worker
really had in flight. The listen backlog is large (a worker opens dozens of
connections at once).

Platforms: the same Messages handling answers AWS Bedrock's ``POST /model/{model}/invoke``
and Google Vertex AI's ``POST /projects/{p}/locations/{r}/publishers/anthropic/models/{model}:rawPredict``
(the model comes from the path, ``anthropic_version`` is in the body), so
``AnthropicBedrock``/``AnthropicVertex`` clients run against it; each ``Recorded`` says which
``platform`` the request used, and its headers keep the SigV4 / Bearer authorization.

OpenAI-compatible: ``POST /v1/chat/completions`` is translated to a Messages request (system
message -> system block, function tools -> tools, forced function -> forced tool,
``response_format`` json_schema -> a forced tool of that schema), answered by the same
responder and action queue, and translated back (tool calls with JSON ``arguments``, or JSON
``content`` for json_schema; ``finish_reason`` ``length`` for a cut output; ``usage`` with
``prompt_tokens_details.cached_tokens``; errors as ``{"error": {...}}``).

Models API: ``GET /v1/models/{id}`` answers every id, or 404 ``not_found_error`` for one outside
``srv.served_models`` when set (a model the provider retired); ``srv.model_checks`` lists the ids asked about.

Message Batches: ``POST /v1/messages/batches`` (create), ``GET /v1/messages/batches/{id}``
(retrieve), ``GET .../results`` (JSONL), ``POST .../cancel``. A batch ends ``batch_seconds``
after creation (checked on retrieve); its requests are answered by the same responder;
``batch_outcome(custom_id) -> "errored" | "expired" | None`` scripts partial failures,
``expire_next_batch()`` makes the next batch expire whole. ``batch_creates`` counts creates,
``batch_items`` every request submitted in a batch (a resumed audit must not re-submit).

Faults: ``retry-after`` is sent as given; note that the SDK treats
``retry-after: 0`` as "no hint" and falls back to its own backoff (0.5 s, 1 s,
...), so the default fault hint is a small positive value (0.01 s) to keep
tests fast.
"""

from __future__ import annotations

import json
import math
import random
import re
import threading
import time
import uuid
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

Responder = Callable[[dict], dict]

ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    503: "api_error",
    529: "overloaded_error",
}


# --------------------------------------------------------------------------- response builders


def tool_response(name: str, tool_input: Any, *, stop_reason: str = "tool_use", model: str = "fake-model") -> dict:
    """A Messages API body holding one ``tool_use`` block (usage is filled in by the server)."""
    return {
        "id": f"msg_{uuid.uuid4().hex[:24]}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "tool_use", "id": f"toolu_{uuid.uuid4().hex[:24]}", "name": name, "input": tool_input}],
        "stop_reason": stop_reason,
        "stop_sequence": None,
    }


def text_response(text: str, *, stop_reason: str = "end_turn", model: str = "fake-model") -> dict:
    """A Messages API body holding one text block."""
    return {
        "id": f"msg_{uuid.uuid4().hex[:24]}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "text", "text": text}],
        "stop_reason": stop_reason,
        "stop_sequence": None,
    }


# --------------------------------------------------------------------------- reading requests


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b.get("text", "") if isinstance(b, dict) else str(b) for b in content)
    return ""


def user_text(request: dict) -> str:
    """Concatenated text of the user messages of a request."""
    return "\n".join(_content_text(m.get("content")) for m in request.get("messages", []) if m.get("role") == "user")


def system_text(request: dict) -> str:
    """The system prompt of a request as one string."""
    return _content_text(request.get("system", ""))


def tool_name(request: dict) -> str | None:
    """The forced tool name (``tool_choice``), else the only tool's name."""
    choice = request.get("tool_choice") or {}
    if choice.get("type") == "tool":
        return choice.get("name")
    tools = request.get("tools") or []
    return tools[0]["name"] if len(tools) == 1 else None


_UNESCAPE = re.compile(r"&lt;(\s*/?\s*[a-z]+)", re.IGNORECASE)


def _unescape(text: str) -> str:
    return _UNESCAPE.sub(r"<\1", text)


def request_claims(request: dict) -> list[tuple[str, str]]:
    """``(id, text)`` of every ``<claim id="...">`` in the user message."""
    return [
        (m.group(1), _unescape(m.group(2)))
        for m in re.finditer(r'<claim id="([^"]*)">(.*?)</claim>', user_text(request), re.S)
    ]


def request_contexts(request: dict) -> list[str]:
    """Text of every ``<context index="i">`` in the user message, by index order."""
    found = re.findall(r'<context index="(\d+)">\n?(.*?)\n?</context>', user_text(request), re.S)
    return [_unescape(t) for _, t in sorted(found, key=lambda x: int(x[0]))]


def request_answer(request: dict) -> str:
    """Text of the ``<answer>`` block in the user message ('' if none)."""
    m = re.search(r"<answer>\n?(.*?)\n?</answer>", user_text(request), re.S)
    return _unescape(m.group(1)) if m else ""


# --------------------------------------------------------------------------- the default oracle

_ABSTAIN = re.compile(r"\b(i don't know|i do not know|i cannot answer|i can't answer|no information|not sure)\b", re.I)


def _norm(s: str) -> str:
    return re.sub(r"\s+", " ", s).strip().rstrip(".").strip()


def oracle_responder(request: dict) -> dict:
    """Judge by substring rules: extraction = answer split into sentences; a claim found verbatim
    (case-insensitive) in a context is SUPPORTED with that span as evidence, else UNSUPPORTED."""
    model = request.get("model", "fake-model")
    name = tool_name(request)
    if name == "record_claims":
        answer = request_answer(request)
        sentences = [s for s in re.split(r"(?<=[.!?])\s+", answer.strip()) if s]
        claims = [{"text": s, "sentence": i} for i, s in enumerate(sentences) if not _ABSTAIN.search(s)]
        return tool_response(name, {"claims": claims, "abstained": not claims and bool(sentences)}, model=model)
    if name == "record_verdicts":
        contexts = request_contexts(request)
        verdicts = []
        for cid, text in request_claims(request):
            needle = _norm(text).lower()
            hit = None
            for i, ctx in enumerate(contexts):
                pos = ctx.lower().find(needle) if needle else -1
                if pos >= 0:
                    hit = (i, ctx[pos : pos + len(needle)])
                    break
            if hit:
                verdicts.append(
                    {
                        "claim_id": cid,
                        "verdict": "SUPPORTED",
                        "evidence": hit[1],
                        "context_index": hit[0],
                        "confidence": 0.9,
                        "reason": "Stated verbatim in the context.",
                    }
                )
            else:
                verdicts.append(
                    {
                        "claim_id": cid,
                        "verdict": "UNSUPPORTED",
                        "evidence": None,
                        "context_index": None,
                        "confidence": 0.6,
                        "reason": "Not found in any context chunk.",
                    }
                )
        return tool_response(name, {"verdicts": verdicts}, model=model)
    return text_response("ok", model=model)


def minicheck_responder(request: dict) -> dict:
    """Bespoke-MiniCheck's one-token answer to ``Document: ...\nClaim: ...``, with log-probabilities:
    P(Yes) = the share of the claim's words found in the document (clamped to [0.02, 0.98])."""
    text = user_text(request)
    document, _, claim = text.partition("\nClaim: ")
    seen = set(re.findall(r"\w+", document.removeprefix("Document: ").lower()))
    words = re.findall(r"\w+", claim.lower())
    p = min(0.98, max(0.02, sum(w in seen for w in words) / max(1, len(words))))
    return {
        "content": [{"type": "text", "text": "Yes" if p >= 0.5 else "No"}],
        "stop_reason": "max_tokens",
        "_logprobs": [("Yes", math.log(p)), ("No", math.log(1 - p)), ("yes", math.log(p) - 6)],
    }


def drop_claims(responder: Responder, ids: set[str] | Callable[[str], bool]) -> Responder:
    """Wrap a responder so verdicts for the given claim ids (or ids matching a predicate) are left out."""
    match = ids if callable(ids) else (lambda cid: cid in ids)

    def wrapped(request: dict) -> dict:
        body = responder(request)
        for block in body.get("content", []):
            if block.get("type") == "tool_use" and isinstance(block.get("input"), dict):
                vs = block["input"].get("verdicts")
                if isinstance(vs, list):
                    block["input"]["verdicts"] = [v for v in vs if not match(v.get("claim_id", ""))]
        return body

    return wrapped


# --------------------------------------------------------------------------- scripted actions


@dataclass
class Fail:
    """Answer one request with an API error (429, 529, 500...)."""

    status: int = 500
    retry_after: str | None = "0.01"
    message: str = "injected fault"
    #: further response headers (e.g. ``x-should-retry``)
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Delay:
    """Sleep before answering one request (then answer it normally)."""

    seconds: float


@dataclass
class Reply:
    """Answer one request with a canned body, or with ``body(request)`` when it is callable."""

    body: dict | Callable[[dict], dict]


@dataclass
class Raw:
    """Answer one request with these bytes as they are (no JSON encoding, no usage, no chat translation)."""

    data: bytes
    content_type: str = "application/json"
    status: int = 200


@dataclass
class Recorded:
    """One request as the server saw it."""

    path: str
    headers: dict[str, str]
    body: dict
    at: float
    status: int = 0
    #: anthropic (/v1/messages), bedrock (/model/.../invoke), vertex (...:rawPredict), openai (/v1/chat/completions)
    platform: str = "anthropic"
    #: openai requests: "tools" (function calling) or "json_schema" (response_format)
    chat_format: str = "tools"
    response: dict | None = field(default=None, repr=False)
    #: openai requests: the chat-completions body exactly as sent (``body`` is its Messages translation)
    chat_request: dict | None = field(default=None, repr=False)


CHAT_PATH = "/v1/chat/completions"
BATCHES_PATH = "/v1/messages/batches"
MODELS_PATH = "/v1/models"


def chat_to_messages(req: dict) -> dict:
    """An OpenAI chat-completions request as the Messages request the responders understand."""
    system = [
        {"type": "text", "text": m.get("content") or ""} for m in req.get("messages", []) if m.get("role") == "system"
    ]
    messages = [
        {"role": m["role"], "content": m.get("content") or ""}
        for m in req.get("messages", [])
        if m.get("role") in ("user", "assistant")
    ]
    out: dict = {
        "model": req.get("model"),
        "max_tokens": req.get("max_tokens") or req.get("max_completion_tokens"),
        "system": system,
        "messages": messages,
        "_chat_format": "tools",
        "_top_logprobs": int(req.get("top_logprobs") or 0) if req.get("logprobs") else -1,
    }
    tools = [
        {"name": t["function"]["name"], "input_schema": t["function"].get("parameters") or {}}
        for t in req.get("tools") or []
        if t.get("type") == "function"
    ]
    fmt = req.get("response_format") or {}
    if fmt.get("type") == "json_schema":
        js = fmt.get("json_schema") or {}
        tools = [{"name": js.get("name", "output"), "input_schema": js.get("schema") or {}}]
        out["_chat_format"] = "json_schema"
    if tools:
        out["tools"] = tools
    choice = req.get("tool_choice")
    if isinstance(choice, dict) and choice.get("type") == "function":
        out["tool_choice"] = {"type": "tool", "name": choice["function"]["name"]}
    elif out["_chat_format"] == "json_schema":
        out["tool_choice"] = {"type": "tool", "name": tools[0]["name"]}
    return out


def messages_to_chat(out: dict, request: dict, chat_format: str) -> dict:
    """A Messages response (or error body) as an OpenAI chat completion (or error body)."""
    if out.get("type") == "error":
        err = out.get("error") or {}
        return {"error": {"message": err.get("message", ""), "type": err.get("type", "api_error"), "code": None}}
    calls, text = [], ""
    for block in out.get("content") or []:
        if block.get("type") == "tool_use":
            calls.append(
                {
                    "id": f"call_{uuid.uuid4().hex[:12]}",
                    "type": "function",
                    "function": {"name": block["name"], "arguments": json.dumps(block.get("input"))},
                }
            )
        elif block.get("type") == "text":
            text += block.get("text", "")
    cut = out.get("stop_reason") == "max_tokens"
    message: dict = {"role": "assistant", "content": text or None}
    if request.get("_chat_format") == "json_schema":
        message["content"] = json.dumps(json.loads(calls[0]["function"]["arguments"])) if calls else text
    elif calls:
        message["tool_calls"] = calls
    finish = "length" if cut else ("tool_calls" if calls and request.get("_chat_format") != "json_schema" else "stop")
    u = out.get("usage") or {}
    prompt = int(u.get("input_tokens", 0)) + int(u.get("cache_read_input_tokens", 0) or 0)
    choice: dict = {"index": 0, "message": message, "finish_reason": finish}
    top = request.get("_top_logprobs", -1)
    if top >= 0 and out.get("_logprobs"):  # a responder's [(token, logprob), ...] for the first generated token
        ranked = sorted(out["_logprobs"], key=lambda t: -t[1])
        entry = lambda t: {"token": t[0], "logprob": t[1], "bytes": list(t[0].encode())}  # noqa: E731
        choice["logprobs"] = {"content": [{**entry(ranked[0]), "top_logprobs": [entry(t) for t in ranked[:top]]}]}
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:20]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": out.get("model") or request.get("model"),
        "choices": [choice],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": int(u.get("output_tokens", 0)),
            "total_tokens": prompt + int(u.get("output_tokens", 0)),
            "prompt_tokens_details": {"cached_tokens": int(u.get("cache_read_input_tokens", 0) or 0)},
        },
    }


_BEDROCK = re.compile(r"^/model/(?P<model>[^/]+)/invoke$")
_VERTEX = re.compile(r"^/projects/[^/]+/locations/[^/]+/publishers/anthropic/models/(?P<model>[^/:]+):rawPredict$")


def _platform_model(path: str) -> tuple[str, str | None] | None:
    """(platform, model from the path) for a Messages request on any platform, else None."""
    if path.startswith("/v1/messages") or path == CHAT_PATH:
        return "anthropic", None
    from urllib.parse import unquote

    for platform, pattern in (("bedrock", _BEDROCK), ("vertex", _VERTEX)):
        m = pattern.match(path)
        if m:
            return platform, unquote(m.group("model"))
    return None


# --------------------------------------------------------------------------- latency


def lognormal_latency(median_s: float = 2.0, sigma: float = 0.5, seed: int | None = None) -> Callable[[], float]:
    """Per-request latency drawn from a lognormal with this median (LLM API latencies are long-tailed)."""
    rng = random.Random(seed)
    mu = math.log(median_s)
    lock = threading.Lock()

    def draw() -> float:
        with lock:
            return rng.lognormvariate(mu, sigma)

    return draw


# --------------------------------------------------------------------------- the server


class MessagesServer:
    """Threaded fake of ``POST /v1/messages`` on 127.0.0.1 (context manager)."""

    def __init__(
        self,
        responder: Responder | None = None,
        *,
        cache_min_tokens: int = 1024,
        port: int = 0,
        latency: float | Callable[[], float] | None = None,
    ) -> None:
        self.responder: Responder = responder or oracle_responder
        self.latency = latency
        self.in_flight = 0
        self.max_concurrent = 0
        self.cache_min_tokens = cache_min_tokens
        self.recorded: list[Recorded] = []
        self._actions: deque[Fail | Delay | Reply | Raw] = deque()
        #: a time-based outage (``fail_for``): every request before ``_fail_until`` gets ``_fail_window``
        self._fail_until = 0.0
        self._fail_window: Fail | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._cached_prefixes: set[str] = set()
        #: Message Batches (see the module docstring)
        self.batch_seconds = 0.0
        self.batch_outcome: Callable[[str], str | None] | None = None
        self.batch_creates = 0
        self.batch_items = 0
        self._batches: dict[str, dict] = {}
        self._expire_next = False
        self._batch_lock = threading.Lock()
        #: the Models API: the model ids this server serves (None: every id), and the ids asked about
        self.served_models: set[str] | None = None
        self.model_checks: list[str] = []
        self._port = port
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> "MessagesServer":
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def do_GET(self) -> None:
                """``GET /_stats``: requests seen and the most held at once (for a server in another process);
                ``GET /v1/models/{id}``: the Models API (404 ``not_found_error`` for a model not served)."""
                if self.path.startswith(MODELS_PATH + "/"):
                    status, data = server._model_get(self.path.split("?")[0][len(MODELS_PATH) + 1 :])
                    self._raw_reply(status, "application/json", data)
                    return
                if self.path.startswith(BATCHES_PATH):
                    status, ctype, data = server._batch_get(self.path.split("?")[0])
                    self._raw_reply(status, ctype, data)
                    return
                body = json.dumps(
                    {
                        "requests": len(server.requests),
                        "max_concurrent": server.max_concurrent,
                        "in_flight": server.in_flight,
                    }
                ).encode()
                self.send_response(200 if self.path == "/_stats" else 404)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _raw_reply(self, status: int, ctype: str, data: bytes) -> None:
                self.send_response(status)
                self.send_header("content-type", ctype)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                if self.path.startswith(BATCHES_PATH):
                    status, data = server._batch_post(self.path.split("?")[0], raw)
                    self._raw_reply(status, "application/json", data)
                    return
                if (
                    self.path == "/_control"
                ):  # {"fail": 429, "times": 40 | "seconds": 3, "retry_after": "1"}: script another process's server
                    cmd = json.loads(raw or b"{}")
                    if "seconds" in cmd:
                        server.fail_for(
                            int(cmd["fail"]), float(cmd["seconds"]), retry_after=cmd.get("retry_after", "0.01")
                        )
                    else:
                        server.fail(
                            int(cmd["fail"]), times=int(cmd.get("times", 1)), retry_after=cmd.get("retry_after", "0.01")
                        )
                    self.send_response(204)
                    self.send_header("content-length", "0")
                    self.end_headers()
                    return
                try:
                    status, headers, body = server._handle(self.path, dict(self.headers), raw)
                except Exception as exc:  # a bug in a test responder: surface it as a 500
                    status, headers, body = (
                        500,
                        {},
                        {"type": "error", "error": {"type": "api_error", "message": repr(exc)}},
                    )
                if isinstance(body, Raw):
                    self._raw_reply(body.status, body.content_type, body.data)
                    return
                data = json.dumps(body).encode()
                try:
                    self.send_response(status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    self.send_header("request-id", f"req_{uuid.uuid4().hex[:16]}")
                    for k, v in headers.items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # client gave up (timeout test)
                    pass

        class Server(ThreadingHTTPServer):
            request_queue_size = 512  # listen backlog: dozens of clients connect at once

        self._httpd = Server(("127.0.0.1", self._port), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="fake-messages", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> "MessagesServer":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        assert self._httpd is not None, "server not started"
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    # ------------------------------------------------------------------ message batches

    def expire_next_batch(self) -> None:
        """The next batch created ends with every request ``expired`` (the 24 h limit passed)."""
        with self._lock:
            self._expire_next = True

    def _batch_json(self, b: dict) -> bytes:
        counts = {"processing": 0, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
        if b["status"] == "ended":
            for r in b["results"]:
                counts[r["result"]["type"]] += 1
        else:
            counts["processing"] = len(b["requests"])
        ended = b["status"] == "ended"
        doc = {
            "id": b["id"],
            "type": "message_batch",
            "processing_status": b["status"],
            "request_counts": counts,
            "created_at": b["created_at"],
            "expires_at": b["created_at"],
            "archived_at": None,
            "cancel_initiated_at": b["created_at"] if b["cancel"] else None,
            "ended_at": b["created_at"] if ended else None,
            "results_url": f"{self.base_url}{BATCHES_PATH}/{b['id']}/results" if ended else None,
        }
        return json.dumps(doc).encode()

    def _batch_process(self, b: dict) -> None:
        """End ``b`` once its time has come: answer, cancel or expire each request."""
        if b["status"] == "ended" or (time.monotonic() - b["t0"] < self.batch_seconds and not b["cancel"]):
            return
        results = []
        for item in b["requests"]:
            cid, params = item["custom_id"], item["params"]
            outcome = (
                "canceled"
                if b["cancel"]
                else "expired"
                if b["expire"]
                else (self.batch_outcome(cid) if self.batch_outcome else None)
            )
            if outcome == "errored":
                result = {
                    "type": "errored",
                    "error": {
                        "type": "error",
                        "error": {"type": "api_error", "message": "internal error while processing the request"},
                    },
                }
            elif outcome in ("expired", "canceled"):
                result = {"type": outcome}
            else:
                result = {"type": "succeeded", "message": self._finish(params, self.responder(params))}
            results.append({"custom_id": cid, "result": result})
        b["results"], b["status"] = results, "ended"

    def _model_get(self, model_id: str) -> tuple[int, bytes]:
        """``GET /v1/models/{id}``: the model object, or 404 for a model this server does not serve (retired)."""
        from urllib.parse import unquote

        model_id = unquote(model_id)
        with self._lock:
            self.model_checks.append(model_id)
        if self.served_models is not None and model_id not in self.served_models:
            error = {"type": "not_found_error", "message": f"model: {model_id}"}
            return 404, json.dumps({"type": "error", "error": error}).encode()
        model = {"type": "model", "id": model_id, "display_name": model_id, "created_at": "2025-09-29T00:00:00Z"}
        return 200, json.dumps(model).encode()

    def _batch_post(self, path: str, raw: bytes) -> tuple[int, bytes]:
        if path == BATCHES_PATH:
            reqs = json.loads(raw or b"{}").get("requests") or []
            ids = [r.get("custom_id") for r in reqs]
            if not reqs or len(set(ids)) != len(ids):
                return 400, json.dumps(
                    {
                        "type": "error",
                        "error": {"type": "invalid_request_error", "message": "requests empty or custom_id repeated"},
                    }
                ).encode()
            with self._lock:
                bid = f"msgbatch_{uuid.uuid4().hex[:24]}"
                b = {
                    "id": bid,
                    "requests": reqs,
                    "t0": time.monotonic(),
                    "status": "in_progress",
                    "results": [],
                    "cancel": False,
                    "expire": self._expire_next,
                    "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                }
                self._expire_next = False
                self._batches[bid] = b
                self.batch_creates += 1
                self.batch_items += len(reqs)
            return 200, self._batch_json(b)
        m = re.match(rf"^{BATCHES_PATH}/([^/]+)/cancel$", path)
        if m and m.group(1) in self._batches:
            with self._batch_lock:
                b = self._batches[m.group(1)]
                if b["status"] != "ended":
                    b["cancel"], b["status"] = True, "canceling"
            return 200, self._batch_json(b)
        return 404, json.dumps({"type": "error", "error": {"type": "not_found_error", "message": path}}).encode()

    def _batch_get(self, path: str) -> tuple[int, str, bytes]:
        if path == BATCHES_PATH:  # list, newest first (one page)
            with self._lock:
                docs = [json.loads(self._batch_json(b)) for b in reversed(list(self._batches.values()))]
            page = {
                "data": docs,
                "has_more": False,
                "first_id": docs[0]["id"] if docs else None,
                "last_id": docs[-1]["id"] if docs else None,
            }
            return 200, "application/json", json.dumps(page).encode()
        m = re.match(rf"^{BATCHES_PATH}/([^/]+)(/results)?$", path)
        b = self._batches.get(m.group(1)) if m else None
        if b is None or m is None:
            return (
                404,
                "application/json",
                json.dumps({"type": "error", "error": {"type": "not_found_error", "message": path}}).encode(),
            )
        with self._batch_lock:  # not self._lock: answering takes it (prompt-cache simulation)
            self._batch_process(b)
        if m.group(2):
            if b["status"] != "ended":
                return (
                    404,
                    "application/json",
                    b'{"type":"error","error":{"type":"not_found_error","message":"not ended"}}',
                )
            return 200, "application/binary", "".join(json.dumps(r) + "\n" for r in b["results"]).encode()
        return 200, "application/json", self._batch_json(b)

    # ------------------------------------------------------------------ scripting

    def fail(
        self, status: int = 500, times: int = 1, retry_after: str | None = "0.01", headers: dict[str, str] | None = None
    ) -> None:
        """Answer the next ``times`` requests with HTTP ``status`` (a ``retry-after`` header and any ``headers``)."""
        with self._lock:
            self._actions.extend(Fail(status, retry_after, headers=dict(headers or {})) for _ in range(times))

    def fail_for(self, status: int, seconds: float, retry_after: str | None = "0.01") -> None:
        """Answer every request of the next ``seconds`` with HTTP ``status``: a provider's rate-limit window, which
        ends with time, not after a count of requests (queued ``fail``/``delay``/``enqueue`` actions go first)."""
        with self._lock:
            self._fail_until = time.monotonic() + seconds
            self._fail_window = Fail(status, retry_after, headers={})

    def delay(self, seconds: float, times: int = 1) -> None:
        """Make the next ``times`` requests wait ``seconds`` before being answered."""
        with self._lock:
            self._actions.extend(Delay(seconds) for _ in range(times))

    def enqueue(self, *bodies: dict | Callable[[dict], dict]) -> None:
        """Answer the next requests with these canned bodies (or callables of the request), in order."""
        with self._lock:
            self._actions.extend(Reply(b) for b in bodies)

    def raw(
        self, data: bytes | str, *, content_type: str = "application/json", status: int = 200, times: int = 1
    ) -> None:
        """Answer the next ``times`` requests with ``data`` exactly (a truncated JSON, an HTML page...)."""
        body = data.encode() if isinstance(data, str) else data
        with self._lock:
            self._actions.extend(Raw(body, content_type, status) for _ in range(times))

    @property
    def requests(self) -> list[dict]:
        """Bodies of the Messages requests received so far (any platform; the model filled in from the path)."""
        return [r.body for r in self.recorded if _platform_model(r.path) is not None]

    # ------------------------------------------------------------------ handling

    def _handle(self, path: str, headers: dict[str, str], raw: bytes) -> tuple[int, dict[str, str], dict | Raw]:
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {"_raw": raw.decode("utf-8", "replace")}
        rec = Recorded(
            path=path.split("?")[0], headers={k.lower(): v for k, v in headers.items()}, body=body, at=time.monotonic()
        )
        chat = rec.path == CHAT_PATH and isinstance(body, dict)
        if chat:
            rec.chat_request = body
            rec.platform, body = "openai", chat_to_messages(body)
            rec.body, rec.chat_format = body, body["_chat_format"]
        routed = _platform_model(rec.path)
        if routed is not None and routed[1] is not None and isinstance(body, dict):
            rec.platform = routed[0]
            body.setdefault("model", routed[1])
        with self._lock:
            self.recorded.append(rec)
            action = self._actions.popleft() if self._actions else None
            if action is None and self._fail_window is not None and time.monotonic() < self._fail_until:
                action = self._fail_window
            self.in_flight += 1
            self.max_concurrent = max(self.max_concurrent, self.in_flight)
        try:
            if self.latency is not None and not isinstance(action, Fail):  # error replies come back fast
                self._stop.wait(self.latency() if callable(self.latency) else self.latency)
            if isinstance(action, Raw) and _platform_model(rec.path) is not None:
                rec.status = action.status
                return action.status, {}, action
            status, hdrs, out = self._answer(rec, path, body, action)
            return (status, hdrs, messages_to_chat(out, body, rec.chat_format)) if chat else (status, hdrs, out)
        finally:
            with self._lock:
                self.in_flight -= 1

    def _answer(self, rec: Recorded, path: str, body: dict, action: Any) -> tuple[int, dict[str, str], dict]:
        if _platform_model(rec.path) is None:
            rec.status = 404
            return 404, {}, {"type": "error", "error": {"type": "not_found_error", "message": path}}
        if isinstance(action, Delay):
            self._stop.wait(action.seconds)
            action = None
        if isinstance(action, Fail):
            hdrs = {"retry-after": action.retry_after} if action.retry_after is not None else {}
            hdrs.update(action.headers)
            etype = ERROR_TYPES.get(action.status, "api_error")
            rec.status = action.status
            return action.status, hdrs, {"type": "error", "error": {"type": etype, "message": action.message}}
        if isinstance(action, Reply):
            out = action.body(body) if callable(action.body) else json.loads(json.dumps(action.body))
        else:
            out = self.responder(body)
        out = self._finish(body, out)
        rec.status, rec.response = 200, out
        return 200, {}, out

    def _finish(self, request: dict, out: dict) -> dict:
        """Fill in usage (estimated tokens, simulated caching) and honour the request's max_tokens."""
        out.setdefault("id", f"msg_{uuid.uuid4().hex[:24]}")
        out.setdefault("type", "message")
        out.setdefault("role", "assistant")
        out.setdefault("model", request.get("model", "fake-model"))
        out.setdefault("stop_sequence", None)
        if "usage" in out:
            return out
        tools_text = json.dumps(request.get("tools") or [], separators=(",", ":"))
        system = request.get("system") or []
        sys_blocks = [{"type": "text", "text": system}] if isinstance(system, str) else list(system)
        msgs_text = "".join(_content_text(m.get("content")) for m in request.get("messages", []))
        total = (len(tools_text) + sum(len(b.get("text", "")) for b in sys_blocks) + len(msgs_text)) // 4
        # prefix up to (and including) the last system block with cache_control
        marks = [i for i, b in enumerate(sys_blocks) if b.get("cache_control")]
        cache_read = cache_write = 0
        if marks:
            prefix = tools_text + "".join(b.get("text", "") for b in sys_blocks[: marks[-1] + 1])
            ptoks = len(prefix) // 4
            if ptoks >= self.cache_min_tokens:
                key = f"{request.get('model')}|{prefix}"
                with self._lock:
                    seen = key in self._cached_prefixes
                    self._cached_prefixes.add(key)
                if seen:
                    cache_read = ptoks
                else:
                    cache_write = ptoks
        output_tokens = 1 + sum(
            len(json.dumps(b.get("input"))) // 4 + 10 if b.get("type") == "tool_use" else len(b.get("text", "")) // 4
            for b in out.get("content", [])
        )
        max_tokens = int(request.get("max_tokens") or 0)
        if max_tokens and output_tokens > max_tokens and out.get("stop_reason") != "max_tokens":
            out["stop_reason"] = "max_tokens"
            for b in out.get("content", []):
                if b.get("type") == "tool_use" and isinstance(b.get("input"), dict):
                    b["input"] = _cut(b["input"], max_tokens)
            output_tokens = max_tokens
        out["usage"] = {
            "input_tokens": max(1, total - cache_read - cache_write),
            "output_tokens": output_tokens,
            "cache_creation_input_tokens": cache_write,
            "cache_read_input_tokens": cache_read,
        }
        return out


def _cut(tool_input: dict, max_tokens: int) -> dict:
    """What a truncated tool call looks like: list fields keep only the items that fit."""
    budget = max_tokens * 4
    cut: dict = {}
    for k, v in tool_input.items():
        if isinstance(v, list):
            kept, used = [], 0
            for item in v:
                used += len(json.dumps(item))
                if used > budget:
                    break
                kept.append(item)
            cut[k] = kept
        else:
            cut[k] = v
    return cut


def main(argv: list[str] | None = None) -> None:
    """Run the fake as its own process (benchmarks): prints its port, serves until killed."""
    import argparse

    ap = argparse.ArgumentParser(description="local fake of the Anthropic Messages API")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--latency-median", type=float, default=0.0, help="lognormal per-request latency median, seconds")
    ap.add_argument("--latency-sigma", type=float, default=0.5)
    ap.add_argument("--seed", type=int, default=None)
    args = ap.parse_args(argv)
    latency = lognormal_latency(args.latency_median, args.latency_sigma, args.seed) if args.latency_median > 0 else None
    srv = MessagesServer(port=args.port, latency=latency).start()
    print(srv.base_url.rsplit(":", 1)[1], flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        srv.stop()


if __name__ == "__main__":
    main()
