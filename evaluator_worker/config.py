"""Worker settings: one place, ``CLAIMWATCH_*`` environment variables (nested with ``__``), defaults that run."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator
from pydantic_settings import SettingsConfigDict

from contract.kafka import KafkaConnection
from contract.slices import DEFAULT_SLICE_LABELS
from evaluator_worker.judges.base import HedgePolicy
from evaluator_worker.judges.settings import AnthropicSettings, CascadeSettings, JudgeSettings

#: what a worker without a chosen judge says (one line, then it exits)
NO_JUDGE_CHOSEN = (
    "no judge chosen: set CLAIMWATCH_JUDGE (or --judge): anthropic for production (docs/choosing-a-judge.md); "
    "heuristic, offline or verifier only for demos and trials (the gate treats their counts as unfit)"
)

#: the derived slice labels (evaluator_worker.shape), all on by default
DERIVED_LABELS: tuple[Literal["sources", "reasoning"], ...] = ("sources", "reasoning")

#: values of CLAIMWATCH_RESULTS_TOPIC that turn the results topic off
_OFF = frozenset({"null", "none", "off"})


def topic_or_off(value: object) -> object:
    """A topic setting's value: ``null`` / ``none`` / ``off`` turn it off (None); an empty variable means unset."""
    if isinstance(value, str) and value.strip().lower() in _OFF:
        return None
    return value


__all__ = [
    "AnthropicSettings",
    "CascadeSettings",
    "ConsumerTuning",
    "FlowSettings",
    "ParitySettings",
    "ShadowSettings",
    "WorkerSettings",
]


class ConsumerTuning(BaseModel):
    """Consumer-group timing. Short timeouts make joins and failover fast (seconds, not minutes)."""

    group_id: str = "claimwatch-evaluators"
    session_timeout_ms: int = 6_000
    heartbeat_interval_ms: int = 1_000
    max_poll_interval_ms: int = 60_000
    max_poll_records: int = 50
    auto_offset_reset: str = "earliest"
    poll_timeout_ms: int = 500


class FlowSettings(BaseModel):
    """How many answers one worker judges at once, how it backs off, how writes are made durable.

    See ``evaluator_worker.flow`` (retries, adaptive concurrency) and ``evaluator_worker.worker``.
    """

    #: answers handed to judging at once. Network judges (anthropic, cascade) get this many threads: at ~2 s per
    #: call and 2 calls per answer, 64 gives ~16 answers/s per worker. Partitions are paused while it is full
    max_in_flight: int = Field(64, ge=1, le=4096)
    #: lowest adaptive concurrency after repeated 429/529 (the limit starts at max_in_flight)
    min_concurrency: int = Field(1, ge=1)
    #: client-side ceiling on judge calls per minute (your Anthropic organisation's RPM); unset = none
    requests_per_minute: float | None = Field(None, gt=0)
    #: client-side ceiling on estimated input tokens per minute (your organisation's ITPM); unset = none
    input_tokens_per_minute: float | None = Field(None, gt=0)
    #: first retry delay of a failed judge call; doubles per attempt (full jitter), never below retry-after
    retry_base_s: float = Field(1.0, gt=0)
    retry_max_s: float = Field(60.0, gt=0)
    #: a judge operation is retried for this long before the answer's claims become ERROR
    retry_deadline_s: float = Field(900.0, gt=0)
    #: on revoke and on SIGTERM: time to finish in-flight answers and commit them; the rest is handed back
    drain_timeout_s: float = Field(20.0, ge=0)
    #: how often durable offsets are committed
    commit_interval_s: float = Field(1.0, gt=0)
    #: a result write the broker keeps failing with a retriable error (timeouts, NOT_ENOUGH_REPLICAS) is
    #: re-sent for this long; then the worker stops without committing past it
    write_retry_deadline_s: float = Field(600.0, gt=0)
    #: attempts for a write failing with a non-retriable error (authorization, invalid topic) before the stop
    write_max_attempts: int = Field(5, ge=1)
    #: results and dead letters awaiting acknowledgement before partitions are paused
    max_unacked_writes: int = Field(10_000, ge=1)
    #: the producer's request limit (kafka-python max_request_size). Results larger than this minus
    #: headroom are shrunk (text dropped, verdicts kept); keep it <= the broker's message.max.bytes
    producer_max_request_bytes: int = Field(1_048_576, ge=1)
    producer_linger_ms: int = Field(50, ge=0)
    #: a send() never blocks the poll loop longer than this (metadata or buffer waits); it is retried
    producer_max_block_ms: int = Field(1_000, ge=0)


class ParitySettings(BaseModel):
    """Scores other tools report (RagaliQ, DeepEval, FActScore, PAS2), from the same verdicts."""

    #: RagaliQ faithfulness pass threshold (supported / judged claims)
    faithfulness_threshold: float = 0.7
    #: RagaliQ hallucination pass threshold (1 - hallucinated / judged claims)
    hallucination_threshold: float = 0.8
    #: SUPPORTED claims below this confidence are counted as suspect (0 disables)
    confidence_floor: float = 0.5
    #: FActScore length penalty: minimum expected claims per route, e.g. {"faq": 3}; "*" applies to every route
    min_claims_per_route: dict[str, int] = Field(default_factory=dict)
    #: passive consistency across paraphrased questions (PAS2-style); opt-in: each check costs extra judge calls
    consistency: bool = False
    #: judge used for consistency checks (cheap by default, whatever the main judge is)
    consistency_judge: str = "heuristic"
    #: Dice similarity of question words above which two questions are paraphrases
    consistency_threshold: float = 0.7
    #: recent answers kept for consistency checks
    consistency_window: int = 2_000
    #: share of answers checked against earlier paraphrases (deterministic by trace id; each check
    #: costs up to 2 extra verify calls of the consistency judge)
    consistency_sample: float = Field(0.2, ge=0.0, le=1.0)


class ShadowSettings(BaseModel):
    """A candidate judge run beside the main one on a sampled share of live answers (evaluator_worker.shadow).

    Its verdicts never reach the decision counters: they are counted apart (``claimwatch_shadow_*``, under its own
    ``judge_id``) and written to their own topic, for ``claimwatch judge-compare``. Off while ``judge`` is unset.
    """

    #: the candidate judge (a registry name, as CLAIMWATCH_JUDGE); unset = no shadow
    judge: str | None = None
    #: the candidate's settings: changes over the worker's own, nested as they are, e.g.
    #: ``{"anthropic": {"model": "claude-opus-4-5"}}`` (CLAIMWATCH_SHADOW__SETTINGS as JSON)
    settings: dict[str, Any] = Field(default_factory=dict)
    #: share of the main judge's evaluated answers judged again (by record key: every replica picks the same ones)
    sample: float = Field(0.1, ge=0.0, le=1.0)
    #: answers the shadow judges at once (its threads)
    max_in_flight: int = Field(4, ge=1, le=256)
    #: sampled answers waiting for a shadow thread (a burst); a sampled answer that finds the queue full is skipped
    #: (counted: busy). Each holds its trace in memory
    max_queued: int = Field(32, ge=0, le=10_000)
    #: estimated judge spend per rolling hour; past it, sampled answers are skipped (counted: budget) until the
    #: hour's spend falls back (answers already being judged may overshoot it by up to max_in_flight answers)
    budget_usd_per_hour: float = Field(2.0, ge=0.0)
    #: the shadow's results (one per judged answer, the main result's key); unset = counted only
    results_topic: str | None = "claimwatch.shadow-results"
    #: a judge call is retried for this long before the shadow's answer counts as failed (short: a shadow
    #: thread held in retries only skips more samples)
    retry_deadline_s: float = Field(60.0, gt=0)

    @field_validator("results_topic", mode="before")
    @classmethod
    def _results_off(cls, value: object) -> object:
        return topic_or_off(value)


class WorkerSettings(JudgeSettings):
    """Settings for ``claimwatch worker`` / ``score`` / ``verify`` (the judges' own settings are inherited)."""

    model_config = SettingsConfigDict(
        env_prefix="CLAIMWATCH_", env_nested_delimiter="__", extra="ignore", env_ignore_empty=True
    )

    kafka: KafkaConnection = Field(default_factory=KafkaConnection)
    consumer: ConsumerTuning = Field(default_factory=ConsumerTuning)
    topic: str = "claimwatch.traces"
    results_topic: str | None = "claimwatch.results"
    dead_letter_topic: str = "claimwatch.dead-letter"

    #: the judge (a name of evaluator_worker.judges.registry): no default, it is a deliberate choice; `claimwatch
    #: worker` refuses to start without one (anthropic for production; docs/choosing-a-judge.md)
    judge: str | None = None
    parity: ParitySettings = Field(default_factory=ParitySettings)
    flow: FlowSettings = Field(default_factory=FlowSettings)
    #: a candidate judge beside the main one, counted apart (evaluator_worker.shadow; off without shadow.judge)
    shadow: ShadowSettings = Field(default_factory=ShadowSettings)

    metrics_host: str = "0.0.0.0"
    metrics_port: int = 9464
    slice_labels: list[str] = Field(default_factory=lambda: list(DEFAULT_SLICE_LABELS))
    slice_values: dict[str, list[str]] = Field(default_factory=dict)
    max_values_per_label: int = 50

    #: Kafka values larger than this are dead-lettered (reason ``oversized``) without being judged. Results of
    #: accepted records may still exceed the producer's limit (flow.producer_max_request_bytes): they are shrunk
    max_record_bytes: int = 4_000_000
    dedupe_window: int = 100_000
    #: results read back from the results topic on every partition assignment to seed the window
    dedupe_seed_records: int = 20_000
    #: include question/answer text in result records (off when redaction matters downstream)
    results_include_text: bool = True
    #: whether a claim that hedges what the context asserts ("may reduce" where it "reduces") counts against
    #: faithfulness: lenient = SUPPORTED, strict = UNSUPPORTED; typed hedge_inflation either way
    #: (evaluator_worker.judges.base.HedgePolicy; the default is measured in docs/judge-quality.md)
    hedge_policy: HedgePolicy = HedgePolicy.LENIENT
    #: derived slice labels computed from every answer (evaluator_worker.shape): sources (none|single|multi:
    #: documents the claims' evidence came from), reasoning (none|arithmetic|temporal|both); a label left out
    #: reads "off" (fewer series)
    derived_slices: list[Literal["sources", "reasoning"]] = Field(default_factory=lambda: list(DERIVED_LABELS))
    log_level: str = "INFO"

    @field_validator("results_topic", mode="before")
    @classmethod
    def _results_off(cls, value: object) -> object:
        return topic_or_off(value)
