"""Collector settings: one place, ``CLAIMWATCH_*`` environment variables, defaults that run.

How to reach Kafka (:class:`contract.kafka.KafkaConnection`) is shared with the worker.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from contract import record as _record
from contract.kafka import KafkaConnection
from contract.slices import DEFAULT_SLICE_ATTRIBUTES

#: Presidio entity types masked by default with ``redaction_backend=presidio``: people, places and the direct
#: identifiers. Left out on purpose: DATE_TIME, NRP (nationalities, religions, political groups), ORGANIZATION and
#: URL are facts the judge checks (and ORGANIZATION is Presidio's noisiest type); IP_ADDRESS also matches four-part
#: version numbers (``10.2.33.4``), which the builtin backend keeps as facts too. Add any of them when needed.
DEFAULT_REDACT_ENTITIES: tuple[str, ...] = (
    "PERSON",
    "LOCATION",
    "EMAIL_ADDRESS",
    "PHONE_NUMBER",
    "CREDIT_CARD",
    "IBAN_CODE",
    "US_SSN",
)


class SamplingSettings(BaseModel):
    """Which traces get judged. See ``collector.sampling``."""

    ratio: float = Field(1.0, ge=0.0, le=1.0)
    #: per-slice overrides, e.g. {"route=billing": 0.5, "release=canary-7": 1.0}
    slice_ratios: dict[str, float] = Field(default_factory=dict)
    always_keep_errors: bool = True
    #: attribute names whose truthy / negative value forces keep (user feedback)
    feedback_attributes: list[str] = Field(
        default_factory=lambda: ["user.feedback", "feedback.score", "feedback.negative"]
    )
    #: release values always kept (canaries)
    keep_releases: list[str] = Field(default_factory=list)
    #: token bucket: sustained records/s and burst; 0 disables the limit
    rate_per_second: float = 0.0
    burst: int = 100


class CollectorSettings(BaseSettings):
    """Settings for ``RagTraceProcessor`` (env: ``CLAIMWATCH_*``, nested with ``__``)."""

    #: an empty variable (``CLAIMWATCH_CONTEXT_FROM_PROMPT=``) means unset: the default applies
    model_config = SettingsConfigDict(
        env_prefix="CLAIMWATCH_", env_nested_delimiter="__", extra="ignore", env_ignore_empty=True
    )

    kafka: KafkaConnection = Field(default_factory=KafkaConnection)
    topic: str = "claimwatch.traces"
    sampling: SamplingSettings = Field(default_factory=SamplingSettings)

    # slices: static labels of this process + span attributes mapped to slice names
    release: str | None = None
    environment: str | None = None
    static_slices: dict[str, str] = Field(default_factory=dict)
    slice_attributes: dict[str, str] = Field(default_factory=lambda: dict(DEFAULT_SLICE_ATTRIBUTES))

    # assembly
    late_span_wait_s: float = 0.5
    trace_ttl_s: float = 120.0
    max_buffered_traces: int = 2_000
    max_spans_per_trace: int = 512

    # record limits
    #: opt-in: a trace with an LLM span but no retrieved documents and no tool results takes its context from the
    #: prompt (system instructions / system messages), for apps that stuff documents into the prompt without a
    #: retriever span. Such records carry attributes["context_source"] = "prompt"
    context_from_prompt: bool = False
    max_contexts: int = _record.DEFAULT_MAX_CONTEXTS
    max_text_chars: int = _record.DEFAULT_MAX_TEXT_CHARS
    max_record_bytes: int = _record.DEFAULT_MAX_RECORD_BYTES

    # sink
    queue_size: int = 10_000
    #: bytes of serialised records the sink may hold while Kafka is slow or down (bounds memory)
    queue_max_bytes: int = 64 * 1024 * 1024
    acks: str = "1"  # "0" | "1" | "all"
    compression_type: str | None = "gzip"
    linger_ms: int = 50
    retries: int = 3
    max_block_ms: int = 2_000
    #: times the sink offers one record to the producer when ``send()`` times out waiting for topic metadata
    #: (a new topic being created, a leader election, a stalled broker): the record never left the process, so it
    #: is offered again after a backoff instead of being lost to one slow metadata round
    send_attempts: int = Field(3, ge=1)
    flush_timeout_s: float = 5.0

    # redaction (applied before anything leaves the process)
    redact_emails: bool = False
    redact_phones: bool = False
    #: regions whose national phone formats are recognised (ISO 3166 codes); +international numbers always are
    redact_phone_regions: list[str] = Field(default_factory=lambda: ["US"])
    #: how sure libphonenumber must be: possible, valid (a number that can exist), strict_grouping, exact_grouping
    redact_phone_leniency: str = "valid"
    redact_cards: bool = False
    redact_patterns: list[str] = Field(default_factory=list)
    redaction_backend: Literal["builtin", "presidio"] = Field(
        "builtin",
        description="`builtin`: only the `REDACT_EMAILS/PHONES/CARDS/PATTERNS` rules. `presidio`: also mask the "
        "`REDACT_ENTITIES` that Microsoft Presidio finds with the shipped small English spaCy model (names, places; "
        "offline; needs `pip install 'claimwatch[pii]'`; the model loads once per process when the collector is "
        "built). The builtin rules that are on, the patterns and a `redact=` callable still run after it.",
    )
    redact_entities: list[str] = Field(
        default_factory=lambda: list(DEFAULT_REDACT_ENTITIES),
        description="With `redaction_backend=presidio`: the Presidio entity types to mask. The default leaves out "
        "DATE_TIME, NRP, ORGANIZATION, URL and IP_ADDRESS (dates, groups, companies, links and four-part versions "
        "are facts the judge checks). Placeholders: `[PERSON_1]`, `[LOCATION_2]`, and `[EMAIL_n]`, `[PHONE_n]`, "
        "`[CARD_n]` as with the builtin rules.",
    )
    redact_allow: list[str] = Field(
        default_factory=list,
        description="With `redaction_backend=presidio`: values never masked (a whole detected value, compared "
        "ignoring case), e.g. your company and product names that the model takes for a person or a place.",
    )
    redact_deny: dict[str, list[str]] = Field(
        default_factory=dict,
        description="With `redaction_backend=presidio`: values always masked, per entity type, e.g. "
        '`{"PERSON": ["Dr. Who"], "PROJECT": ["Bluebird"]}` (whole words, ignoring case; a new type gets its own '
        "placeholder, `[PROJECT_1]`).",
    )
    redact_min_score: float = Field(
        0.4,
        ge=0.0,
        le=1.0,
        description="With `redaction_backend=presidio`: the confidence a finding needs to be masked. Presidio scores "
        "spaCy names and places 0.85, validated e-mails, cards and IBANs 1.0, a phone number 0.4 unless a word like "
        "'phone' or 'call' is near it: above 0.4 bare phone numbers are kept.",
    )

    metrics_port: int | None = None
