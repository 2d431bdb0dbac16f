"""Cascade judge: a cheap first judge decides the confident claims, a stronger one the rest.

- Claims the first judge is least sure of (the ``escalate_share`` least confident, 30% by
  default, or those below ``escalate_below`` when set; and ERROR) go to the second judge
  (e.g. Claude) in one batched call per answer.
- A deterministic sample (``agreement_sample``) of the confident claims also goes
  to the second judge; their agreement is counted, so drift in the cheap judge
  shows in Grafana (``claimwatch_cascade_agreement_total{agree}``).
- The second judge spends at most ``budget_usd_per_hour`` (sliding hour, from the
  usage it reports); over budget, claims keep the first verdict
  (``decided_by="first_over_budget"``). A failing second judge also leaves the
  first verdict in place (``decided_by="first_fallback"``) and is counted, except
  when it is throttled (429/529) or misconfigured (401/403): those errors are raised,
  so the worker's flow control backs off (and retries) or stops, instead of quietly
  serving the cheap judge's verdicts.
"""

from __future__ import annotations

import hashlib
import threading
import time
from bisect import bisect_left, bisect_right, insort
from collections import deque
from typing import Any, Callable, Sequence

from contract.logs import get_logger
from evaluator_worker.errors import JudgeError
from evaluator_worker.judges.base import (
    Claim,
    ClaimVerdict,
    Extraction,
    Judge,
    JudgeBase,
    JudgeObserver,
    NullObserver,
    Usage,
    Verdict,
    Verification,
    preflight,
)
from evaluator_worker.judges.settings import CascadeSettings

log = get_logger(__name__)

#: the threshold when neither escalate_share nor escalate_below is set
DEFAULT_BELOW = 0.8


def _in_sample(text: str, rate: float) -> bool:
    if rate <= 0:
        return False
    h = int.from_bytes(hashlib.blake2b(text.encode("utf-8", "replace"), digest_size=8).digest(), "big")
    return h < rate * 2**64


class CascadeJudge(JudgeBase):
    def __init__(
        self,
        first: Judge,
        second: Judge,
        settings: CascadeSettings | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.first = first
        self.second = second
        self.settings = settings or CascadeSettings()
        self.name = "cascade"
        self._clock = clock
        self._spend: deque[tuple[float, float]] = deque()
        self._lock = threading.Lock()
        self._observer: JudgeObserver = NullObserver()
        #: recent first-judge confidences (escalate_share: the threshold is their escalate_share quantile)
        self._recent: deque[float] = deque(maxlen=self.settings.share_window)
        self._sorted: list[float] = []
        self.stats = {"first": 0, "second": 0, "first_over_budget": 0, "first_fallback": 0, "agree": 0, "disagree": 0}

    def bind_metrics(self, observer: JudgeObserver) -> None:
        """Called by the Evaluator so escalation and agreement become metrics."""
        self._observer = observer

    def preflight(self) -> None:
        """Both judges' start-up checks (the second is the one with a provider to ask)."""
        preflight(self.first)
        preflight(self.second)

    def models(self) -> tuple[str, ...]:
        """Both stages' models, the first's first."""
        from evaluator_worker.judges.fingerprint import models_of

        return (*models_of(self.first), *models_of(self.second))

    def fingerprint(self) -> dict[str, Any]:
        """Both stages and which claims reach the second (judge identity); the budget and the agreement sample are
        in too: past the budget claims keep the first verdict."""
        from evaluator_worker.judges.fingerprint import fingerprint_of

        return {
            "kind": "cascade",
            "first": {"name": self.first.name, "fingerprint": fingerprint_of(self.first)},
            "second": {"name": self.second.name, "fingerprint": fingerprint_of(self.second)},
            "settings": self.settings.model_dump(mode="json", exclude={"first", "second"}),
        }

    @property
    def io_bound(self) -> bool:
        """As the second judge: escalations wait on the network."""
        return self.second.io_bound

    # -- budget ----------------------------------------------------------------
    def spent_last_hour(self) -> float:
        now = self._clock()
        with self._lock:
            while self._spend and now - self._spend[0][0] > 3600:
                self._spend.popleft()
            return sum(c for _, c in self._spend)

    def _charge(self, usage: Usage) -> None:
        with self._lock:
            self._spend.append((self._clock(), usage.cost_usd))

    def _count(self, decided_by: str, n: int = 1) -> None:
        self.stats[decided_by] += n
        if n:
            self._observer.cascade_decided(decided_by, n)

    def _agreement(self, agree: bool) -> None:
        self.stats["agree" if agree else "disagree"] += 1
        self._observer.cascade_agreed(agree)

    def threshold(self, confidences: Sequence[float]) -> tuple[float, float]:
        """``(t, fill)``: claims below confidence ``t`` escalate, and a ``fill`` share of those exactly at ``t``
        (picked deterministically by claim text). ``escalate_below`` when set (fill 0); else the
        ``escalate_share`` quantile of the recent first-judge confidences, this call's included (so the
        first answers already escalate about that share: no warm-up threshold that may not suit the first
        judge's scale); ``fill`` keeps the share when many claims tie at one confidence, as a rule-based
        judge's do."""
        below, share = self.settings.escalate_below, self.settings.escalate_share
        with self._lock:
            for c in confidences:  # the window, kept sorted as it slides (no sort per answer)
                if len(self._recent) == self._recent.maxlen:
                    del self._sorted[bisect_left(self._sorted, self._recent.popleft())]
                self._recent.append(c)
                insort(self._sorted, c)
            if below is not None or share is None or not self._sorted:
                return (DEFAULT_BELOW if below is None else below), 0.0
            if share <= 0:
                return float("-inf"), 0.0
            ordered = self._sorted
            want = share * len(ordered)
            t = ordered[min(len(ordered) - 1, int(want))]
            n_below = bisect_left(ordered, t)
            n_at = bisect_right(ordered, t) - n_below
        return t, min(max((want - n_below) / n_at, 0.0), 1.0)

    # -- judge protocol ------------------------------------------------------------
    def extract_claims(
        self, answer: str, question: str | None = None, *, contexts: Sequence[str] | None = None
    ) -> Extraction:
        return self.first.extract_claims(answer, question)

    def verify(self, claims: Sequence[Claim], contexts: Sequence[str], question: str | None = None) -> Verification:
        first = self.first.verify(claims, contexts, question)
        usage = first.usage
        by_id = {v.claim_id: v for v in first.verdicts}
        threshold, fill = self.threshold([v.confidence for v in first.verdicts if v.verdict != Verdict.ERROR])
        always = {v.upper() for v in self.settings.always_escalate}
        uncertain = [
            c
            for c in claims
            if c.id not in by_id
            or by_id[c.id].verdict == Verdict.ERROR
            or by_id[c.id].confidence < threshold
            or (by_id[c.id].confidence == threshold and _in_sample("fill:" + c.text, fill))
            or by_id[c.id].verdict.value in always
        ]
        uncertain_ids = {c.id for c in uncertain}
        sampled = [
            c for c in claims if c.id not in uncertain_ids and _in_sample(c.text, self.settings.agreement_sample)
        ]
        to_second = uncertain + sampled
        final: dict[str, ClaimVerdict] = dict(by_id)
        if not to_second:
            self._count("first", len(claims))
            return Verification([final[c.id] for c in claims if c.id in final], usage)
        if self.spent_last_hour() >= self.settings.budget_usd_per_hour:
            self._count("first_over_budget", len(uncertain))
            self._count("first", len(claims) - len(uncertain))
            return Verification([final[c.id] for c in claims if c.id in final], usage)
        try:
            second = self.second.verify(to_second, contexts, question)
        except JudgeError as exc:
            if exc.throttled or exc.fatal:
                raise
            log.warning("cascade_second_judge_failed", reason=exc.reason)
            self._observer.judge_error(self.second.name, exc.reason)
            self._count("first_fallback", len(uncertain))
            self._count("first", len(claims) - len(uncertain))
            return Verification([final[c.id] for c in claims if c.id in final], usage)
        self._charge(second.usage)
        usage = usage + second.usage
        usage.model = second.usage.model or usage.model
        # an ERROR of the second judge (truncated output, a missing id) decides nothing: the first verdict stands
        second_by_id = {v.claim_id: v for v in second.verdicts if v.verdict != Verdict.ERROR}
        for c in uncertain:
            if c.id in second_by_id:
                final[c.id] = second_by_id[c.id]
        self._count("second", sum(1 for c in uncertain if c.id in second_by_id))
        self._count("first_fallback", sum(1 for c in uncertain if c.id not in second_by_id))
        self._count("first", len(claims) - len(uncertain))
        for c in sampled:
            s = second_by_id.get(c.id)
            if s is not None:
                self._agreement(s.verdict == final[c.id].verdict)
        return Verification([final[c.id] for c in claims if c.id in final], usage)
