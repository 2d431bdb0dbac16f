"""Small scripted judges for tests (no network, no model).

``TagJudge`` splits the answer on '.' and decides each claim from a tag in its
text: ``[C]`` -> CONTRADICTED, ``[U]`` -> UNSUPPORTED, ``[DROP]`` -> no verdict
returned (a judge that silently drops a claim), ``[BOOM]`` -> raises
JudgeOutputError, anything else -> SUPPORTED with the first context as evidence.

``slow_factory`` is a ``module:factory`` judge for subprocess workers: a
TagJudge that, for the trace whose answer contains the env var
``CLAIMWATCH_TEST_SLOW_TOKEN``, touches ``CLAIMWATCH_TEST_SLOW_FILE`` and sleeps
``CLAIMWATCH_TEST_SLOW_SECONDS`` (so a test can SIGKILL it mid-record).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Sequence

from evaluator_worker.errors import JudgeOutputError, JudgeRateLimited
from evaluator_worker.judges.base import Claim, ClaimVerdict, Extraction, JudgeBase, Usage, Verdict, Verification


class TagJudge(JudgeBase):
    name = "tag"

    def __init__(self, delay_s: float = 0.0, model: str | None = None) -> None:
        self.delay_s = delay_s
        self.calls = 0
        self.model = model

    def models(self) -> tuple[str, ...]:
        """The model it stands for (none by default): what its judge id names."""
        return (self.model,) if self.model else ()

    def extract_claims(self, answer: str, question: str | None = None) -> Extraction:
        parts = [p.strip() for p in answer.split(".") if p.strip()]
        if any(p.lower().startswith("i don't know") for p in parts):
            parts = []
        return Extraction([Claim(id=f"c{i + 1}", text=p) for i, p in enumerate(parts)], Usage(calls=0))

    def verify(self, claims: Sequence[Claim], contexts: Sequence[str], question: str | None = None) -> Verification:
        self.calls += 1
        if self.delay_s:
            time.sleep(self.delay_s)
        out = []
        for c in claims:
            if "[BOOM]" in c.text:
                raise JudgeOutputError("scripted malformed output")
            if "[DROP]" in c.text:
                continue
            if "[C]" in c.text:
                v = Verdict.CONTRADICTED
            elif "[U]" in c.text:
                v = Verdict.UNSUPPORTED
            else:
                v = Verdict.SUPPORTED
            out.append(
                ClaimVerdict(
                    claim_id=c.id,
                    verdict=v,
                    evidence=contexts[0][:80] if contexts and v != Verdict.UNSUPPORTED else None,
                    context_index=0 if contexts and v != Verdict.UNSUPPORTED else None,
                    confidence=0.9,
                )
            )
        return Verification(out, Usage(calls=1, input_tokens=100, output_tokens=20, cost_usd=0.001, model="tag-1"))


class StrictTagJudge(TagJudge):
    """A candidate judge (the shadow in tests): like TagJudge, but a claim tagged [P] (a paraphrase) is UNSUPPORTED."""

    name = "strict-tag"

    def verify(self, claims: Sequence[Claim], contexts: Sequence[str], question: str | None = None) -> Verification:
        out = super().verify(claims, contexts, question)
        paraphrases = {c.id for c in claims if "[P]" in c.text}
        out.verdicts[:] = [
            ClaimVerdict(claim_id=v.claim_id, verdict=Verdict.UNSUPPORTED, confidence=0.9)
            if v.claim_id in paraphrases
            else v
            for v in out.verdicts
        ]
        return out


class FlakyJudge(TagJudge):
    """Raises JudgeRateLimited ``failures`` times, then behaves like TagJudge."""

    name = "flaky"

    def __init__(self, failures: int) -> None:
        super().__init__()
        self.failures = failures

    def verify(self, claims, contexts, question=None):
        if self.failures > 0:
            self.failures -= 1
            raise JudgeRateLimited("429 from the scripted judge")
        return super().verify(claims, contexts, question)


class _SlowOnToken(TagJudge):
    def __init__(self) -> None:
        super().__init__()
        self.token = os.environ.get("CLAIMWATCH_TEST_SLOW_TOKEN", "")
        self.flag = os.environ.get("CLAIMWATCH_TEST_SLOW_FILE", "")
        self.seconds = float(os.environ.get("CLAIMWATCH_TEST_SLOW_SECONDS", "0") or 0)
        self.delay_s = float(os.environ.get("CLAIMWATCH_TEST_DELAY_SECONDS", "0") or 0)

    def verify(self, claims, contexts, question=None):
        if self.token and any(self.token in c.text for c in claims) and self.seconds:
            if self.flag:
                Path(self.flag).write_text("entered")
            time.sleep(self.seconds)
        return super().verify(claims, contexts, question)


def slow_factory(settings=None):
    return _SlowOnToken()


def tag_factory(settings=None):
    return TagJudge()
