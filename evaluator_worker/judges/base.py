"""The judge interface every judge implements, and the verdict types.

A judge does two things:

- ``extract_claims(answer, question)`` -> ``Extraction`` (atomic claims, usage)
- ``verify(claims, contexts, question)`` -> ``Verification`` (one verdict per claim id, usage)

Capabilities declared by :class:`Judge` (defaults in :class:`JudgeBase`): ``io_bound``
(True for judges that wait on the network, e.g. an LLM API; the worker then judges up
to ``flow.max_in_flight`` answers at once under adaptive concurrency; CPU-bound judges
run on one judging thread), ``extract_sees_contexts`` (single-call judges: the
pipeline calls their ``extract_and_verify``, see :class:`SingleCallJudge`, or else passes the
contexts to ``extract_claims``) and ``bind_metrics`` (a :class:`JudgeObserver` to report into). A judge used by the
worker must be thread-safe.

Contract: ``verify`` returns exactly one ``ClaimVerdict`` per claim id, or
raises ``JudgeError``. The pipeline checks this anyway (``complete_verdicts``):
a missing verdict becomes ``ERROR``, never silently dropped, so the score's
denominator is always the number of claims, not the number of verdicts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Protocol, Sequence, runtime_checkable

from pydantic import BaseModel, Field, model_validator

from contract.failures import FailureType


class Verdict(str, Enum):
    SUPPORTED = "SUPPORTED"
    UNSUPPORTED = "UNSUPPORTED"
    CONTRADICTED = "CONTRADICTED"
    #: the judge failed on this claim: never counted as supported or contradicted
    ERROR = "ERROR"

    @property
    def label(self) -> str:
        """Lower-case metric label value."""
        return self.value.lower()


JUDGED = (Verdict.SUPPORTED, Verdict.UNSUPPORTED, Verdict.CONTRADICTED)


class Claim(BaseModel):
    """One atomic, independently verifiable statement from the answer."""

    id: str
    text: str
    #: index of the answer sentence it came from (for display)
    sentence: int | None = None


class ClaimVerdict(BaseModel):
    claim_id: str
    verdict: Verdict
    #: verbatim span from the context that decided it (None when unsupported)
    evidence: str | None = None
    #: index of the context chunk the evidence came from
    context_index: int | None = None
    confidence: float = Field(0.5, ge=0.0, le=1.0)
    reason: str | None = None
    #: the kind of unfaithfulness (contract.failures): exactly one on UNSUPPORTED / CONTRADICTED (``unknown`` when
    #: the judge cannot tell); none on ERROR; on SUPPORTED only ``hedge_inflation`` (the lenient hedge policy)
    failure_type: FailureType | None = None

    @model_validator(mode="after")
    def _one_type_per_flag(self) -> "ClaimVerdict":
        if self.verdict in (Verdict.UNSUPPORTED, Verdict.CONTRADICTED):
            if self.failure_type is None:
                self.failure_type = FailureType.UNKNOWN
        elif self.verdict is Verdict.ERROR or self.failure_type is not FailureType.HEDGE_INFLATION:
            self.failure_type = None
        return self


class HedgePolicy(str, Enum):
    """Whether a hedge-inflated claim ("Aspirin may reduce inflammation" against "Aspirin reduces inflammation")
    counts against faithfulness.

    ``lenient`` (default): SUPPORTED, typed ``hedge_inflation`` (the claim is weaker than the context and entailed
    by it; human faithfulness annotation counts it faithful, and on real labelled answers claims that hedge what
    the context asserts are hallucinated no more often than claims nothing flags: docs/judge-quality.md).
    ``strict``: UNSUPPORTED, typed ``hedge_inflation`` (a strict verifier's reading: the answer no longer says
    what the source says). Judges detect and type the hedge either way; the worker applies the policy.
    """

    LENIENT = "lenient"
    STRICT = "strict"


def apply_hedge_policy(verdicts: Sequence[ClaimVerdict], policy: HedgePolicy) -> list[ClaimVerdict]:
    """``verdicts`` with every ``hedge_inflation`` claim decided by ``policy`` (SUPPORTED or UNSUPPORTED); others
    unchanged."""
    want = Verdict.UNSUPPORTED if HedgePolicy(policy) is HedgePolicy.STRICT else Verdict.SUPPORTED
    out = []
    for v in verdicts:
        if v.failure_type is FailureType.HEDGE_INFLATION and v.verdict is not want and v.verdict is not Verdict.ERROR:
            note = f"hedge policy {HedgePolicy(policy).value}: {want.value}"
            v = v.model_copy(update={"verdict": want, "reason": f"{v.reason}; {note}" if v.reason else note})
        out.append(v)
    return out


@dataclass
class Usage:
    """What a judge call cost. Added up per answer and exported as metrics."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_creation_tokens: int = 0
    cost_usd: float = 0.0
    model: str | None = None
    retries: int = 0

    def __add__(self, other: "Usage") -> "Usage":
        return Usage(
            calls=self.calls + other.calls,
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_creation_tokens=self.cache_creation_tokens + other.cache_creation_tokens,
            cost_usd=self.cost_usd + other.cost_usd,
            model=self.model or other.model,
            retries=self.retries + other.retries,
        )

    def add(self, other: "Usage") -> None:
        """Add ``other``'s calls, tokens, cost and retries to this one (in place; the model stays)."""
        self.calls += other.calls
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.cache_read_tokens += other.cache_read_tokens
        self.cache_creation_tokens += other.cache_creation_tokens
        self.cost_usd += other.cost_usd
        self.retries += other.retries


@dataclass
class Extraction:
    claims: list[Claim]
    usage: Usage = field(default_factory=Usage)


@dataclass
class Verification:
    verdicts: list[ClaimVerdict]
    usage: Usage = field(default_factory=Usage)


class JudgeObserver(Protocol):
    """What a judge may report about itself (the worker's metrics implement it; judges never import them)."""

    def judge_error(self, judge: str, reason: str) -> None: ...

    def cascade_decided(self, decided_by: str, claims: int) -> None: ...

    def cascade_agreed(self, agree: bool) -> None: ...


class NullObserver:
    """Reports nowhere: what a judge observes until ``bind_metrics`` gives it the worker's metrics."""

    def judge_error(self, judge: str, reason: str) -> None:
        pass

    def cascade_decided(self, decided_by: str, claims: int) -> None:
        pass

    def cascade_agreed(self, agree: bool) -> None:
        pass


@runtime_checkable
class Judge(Protocol):
    """Everything the pipeline uses from a judge (subclass :class:`JudgeBase` for the defaults)."""

    name: str

    @property
    def io_bound(self) -> bool:
        """True for judges that wait on the network: the worker then runs many answers at once."""
        ...

    @property
    def extract_sees_contexts(self) -> bool:
        """True when one call extracts and judges: ``extract_and_verify`` (:class:`SingleCallJudge`) if the
        judge has it, else ``extract_claims`` uses ``contexts``."""
        ...

    def extract_claims(
        self, answer: str, question: str | None = None, *, contexts: Sequence[str] | None = None
    ) -> Extraction: ...

    def verify(self, claims: Sequence[Claim], contexts: Sequence[str], question: str | None = None) -> Verification: ...

    def bind_metrics(self, observer: JudgeObserver) -> None: ...


@runtime_checkable
class SingleCallJudge(Protocol):
    """A judge that can extract and judge an answer's claims in one step (its single-call mode).

    The pipeline calls ``extract_and_verify`` instead of ``extract_claims`` + ``verify`` when the
    judge has it and ``extract_sees_contexts`` is true. It returns the claims (with the usage of
    the call that found them) and exactly one verdict per claim (with the usage of any repair).
    """

    def extract_and_verify(
        self, answer: str, question: str | None, contexts: Sequence[str]
    ) -> tuple[Extraction, Verification]: ...


class JudgeBase:
    """Defaults for the optional capabilities: CPU-bound, extraction without contexts, nothing to report."""

    name: str = "judge"

    @property
    def io_bound(self) -> bool:
        return False

    @property
    def extract_sees_contexts(self) -> bool:
        return False

    def bind_metrics(self, observer: JudgeObserver) -> None:
        """Called once by the pipeline with the worker's metrics; judges that report nothing ignore it."""

    def models(self) -> tuple[str, ...]:
        """The models this judge calls or runs (part of its ``judge_id``: ``evaluator_worker.judges.identity``)."""
        return ()

    def preflight(self) -> None:
        """Check, before any record is read, what would make every call fail (a model the provider does not serve);
        raises a fatal :class:`~evaluator_worker.errors.JudgeError` naming the setting to fix. Judges with nothing
        to check do nothing."""


def preflight(judge: Judge) -> None:
    """Run the judge's start-up check (:meth:`JudgeBase.preflight`), for judges that have one."""
    check = getattr(judge, "preflight", None)
    if callable(check):
        check()


def complete_verdicts(claims: Sequence[Claim], verdicts: Sequence[ClaimVerdict]) -> list[ClaimVerdict]:
    """One verdict per claim, in claim order: missing ids become ERROR, extras and duplicates are ignored."""
    by_id: dict[str, ClaimVerdict] = {}
    for v in verdicts:
        by_id.setdefault(v.claim_id, v)
    out = []
    for c in claims:
        found = by_id.get(c.id)
        if found is None:
            found = ClaimVerdict(
                claim_id=c.id, verdict=Verdict.ERROR, confidence=0.0, reason="judge returned no verdict"
            )
        out.append(found)
    return out
