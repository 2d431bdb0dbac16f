"""A shadow judge: a candidate judge run beside the main one on a sampled share of live answers, counted apart.

A judge change is a release: a new model, a prompt fix or a recalibration moves every release's rates at once
(:mod:`evaluator_worker.judges.identity`). Before switching, the candidate judges a sample of the same live answers
as the current judge, and ``claimwatch judge-compare`` says how far they agree, how the flagged share would move per
slice, and how each does on your labels (docs/choosing-a-judge.md, "Switching judges").

- **Sampled by record key** (``sample`` of the main judge's evaluated answers): every replica, and every replay of
  a record, picks the same answers.
- **Never in the way**: :meth:`ShadowJudge.offer` is called when the main result is durable; it is O(1) and never
  raises. The shadow judges on its own threads (``max_in_flight``) with a bounded queue for bursts (``max_queued``);
  a sampled answer that finds the queue full, or the hour's budget spent, is skipped, counted by reason
  (``claimwatch_shadow_skipped_total``) and logged at most once a minute per reason; so is one still queued or being
  judged when the worker stops. Every sampled answer is judged or skipped with a reason. Its failures never touch
  the record's offset, the main result or the worker.
- **Yields to the main judge when the provider throttles**: both judges usually share one organisation's rate
  limit, so a shadow call answered 429/529 is not retried (``RetryPolicy.yield_when_throttled``): the answer is
  skipped (``throttled``) and the shadow takes no new answer for the provider's retry-after (else
  ``THROTTLE_PAUSE_S``), instead of holding its threads in retries and taking requests the main judge needs.
- **Counted apart**: ``claimwatch_shadow_answers_total{main, shadow, main_judge_id, judge_id, <slices>}`` (each
  judge's call on the same answer: flagged, ok, none (no claims), failed), ``claimwatch_shadow_claims_total`` (the
  verdicts of claims both judges extracted, paired by their text; a claim only one of them extracted pairs with
  ``none``), its cost, in-flight answers and budget; ``claimwatch_judge_info{role="shadow"}``. The decision counters
  (``claimwatch_claims_total``, ``claimwatch_answers_*``) never see a shadow verdict.
- **Its results** go to their own topic (``results_topic``, keyed like the main result), never the results topic.
"""

from __future__ import annotations

import hashlib
import re
import threading
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Callable

from contract.logs import get_logger
from contract.ratelog import RateLimitedLog
from contract.record import RagTrace
from evaluator_worker.errors import JudgeThrottledYield
from evaluator_worker.metrics import CALLS
from evaluator_worker.metrics import SHADOW_SKIP_REASONS as SKIP_REASONS
from evaluator_worker.results import encode_result, record_budget
from evaluator_worker.scoring import AnswerResult, answer_call

if TYPE_CHECKING:
    from evaluator_worker.config import ShadowSettings
    from evaluator_worker.metrics import WorkerMetrics
    from evaluator_worker.pipeline import Evaluator
    from evaluator_worker.seams import Producer

log = get_logger(__name__)

__all__ = ["CALLS", "SKIP_REASONS", "ShadowJudge", "SpendWindow", "answer_call", "pair_claims", "sampled"]

#: seconds of spend the budget looks back over
HOUR_S = 3600.0
#: how long a throttled shadow takes no new answer when the provider gave no retry-after (a 529 overloaded)
THROTTLE_PAUSE_S = 30.0


def sampled(key: str, share: float) -> bool:
    """Whether the answer with record key ``key`` is in the sampled ``share`` (the same on every replica)."""
    if share >= 1.0:
        return True
    if share <= 0.0:
        return False
    h = int.from_bytes(hashlib.blake2b(key.encode("utf-8", "replace"), digest_size=8).digest(), "big")
    return h / 2**64 < share


_SPACE = re.compile(r"\s+")


def _norm(text: str) -> str:
    return _SPACE.sub(" ", text).strip().strip(".").lower()


def pair_claims(main: AnswerResult, shadow: AnswerResult) -> list[tuple[str, str]]:
    """``(main verdict, shadow verdict)`` per claim, claims paired by their text (case, spaces and a final period
    ignored); a claim only one judge extracted pairs with ``none``."""
    theirs: dict[str, list[str]] = {}
    for c in shadow.claims:
        theirs.setdefault(_norm(c.text), []).append(c.verdict.label)
    pairs = []
    for c in main.claims:
        left = theirs.get(_norm(c.text))
        pairs.append((c.verdict.label, left.pop(0) if left else "none"))
    pairs += [("none", v) for rest in theirs.values() for v in rest]
    return pairs


class SpendWindow:
    """Spend over the last hour (estimated dollars), for the shadow's budget."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, span_s: float = HOUR_S) -> None:
        self._clock = clock
        self._span = span_s
        self._items: deque[tuple[float, float]] = deque()
        self._total = 0.0
        self._lock = threading.Lock()

    def add(self, dollars: float) -> None:
        if dollars > 0:
            with self._lock:
                self._items.append((self._clock(), dollars))
                self._total += dollars

    def spent(self) -> float:
        """Dollars spent in the last ``span_s`` seconds."""
        with self._lock:
            cutoff = self._clock() - self._span
            while self._items and self._items[0][0] <= cutoff:
                self._total -= self._items.popleft()[1]
            self._total = max(0.0, self._total) if self._items else 0.0
            return self._total


class ShadowJudge:
    """Judges a sampled share of the main judge's answers with a candidate judge (module docstring)."""

    def __init__(
        self,
        evaluator: Evaluator,
        settings: ShadowSettings,
        metrics: WorkerMetrics,
        *,
        main_judge_id: str,
        producer: Producer | None = None,
        max_request_bytes: int = 1_048_576,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.evaluator = evaluator
        self.settings = settings
        self.metrics = metrics
        self.main_judge_id = main_judge_id
        self.identity = evaluator.identity
        self.producer = producer
        self.spend = SpendWindow(clock)
        self._clock = clock
        #: no new answer before this (clock): the provider throttled the shadow
        self._paused_until = -1.0
        self._budget_bytes = record_budget(max_request_bytes)
        self._in_flight = 0
        self._lock = threading.Lock()
        self._closed = False
        self._cancel = threading.Event()
        self._pool = ThreadPoolExecutor(settings.max_in_flight, thread_name_prefix="claimwatch-shadow")
        self._warn = RateLimitedLog(logger=__name__)
        metrics.set_judge(self.identity, role="shadow")
        metrics.watch_shadow(self, settings.budget_usd_per_hour)

    @property
    def in_flight(self) -> int:
        """Sampled answers taken and not finished (being judged or queued)."""
        return self._in_flight

    def offer(self, trace: RagTrace, main: AnswerResult) -> None:
        """Judge ``trace`` again with the shadow if it is sampled and there is room (O(1); never raises)."""
        try:
            if main.outcome != "evaluated" or not sampled(main.record_key, self.settings.sample):
                return
            reason = self._admit()
            if reason is not None:
                self._skip(reason, trace_id=main.trace_id)
                return
            self._pool.submit(self._run, trace, main)
        except Exception as exc:  # a shadow must never fail the main path
            self._skip("error", trace_id=getattr(main, "trace_id", None), error=repr(exc)[:200])

    def _admit(self) -> str | None:
        with self._lock:
            if self._closed:
                return "stopped"
            if self._clock() < self._paused_until:
                return "throttled"
            if self._in_flight >= self.settings.max_in_flight + self.settings.max_queued:
                return "busy"
            if self.spend.spent() >= self.settings.budget_usd_per_hour:
                return "budget"
            self._in_flight += 1
            return None

    def _run(self, trace: RagTrace, main: AnswerResult) -> None:
        try:
            if self._cancel.is_set():  # queued when the worker stopped
                self._skip("stopped", trace_id=main.trace_id)
                return
            result = self.evaluator.evaluate(trace, cancelled=self._cancel.is_set)
            self.spend.add(float((result.usage or {}).get("cost_usd") or 0.0))
            self.metrics.observe_shadow(main, result, pair_claims(main, result), self.main_judge_id)
            self._write(result)
        except JudgeThrottledYield as exc:
            pause = exc.retry_after if exc.retry_after else THROTTLE_PAUSE_S
            with self._lock:
                self._paused_until = max(self._paused_until, self._clock() + pause)
            self._skip("throttled", trace_id=main.trace_id, pause_s=round(pause, 2))
        except Exception as exc:
            self._skip("stopped" if self._closed else "error", trace_id=main.trace_id, error=repr(exc)[:200])
        finally:
            with self._lock:
                self._in_flight -= 1

    def _write(self, result: AnswerResult) -> None:
        topic = self.settings.results_topic
        if not topic or self.producer is None:
            return
        key, value, headers, _ = encode_result(result, self._budget_bytes)
        future = self.producer.send(topic, key=key, value=value, headers=headers)
        future.add_errback(lambda exc: self._skip("write_error", trace_id=result.trace_id, error=repr(exc)[:200]))

    def _skip(self, reason: str, **fields: Any) -> None:
        self.metrics.shadow_skipped.labels(reason).inc()
        self._warn.warn(f"shadow_{reason}", "shadow_answer_skipped", reason=reason, **fields)

    def close(self, timeout_s: float = 5.0) -> None:
        """Stop taking answers; those taken are given ``timeout_s`` to finish, then the rest are skipped (stopped)."""
        with self._lock:
            self._closed = True
        deadline = time.monotonic() + timeout_s
        while self._in_flight and time.monotonic() < deadline:
            time.sleep(0.01)
        self._cancel.set()  # what is still queued is skipped, what is being judged gives up at its next judge call
        self._pool.shutdown(wait=False)
        self.metrics.unwatch_shadow()
