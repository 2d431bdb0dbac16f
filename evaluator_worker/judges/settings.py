"""The judges' own settings: plain models the registry builds judges from.

Judges import nothing from the worker loop, its config or its metrics; the worker's
``WorkerSettings`` extends :class:`JudgeSettings`, so the same ``CLAIMWATCH_*``
variables configure a judge wherever it runs (worker, ``score``, ``calibrate``).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict


class LLMSettings(BaseModel):
    """What every chat-model judge shares (``anthropic``, ``openai``): call limits, single-call mode, prices."""

    #: output token limit per call (a cut output is split in halves and asked again)
    max_tokens: int = 4096
    #: seconds per call
    timeout_s: float = 60.0
    #: claims per verify call; larger answers are split
    max_claims_per_call: int = 40
    #: one call per answer: `model` extracts the claims and judges them in the same call (the worker passes the
    #: contexts to extraction); fewer tokens, but extraction and verification are no longer independent
    single_call: bool = False
    #: USD per million tokens: {model: {"input": x, "output": y, "cache_read": z, "cache_creation": w}}
    #: (self-hosted: your cost per token, or leave empty for 0)
    prices: dict[str, dict[str, float]] = Field(default_factory=dict)


class AnthropicSettings(LLMSettings):
    """Claude as the judge (``CLAIMWATCH_ANTHROPIC__*``): first-party API, AWS Bedrock or Google Vertex AI."""

    #: where Claude runs: anthropic (first-party API), bedrock (AWS), vertex (Google Cloud)
    platform: Literal["anthropic", "bedrock", "vertex"] = "anthropic"
    #: first-party API key (default: ANTHROPIC_API_KEY); on bedrock, a Bedrock API key (else AWS credentials)
    api_key: SecretStr | None = None
    base_url: str | None = None
    #: bedrock: AWS region (default: AWS_REGION); vertex: Google Cloud region, e.g. us-east5 (required)
    region: str | None = None
    #: vertex: Google Cloud project id (required)
    project_id: str | None = None
    #: bedrock: AWS access key id; unset = the usual AWS chain (env, profile, instance role)
    aws_access_key: SecretStr | None = None
    #: bedrock: AWS secret access key (with aws_access_key)
    aws_secret_key: SecretStr | None = None
    #: bedrock: AWS session token, for temporary credentials
    aws_session_token: SecretStr | None = None
    #: bedrock: a named profile of the AWS config files instead of keys
    aws_profile: str | None = None
    #: vertex: an OAuth access token; unset = Google application default credentials (pip install 'anthropic[vertex]')
    access_token: SecretStr | None = None
    #: verifier model; pick one from a different family than the generator when you can. First-party names
    #: (claude-sonnet-4-5) are mapped to the platform's id (bedrock anthropic.claude-sonnet-4-5-20250929-v1:0,
    #: vertex claude-sonnet-4-5@20250929); any other value is passed as given (e.g. a Bedrock inference profile)
    model: str = "claude-sonnet-4-5"
    #: claim extraction model (cheaper is fine)
    extract_model: str = "claude-haiku-4-5"


class CascadeSettings(BaseModel):
    first: str = "heuristic"
    second: str = "anthropic"
    #: escalate this share of claims: the least confident among the last share_window claims the first judge saw,
    #: this answer's included (a cost you choose from `claimwatch calibrate`'s errors_caught_at_escalated; claims
    #: tied at the cut are filled deterministically so the share holds); None: escalate below 0.8
    escalate_share: float | None = Field(0.3, ge=0.0, le=1.0)
    #: override: escalate every claim whose first-judge confidence is below this instead of a share. With the
    #: shipped calibrated confidences it reads as "verdicts less likely right than this"
    escalate_below: float | None = Field(None, ge=0.0, le=1.0)
    #: how many recent first-judge confidences the share is taken over
    share_window: int = Field(2_000, ge=1)
    #: first-judge verdicts always sent to the second judge (e.g. ["SUPPORTED"] for a first judge that is
    #: blind to paraphrased hallucinations), whatever their confidence
    always_escalate: list[str] = Field(default_factory=list)
    #: USD per hour the second judge may spend; past it claims keep the first verdict
    budget_usd_per_hour: float = 5.0
    #: share of confident claims also sent to the second judge to measure agreement
    agreement_sample: float = 0.02


class OpenAISettings(LLMSettings):
    """Any OpenAI-compatible chat-completions endpoint as the judge (``CLAIMWATCH_OPENAI__*``): vLLM, Ollama,
    llama.cpp server, OpenAI, other providers."""

    #: the API root, e.g. http://vllm:8000/v1 or http://localhost:11434/v1 (Ollama)
    base_url: str | None = None
    #: bearer key (default: OPENAI_API_KEY; local servers usually accept any value)
    api_key: SecretStr | None = None
    #: verifier model as the server names it (required)
    model: str | None = None
    #: claim extraction model (default: model)
    extract_model: str | None = None
    #: how structured output is asked for: tools (function calling, forced) or json_schema (response_format)
    output: Literal["tools", "json_schema"] = "tools"
    #: seconds per call (self-hosted models can be slow under load)
    timeout_s: float = 120.0


class BespokeSettings(BaseModel):
    """Bespoke-MiniCheck-7B behind an OpenAI-compatible server (``CLAIMWATCH_BESPOKE__*``): vLLM, Ollama."""

    #: the API root, e.g. http://vllm:8000/v1
    base_url: str | None = None
    #: bearer key (default: OPENAI_API_KEY; local servers usually accept any value)
    api_key: SecretStr | None = None
    #: the model as the server names it
    model: str = "bespokelabs/Bespoke-MiniCheck-7B"
    #: the document (all contexts joined) is cut into sentence chunks of at most this many words (>= 50)
    chunk_words: int = 2000
    #: SUPPORTED when the best chunk's P(Yes) reaches this (the authors' cut: 0.5)
    threshold: float = Field(default=0.5, gt=0.0, le=1.0)
    #: seconds per call
    timeout_s: float = 60.0


class JudgeSettings(BaseSettings):
    """What building any judge by name needs (``CLAIMWATCH_ANTHROPIC__*``, ``CLAIMWATCH_OPENAI__*``,
    ``CLAIMWATCH_CASCADE__*``, ``CLAIMWATCH_NLI_MODEL``)."""

    model_config = SettingsConfigDict(
        env_prefix="CLAIMWATCH_", env_nested_delimiter="__", extra="ignore", env_ignore_empty=True
    )

    anthropic: AnthropicSettings = Field(default_factory=AnthropicSettings)
    cascade: CascadeSettings = Field(default_factory=CascadeSettings)
    openai: OpenAISettings = Field(default_factory=OpenAISettings)
    bespoke: BespokeSettings = Field(default_factory=BespokeSettings)
    #: the nli judge's model: a Hugging Face id or a local directory
    nli_model: str | None = None
    #: its interface: auto (from the config's architectures and id2label), nli (3-label NLI, BART-MNLI too),
    #: nli2 (2-label entailment / not_entailment), binary (2-label supported/unsupported, MiniCheck RoBERTa/DeBERTa),
    #: seq2seq (MiniCheck Flan-T5), hhem (Vectara HHEM-2.1-open: runs the model's own code)
    nli_kind: Literal["auto", "nli", "nli2", "binary", "seq2seq", "hhem"] = "auto"
    #: binary models: the class index that means "supported" (unset: from id2label's names; generic LABEL_0/LABEL_1
    #: read as MiniCheck does, 1 = supported; other names are refused at start-up)
    nli_support_label: int | None = None
    #: how contexts become premises: joined (all contexts one document cut into chunks, MiniCheck's way), per_chunk
    #: (each context windowed alone), auto (joined for binary/seq2seq, per_chunk for nli/nli2/hhem)
    nli_document: Literal["auto", "joined", "per_chunk"] = "auto"
    #: joined documents are cut into sentence chunks of at most this many tokens (MiniCheck: ~400; >= 16, checked at start-up)
    nli_chunk_tokens: int = 400
    #: SUPPORTED when the best entailment (support) probability over the context reaches this
    nli_entail_threshold: float = Field(default=0.5, gt=0.0, le=1.0)
    #: CONTRADICTED (3-label NLI only) when, failing that, the best contradiction probability reaches this
    nli_contradict_threshold: float = Field(default=0.7, gt=0.0, le=1.0)
    #: the verifier / offline judges' model directory (default: the model shipped in the package)
    verifier_model: str | None = None
    #: map each verdict's confidence to P(verdict right): shipped (the map fitted on dev that ships for the judge,
    #: when there is one: heuristic, hybrid, verifier), none (the judge's raw confidence), or the path of a
    #: map written by `claimwatch calibrate FILE --fit-confidence PATH` (for a cascade: applied to its stages)
    confidence_calibration: str = "shipped"
