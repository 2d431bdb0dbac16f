"""PAS2-style consistency: do equivalent questions get compatible answers?

Passive mode (no extra traffic): :class:`ConsistencyTracker` keeps a bounded
window of recent answers. A new answer whose question is a paraphrase of an
earlier one (normalised tokens, Dice similarity >= ``threshold``) is checked
against those answers with the judge, using the earlier answer as the
"context": a claim the judge finds CONTRADICTED by it is a conflict, reported
as ``topic`` (the question's key words) + ``claim`` + ``conflicting_with``.

Active mode: :class:`ActiveProbe` sends paraphrases of a sampled question to a
user-supplied callable or HTTP endpoint and checks the answers the same way.

A judge or endpoint failure is a first-class outcome: status ``not_detected``
with confidence 0, never a silent "consistent".

Scope: the window is per process. With several workers, paraphrases landing on
different workers are not compared; run ``claimwatch score`` over the results,
or a single worker for consistency, when full coverage matters.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import urllib.request
from collections import deque
from dataclasses import dataclass
from typing import Callable, Sequence

from pydantic import BaseModel, Field

from contract.logs import get_logger
from evaluator_worker.errors import JudgeError
from evaluator_worker.judges.base import Claim, Judge, Verdict

log = get_logger(__name__)

_STOP = frozenset(
    "a an the of to in on at for and or is are was were be been do does did what which who whom whose when where why how "
    "me my i you your tell please could would can will it its this that these those about with by from as s".split()
)
_TOKEN = re.compile(r"[a-z0-9]+")


def question_tokens(question: str | None) -> frozenset[str]:
    """Lower-case content words, possessive/plural 's' stripped."""
    out = set()
    for t in _TOKEN.findall((question or "").lower()):
        if t in _STOP:
            continue
        if len(t) > 3 and t.endswith("s") and not t.endswith("ss"):
            t = t[:-1]
        out.add(t)
    return frozenset(out)


def similarity(a: frozenset[str], b: frozenset[str]) -> float:
    """Dice coefficient of two token sets (0 when either is empty)."""
    if not a or not b:
        return 0.0
    return 2 * len(a & b) / (len(a) + len(b))


class Conflict(BaseModel):
    topic: str
    claim: str
    conflicting_with: str
    other_trace_id: str


class ConsistencyResult(BaseModel):
    #: no_group | consistent | inconsistent | not_detected
    status: str
    group_size: int = 0
    conflicts: list[Conflict] = Field(default_factory=list)
    confidence: float = 0.0
    error: str | None = None


@dataclass
class _Seen:
    trace_id: str
    tokens: frozenset[str]
    answer: str


def compare_answers(judge: Judge, topic: str, claims: Sequence[Claim], others: Sequence[_Seen]) -> ConsistencyResult:
    """Check ``claims`` against each earlier answer in ``others``."""
    conflicts: list[Conflict] = []
    confidences: list[float] = []
    for other in others:
        if not other.answer.strip():
            continue
        try:
            verdicts = judge.verify(list(claims), [other.answer]).verdicts
        except JudgeError as exc:
            return ConsistencyResult(
                status="not_detected",
                group_size=len(others) + 1,
                confidence=0.0,
                error=f"{exc.reason}: {str(exc)[:200]}",
            )
        by_id = {c.id: c for c in claims}
        for v in verdicts:
            if v.verdict == Verdict.ERROR:
                continue
            confidences.append(v.confidence)
            if v.verdict == Verdict.CONTRADICTED and v.claim_id in by_id:
                conflicts.append(
                    Conflict(
                        topic=topic,
                        claim=by_id[v.claim_id].text,
                        conflicting_with=v.evidence or other.answer[:300],
                        other_trace_id=other.trace_id,
                    )
                )
    if not confidences:
        return ConsistencyResult(
            status="not_detected", group_size=len(others) + 1, confidence=0.0, error="judge returned no usable verdicts"
        )
    conf = min(confidences) if not conflicts else max(v for v in confidences)
    return ConsistencyResult(
        status="inconsistent" if conflicts else "consistent",
        group_size=len(others) + 1,
        conflicts=conflicts,
        confidence=round(conf, 4),
    )


def _normalised(answer: str) -> str:
    return " ".join(_TOKEN.findall(answer.lower()))


def _sampled(trace_id: str, rate: float) -> bool:
    if rate >= 1.0:
        return True
    h = int.from_bytes(hashlib.blake2b(trace_id.encode("utf-8", "replace"), digest_size=8).digest(), "big")
    return h < rate * 2**64


class ConsistencyTracker:
    """Passive detector over a bounded window of recent answers.

    Cost control: only a deterministic ``sample`` of answers is checked (every answer still enters
    the window); earlier answers with the same normalised text are consistent without a judge
    call; at most ``max_compare`` distinct earlier answers are compared.
    """

    def __init__(
        self, judge: Judge, *, threshold: float = 0.7, window: int = 2_000, max_compare: int = 2, sample: float = 1.0
    ) -> None:
        self.judge = judge
        self.threshold = threshold
        self.max_compare = max_compare
        self.sample = sample
        self._seen: deque[_Seen] = deque(maxlen=window)
        self._lock = threading.Lock()

    def check(self, trace_id: str, question: str | None, answer: str, claims: Sequence[Claim]) -> ConsistencyResult:
        tokens = question_tokens(question)
        checked = _sampled(trace_id, self.sample)
        with self._lock:
            similar = (
                [
                    s
                    for s in reversed(self._seen)
                    if s.trace_id != trace_id and similarity(tokens, s.tokens) >= self.threshold
                ]
                if checked
                else []
            )
            self._seen.append(_Seen(trace_id, tokens, answer))
        if not checked or not tokens or not similar or not claims:
            return ConsistencyResult(status="no_group", group_size=1 + len(similar))
        mine = _normalised(answer)
        distinct: list[_Seen] = []
        texts = {mine}
        for s in similar:
            norm = _normalised(s.answer)
            if norm not in texts:
                texts.add(norm)
                distinct.append(s)
        if not distinct:  # every earlier answer says the same thing, word for word
            return ConsistencyResult(status="consistent", group_size=1 + len(similar), confidence=1.0)
        topic = " ".join(sorted(tokens))[:120]
        result = compare_answers(self.judge, topic, claims, distinct[: self.max_compare])
        result.group_size = 1 + len(similar)
        return result


def default_paraphrases(question: str) -> list[str]:
    """Rule-based rewordings (framing only). Supply a better paraphraser (e.g. an LLM) for real probes."""
    q = question.strip()
    base = q[0].lower() + q[1:] if q else q
    return [f"Could you tell me {base.rstrip('?')}?", f"{q} Please answer briefly.", f"Quick question: {base}"]


def http_asker(url: str, timeout: float = 30.0) -> Callable[[str], str]:
    """An asker for a RAG app endpoint taking ``{"question": ...}`` and returning ``{"answer": ...}``."""

    def ask(question: str) -> str:
        req = urllib.request.Request(
            url,
            data=json.dumps({"question": question}).encode(),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            body = json.loads(resp.read())
        if not isinstance(body, dict) or not isinstance(body.get("answer"), str):
            raise ValueError('endpoint did not return {"answer": str}')
        return body["answer"]

    return ask


class ActiveProbe:
    """Send paraphrases of a question to the app and judge the answers' consistency."""

    def __init__(
        self,
        ask: Callable[[str], str],
        judge: Judge,
        paraphrase: Callable[[str], list[str]] = default_paraphrases,
    ) -> None:
        self.ask = ask
        self.judge = judge
        self.paraphrase = paraphrase

    def probe(self, question: str, answer: str | None = None) -> ConsistencyResult:
        try:
            original = answer if answer is not None else self.ask(question)
            answers = [(f"paraphrase-{i}", self.ask(p)) for i, p in enumerate(self.paraphrase(question))]
        except Exception as exc:  # the app failing is "not detected", never "consistent"
            return ConsistencyResult(status="not_detected", confidence=0.0, error=f"ask failed: {str(exc)[:200]}")
        try:
            claims = self.judge.extract_claims(original, question).claims
        except JudgeError as exc:
            return ConsistencyResult(status="not_detected", confidence=0.0, error=f"{exc.reason}: {str(exc)[:200]}")
        if not claims:
            return ConsistencyResult(status="no_group", group_size=1 + len(answers))
        others = [_Seen(tid, question_tokens(question), text) for tid, text in answers]
        return compare_answers(self.judge, " ".join(sorted(question_tokens(question)))[:120], claims, others)
