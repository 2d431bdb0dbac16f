"""The collector's one background loop: a daemon thread that calls a step until it is stopped.

The span processor's assembler thread, the Kafka sink's sender and the OTLP receiver's pump are
each a :class:`BackgroundLoop` around their own ``step``:

- ``step()`` returns how long to wait before the next call: ``0`` to go on at once (more work
  is queued), ``None`` for the loop's ``interval_s``, or a number of seconds (a backoff);
- a wait ends early on :meth:`wake` (new work) and on :meth:`stop`;
- an exception from ``step`` never ends the loop: it is counted (``errors``), handed to
  ``on_error`` (the owner counts it in its metrics and logs its own event) and the loop pauses
  ``error_pause_s`` before the next step;
- :meth:`stop` sets the stop flag, wakes the thread and joins it (unless called from the loop
  itself); a step that waits on its own uses :meth:`wait`, which a stop interrupts.

Daemon threads: an application exiting with a loop still running does not wait for it (its
owner's ``shutdown`` is what flushes).
"""

from __future__ import annotations

import threading
from typing import Callable

from contract.logs import get_logger

log = get_logger(__name__)


class BackgroundLoop:
    """A named daemon thread running ``step()`` with a wake-up, an interval, counted errors and a joined stop."""

    def __init__(
        self,
        name: str,
        step: Callable[[], float | None],
        *,
        interval_s: float,
        on_error: Callable[[Exception], None] | None = None,
        error_pause_s: float | None = None,
    ) -> None:
        self.name = name
        self.interval_s = interval_s
        self.error_pause_s = interval_s if error_pause_s is None else error_pause_s
        #: exceptions ``step`` raised (each one logged through ``on_error``)
        self.errors = 0
        self.thread: threading.Thread | None = None
        self._step = step
        self._on_error = on_error
        self._stop = threading.Event()
        self._wake = threading.Event()

    def start(self) -> "BackgroundLoop":
        """Start the thread (once; a stopped loop is not restarted: make a new one)."""
        if self.thread is None and not self._stop.is_set():
            self.thread = threading.Thread(target=self._run, name=self.name, daemon=True)
            self.thread.start()
        return self

    @property
    def alive(self) -> bool:
        return self.thread is not None and self.thread.is_alive()

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    def in_loop(self) -> bool:
        """Whether the caller is the loop's own thread (which must not wait for itself)."""
        return self.thread is threading.current_thread()

    def wake(self) -> None:
        """End the current wait: there is work."""
        self._wake.set()

    def wait(self, seconds: float) -> bool:
        """For a step that waits on its own (a retry backoff): sleep up to ``seconds``; True once stopping."""
        return self._stop.wait(seconds)

    def stop(self, timeout_s: float | None = 2.0) -> bool:
        """Stop after the current step and join the thread for up to ``timeout_s``; True if it has ended."""
        self._stop.set()
        self._wake.set()
        thread = self.thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout_s)
        return thread is None or not thread.is_alive()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                pause = self._step()
            except Exception as exc:  # never let the thread die
                self.errors += 1
                self._report(exc)
                pause = self.error_pause_s
            if pause is None:
                pause = self.interval_s
            if pause > 0 and not self._stop.is_set():
                self._wake.wait(pause)
                self._wake.clear()

    def _report(self, exc: Exception) -> None:
        try:
            if self._on_error is not None:
                self._on_error(exc)
                return
        except Exception:  # pragma: no cover - the handler itself failed: fall back to the plain line
            pass
        log.warning("background_loop_error", loop=self.name, error=type(exc).__name__, detail=str(exc)[:200])
