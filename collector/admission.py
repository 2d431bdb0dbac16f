"""Admission control of the OTLP receiver: how many requests are read and decoded at once, and their memory.

A request takes a :class:`Ticket` for its estimated memory (body as sent + inflated + decoded) before its body is
read; it may grow the ticket while the body streams in (chunked bodies: the size is unknown up front) or while it
is inflated (gzip), without waiting: when the growth does not fit the request is refused (503 + Retry-After).
One request alone is always admitted, and the oldest request in flight may always grow: so a body up to
``max_body_bytes`` always gets through an idle receiver, and requests growing at the same time cannot all refuse
each other (the oldest finishes; at most that one request is past the budget).

The state is guarded by a thread lock (decoding runs on worker threads, which grow and shrink tickets); waiting for
admission happens on the server's event loop (:meth:`Budget.admit`), woken whenever a ticket shrinks or is released.
"""

from __future__ import annotations

import asyncio
import threading


class Ticket:
    """One admitted request's reservation (``cost`` bytes)."""

    def __init__(self, budget: "Budget", cost: int, seq: int = 0) -> None:
        self.budget, self.cost, self.seq = budget, cost, seq


class Budget:
    """At most ``max_requests`` in flight, their estimated memory within ``max_bytes``."""

    def __init__(self, max_requests: int, max_bytes: int) -> None:
        self.max_requests, self.max_bytes = max(1, max_requests), max(1, max_bytes)
        self.requests = 0
        self.bytes = 0
        self.peak_bytes = 0
        self._seq = 0
        self._live: dict[int, Ticket] = {}  # admission order: the first is the oldest
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._changed: asyncio.Event | None = None

    def _fits(self, cost: int) -> bool:
        return self.requests < self.max_requests and (self.requests == 0 or self.bytes + cost <= self.max_bytes)

    def _add(self, n: int) -> None:
        self.bytes += n
        self.peak_bytes = max(self.peak_bytes, self.bytes)

    async def admit(self, cost: int, wait_s: float) -> Ticket | None:
        """A ticket for ``cost`` bytes, waiting up to ``wait_s``; None when the receiver stays too busy."""
        loop = asyncio.get_running_loop()
        if self._changed is None or self._loop is not loop:
            self._loop, self._changed = loop, asyncio.Event()
        deadline = loop.time() + wait_s
        while True:
            self._changed.clear()
            with self._lock:
                if self._fits(cost):
                    return self._ticket(cost)
            left = deadline - loop.time()
            if left <= 0:
                return None
            try:
                await asyncio.wait_for(self._changed.wait(), left)
            except asyncio.TimeoutError:
                pass

    def try_admit(self, cost: int) -> Ticket | None:
        """A ticket for ``cost`` bytes if it fits now (no waiting: the gRPC server's threads), else None."""
        with self._lock:
            if not self._fits(cost):
                return None
            return self._ticket(cost)

    def _ticket(self, cost: int) -> Ticket:
        self.requests += 1
        self._add(cost)
        self._seq += 1
        ticket = Ticket(self, cost, self._seq)
        self._live[ticket.seq] = ticket
        return ticket

    def grow(self, ticket: Ticket, extra: int) -> bool:
        """Add ``extra`` bytes to a ticket without waiting; False when they do not fit (and it is not the oldest)."""
        with self._lock:
            oldest = next(iter(self._live), None)
            if ticket.seq != oldest and self.bytes + extra > self.max_bytes:
                return False
            self._add(extra)
            ticket.cost += extra
            return True

    def resize(self, ticket: Ticket, cost: int) -> None:
        """Set a ticket's reservation to ``cost`` (only ever called to shrink it); any thread."""
        with self._lock:
            self.bytes += cost - ticket.cost
            ticket.cost = cost
        self._notify()

    def release(self, ticket: Ticket) -> None:
        """Give a ticket back; any thread."""
        with self._lock:
            if self._live.pop(ticket.seq, None) is None:
                return  # released already
            self.requests -= 1
            self.bytes -= ticket.cost
            ticket.cost = 0
        self._notify()

    def _notify(self) -> None:
        loop, changed = self._loop, self._changed
        if loop is None or changed is None or loop.is_closed():
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            changed.set()
        else:
            loop.call_soon_threadsafe(changed.set)
