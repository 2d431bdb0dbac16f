"""Consumer-group membership shared by the worker and the OTLP bridge: one rebalance listener, one way to wait.

kafka-python 3 runs rebalance listeners on its IO thread, the one that sends heartbeats, and
refuses a blocking consumer call there (``commit()`` raises "Cannot block on net.run() from the
IO thread itself"). So both group members use :class:`GroupListener`: its hooks are coroutines
awaited on that loop, they commit with ``await consumer.commit_async(...)``, wait with
:func:`loop_sleep`, and run blocking work (a producer flush, reading the results topic) on a
helper thread with :func:`off_loop`, so heartbeats go on while a revoke drains.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Awaitable, Callable

from kafka.consumer.subscription_state import AsyncConsumerRebalanceListener
from kafka.net.selector import KernelEvent
from kafka.structs import OffsetAndMetadata

from contract.logs import get_logger

log = get_logger(__name__)


async def loop_sleep(seconds: float) -> None:
    """Suspend a rebalance hook on kafka-python's IO loop without blocking it (heartbeats go on).

    The loop has no public sleep; this awaits the kernel event its own ``sleep`` returns.
    """
    await KernelEvent("_sleep", seconds)


async def off_loop(fn: Callable[[], Any], timeout_s: float, name: str, poll_s: float = 0.02) -> bool:
    """Run blocking ``fn()`` on a helper thread and await it from the IO loop; False if it did not end in time.

    ``fn``'s exceptions are its own to handle (an escaping one is logged and counts as ended).
    """
    done = threading.Event()

    def run() -> None:
        try:
            fn()
        except Exception as exc:
            log.warning("group_off_loop_failed", task=name, error=type(exc).__name__, detail=str(exc)[:200])
        finally:
            done.set()

    threading.Thread(target=run, name=name, daemon=True).start()
    deadline = time.monotonic() + timeout_s
    while not done.is_set() and time.monotonic() < deadline:
        await loop_sleep(poll_s)
    return done.is_set()


def commit_offsets(offsets: dict[Any, int]) -> dict[Any, OffsetAndMetadata]:
    """``{partition: next offset}`` as kafka-python's commit argument."""
    return {tp: OffsetAndMetadata(o, None, -1) for tp, o in offsets.items()}


class GroupListener(AsyncConsumerRebalanceListener):
    """Rebalance hooks as coroutines: ``revoked(partitions, lost)`` and ``assigned(partitions)``.

    ``lost`` is true when the session expired (KIP-429): nothing can be committed any more.
    """

    def __init__(
        self,
        revoked: Callable[[list[Any], bool], Awaitable[None]],
        assigned: Callable[[list[Any]], Awaitable[None]],
    ) -> None:
        self._revoked = revoked
        self._assigned = assigned

    async def on_partitions_revoked(self, revoked: Any) -> None:
        await self._revoked(list(revoked), False)

    async def on_partitions_lost(self, lost: Any) -> None:
        await self._revoked(list(lost), True)

    async def on_partitions_assigned(self, assigned: Any) -> None:
        await self._assigned(list(assigned))
