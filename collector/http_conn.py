"""Connection-level limits aiohttp's server does not have: a total deadline on the request head, a cap on its size,
a bound on open connections, and a graceful (draining) close for every refusal.

aiohttp parses HTTP (Content-Length and chunked bodies, keep-alive, pipelining, idle keep-alive timeout, lingering
on an unread body); :class:`LimitedConnection` wraps its ``RequestHandler`` with what a server facing the open
network also needs:

- the request line + headers must arrive within ``header_timeout_s`` of their first byte, in total (a client
  trickling one byte a second is cut off: **408**, then closed); a new connection that sends nothing within that
  time is closed quietly;
- they may not exceed ``max_header_bytes`` (**431**, closed);
- past ``max_connections`` open connections a new one gets **503** + ``Retry-After`` at once, then is closed;
- a request whose framing does not parse (a ``Content-Length`` shorter than the body, a bad chunk size,
  ``Content-Length`` with ``Transfer-Encoding``...) gets the receiver's 400 and is counted and logged by it (at most
  once a minute); aiohttp's own answer would log a traceback quoting the raw request bytes (span text) each time.

Whenever the server answers and closes with input possibly unread, it shuts down its write side and reads and
discards input for up to ``linger_s`` before closing, so the client reads the answer instead of a connection reset.
"""

from __future__ import annotations

import asyncio
from typing import Any, Protocol

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError
from aiohttp.web_protocol import RequestHandler

_HEAD_END = b"\r\n\r\n"


class ConnectionPolicy(Protocol):
    """What a connection needs from the receiver: limits, canned answers, counting."""

    header_timeout_s: float
    max_header_bytes: int
    max_connections: int
    linger_s: float
    open_connections: int

    def refused(self, code: int, reason: str) -> None: ...

    def canned(self, code: int) -> bytes: ...

    def malformed(self, error: str) -> web.StreamResponse: ...


class LimitedConnection(RequestHandler):
    """aiohttp's ``RequestHandler`` plus the head deadline, head size cap, connection bound and draining close."""

    def __init__(self, manager: web.Server, policy: ConnectionPolicy, **kwargs: Any) -> None:
        super().__init__(manager, **kwargs)
        self._policy = policy
        self._admitted = False
        self._draining = False
        self._head_bytes = 0
        self._head_tail = b""
        self._head_timer: asyncio.TimerHandle | None = None

    # -- lifecycle ---------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        policy = self._policy
        if policy.open_connections >= policy.max_connections:
            policy.refused(503, "too_many_connections")
            self._refuse(policy.canned(503))
            return
        self._admitted = True
        policy.open_connections += 1
        self._arm()

    def connection_lost(self, exc: BaseException | None) -> None:
        if self._admitted:
            self._admitted = False
            self._policy.open_connections -= 1
        self._disarm()
        super().connection_lost(exc)

    # -- the request head ----------------------------------------------------
    def _idle(self) -> bool:
        """Waiting for the next request's head (not handling one, not lingering on a body)."""
        if self._messages or self._current_request is not None:
            return False
        waiter = self._waiter
        return (waiter is not None and not waiter.done()) or self._request_count == 0

    def data_received(self, data: bytes) -> None:
        if self._draining:
            return  # discarded: the answer is written, the connection closes after linger_s
        if data and self._idle():
            if self._head_bytes == 0:
                self._arm()  # the deadline runs from the head's first byte
            joined = self._head_tail + data
            end = joined.find(_HEAD_END)
            head = len(data) if end < 0 else max(0, end + len(_HEAD_END) - len(self._head_tail))
            self._head_bytes += head
            if self._head_bytes > self._policy.max_header_bytes:
                self._policy.refused(431, "headers_too_large")
                self._refuse(self._policy.canned(431))
                return
            if end < 0:
                self._head_tail = joined[-(len(_HEAD_END) - 1) :]
            else:
                self._head_bytes, self._head_tail = 0, b""
                self._disarm()
        super().data_received(data)

    def _arm(self) -> None:
        self._disarm()
        self._head_timer = self._loop.call_later(self._policy.header_timeout_s, self._head_deadline)

    def _disarm(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_deadline(self) -> None:
        self._head_timer = None
        if self._draining or self.transport is None or not self._idle():
            return
        if self._head_bytes == 0 and self._request_count == 0:
            self.force_close()  # a connection that never said anything: closed quietly
        elif self._head_bytes:
            self._policy.refused(408, "header_timeout")
            self._refuse(self._policy.canned(408))

    # -- refusing ------------------------------------------------------------
    def handle_error(
        self,
        request: web.BaseRequest,
        status: int = 500,
        exc: BaseException | None = None,
        message: str | None = None,
    ) -> web.StreamResponse:
        """A request aiohttp could not parse: the receiver's counted 400, never logged with the request's bytes."""
        if isinstance(exc, HttpProcessingError) and request.writer.output_size == 0:
            return self._policy.malformed(type(exc).__name__)
        return super().handle_error(request, status, exc, message)

    def _refuse(self, answer: bytes) -> None:
        """Write ``answer``, shut down writes, discard input for up to ``linger_s``, close."""
        self._draining = True
        self._disarm()
        if self._keepalive_handle is not None:
            self._keepalive_handle.cancel()
            self._keepalive_handle = None
        transport = self.transport
        if transport is None:
            return
        transport.write(answer)
        try:
            if transport.can_write_eof():
                transport.write_eof()
        except (OSError, RuntimeError):
            pass
        self._loop.call_later(self._policy.linger_s, self.force_close)


class LimitedServer(web.Server):
    """aiohttp's low-level ``Server`` making :class:`LimitedConnection` connections."""

    def __init__(self, handler: Any, policy: ConnectionPolicy, **kwargs: Any) -> None:
        super().__init__(handler, **kwargs)
        self._policy = policy

    def __call__(self) -> RequestHandler:
        return LimitedConnection(self, self._policy, loop=self._loop, **self._kwargs)
