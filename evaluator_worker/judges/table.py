"""The judges, declared once: name, builder, settings, install extra, fitness for a rollback, one-line description.

Read by the registry (:func:`evaluator_worker.judges.registry.get_judge`), the gate's fitness check
(``claimwatch.gate.judge_fitness``), the command line's help, the generated configuration docs and the benchmarks.
A new judge (a new provider) is its module, one :class:`JudgeEntry` in :data:`TABLE`, and its tests.

Fitness, as measured in docs/judge-quality.md (eval split, run once per version): ``unfit`` (measured on real,
human-labelled answers and not fit: the reason quotes the numbers beside answer length's), ``unmeasured`` (not
measured here: an LLM judge, your own weights; fit only with a judge profile from your labels).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from evaluator_worker.errors import ConfigError

if TYPE_CHECKING:
    from evaluator_worker.judges.base import Judge
    from evaluator_worker.judges.settings import JudgeSettings
    from evaluator_worker.judges.verifier import VerifierJudge

#: how a builder gets another judge by name (a cascade's stages): the registry's ``get_judge``
Resolver = Callable[[str, "JudgeSettings"], "Judge"]

__all__ = ["TABLE", "JudgeEntry", "UNFIT", "UNMEASURED", "judge_names", "offline_judges"]

UNFIT, UNMEASURED = "unfit", "unmeasured"


@dataclass(frozen=True)
class JudgeEntry:
    """One judge as the product knows it."""

    name: str
    #: one line for help texts and docs
    description: str
    #: the judge from the worker's settings and a way to build other judges by name (imports its module only when
    #: called)
    build: Callable[[JudgeSettings, Resolver], Judge]
    #: ``unfit`` or ``unmeasured`` (module docstring), and why: the measured numbers, or what it is
    fitness: str
    fitness_reason: str
    #: the pip extra that brings its dependencies (``pip install 'claimwatch[<extra>]'``), None: none needed
    extra: str | None = None
    #: the settings group that configures it (``CLAIMWATCH_<GROUP>__*``), None: none
    settings: str | None = None
    #: runs here with nothing more than the package (no network, no key, no weights of yours): demos, benchmarks
    offline: bool = False
    #: its confidences go through the confidence calibration map (a cascade's stages are calibrated instead)
    calibrated: bool = True


def _heuristic(settings: JudgeSettings, by_name: Resolver) -> Judge:
    from evaluator_worker.judges.heuristic import HeuristicJudge

    return HeuristicJudge()


def _hybrid(settings: JudgeSettings, by_name: Resolver) -> Judge:
    from evaluator_worker.judges.hybrid import make_judge

    return make_judge(settings)


def _anthropic(settings: JudgeSettings, by_name: Resolver) -> Judge:
    from evaluator_worker.judges.anthropic import AnthropicJudge

    a = settings.anthropic
    if a.platform == "anthropic" and a.api_key is None and not os.environ.get("ANTHROPIC_API_KEY") and not a.base_url:
        raise ConfigError("the anthropic judge needs a key: set ANTHROPIC_API_KEY or CLAIMWATCH_ANTHROPIC__API_KEY")
    return AnthropicJudge(a)


def _openai(settings: JudgeSettings, by_name: Resolver) -> Judge:
    from evaluator_worker.judges.openai_compat import OpenAIJudge

    return OpenAIJudge(settings.openai)


def _bespoke(settings: JudgeSettings, by_name: Resolver) -> Judge:
    from evaluator_worker.judges.bespoke import BespokeMiniCheckJudge

    return BespokeMiniCheckJudge(settings.bespoke)


def _nli(settings: JudgeSettings, by_name: Resolver) -> Judge:
    from evaluator_worker.judges.nli import NLIJudge

    if not settings.nli_model:
        raise ConfigError(
            "the nli judge needs a model: set CLAIMWATCH_NLI_MODEL to a Hugging Face id or a local directory"
        )
    judge = NLIJudge(
        settings.nli_model,
        kind=settings.nli_kind,
        support_label=settings.nli_support_label,
        entail_threshold=settings.nli_entail_threshold,
        contradict_threshold=settings.nli_contradict_threshold,
        document=settings.nli_document,
        chunk_tokens=settings.nli_chunk_tokens,
    )
    judge.load()  # fail at start-up, not on the first record
    return judge


def _cascade(settings: JudgeSettings, by_name: Resolver) -> Judge:
    from evaluator_worker.judges.cascade import CascadeJudge

    c = settings.cascade
    return CascadeJudge(by_name(c.first, settings), by_name(c.second, settings), c)


def _loaded_verifier(settings: JudgeSettings) -> VerifierJudge:
    from evaluator_worker.judges.verifier import VerifierJudge

    verifier = VerifierJudge(settings.verifier_model)
    verifier.load()  # fail at start-up (missing extra, bad directory), not on the first record
    return verifier


def _verifier(settings: JudgeSettings, by_name: Resolver) -> Judge:
    return _loaded_verifier(settings)


def _offline(settings: JudgeSettings, by_name: Resolver) -> Judge:
    from evaluator_worker.judges.offline import OfflineJudge

    return OfflineJudge(_loaded_verifier(settings))


#: every shipped judge, in the order help texts list them
TABLE: dict[str, JudgeEntry] = {
    e.name: e
    for e in (
        JudgeEntry(
            "anthropic",
            "Claude: splits answers into claims and verifies them (production)",
            _anthropic,
            UNMEASURED,
            "an LLM judge (Claude)",
            extra="anthropic",
            settings="anthropic",
        ),
        JudgeEntry(
            "openai",
            "any OpenAI-compatible chat model (vLLM, Ollama, a gateway)",
            _openai,
            UNMEASURED,
            "an LLM judge (your OpenAI-compatible model)",
            extra="openai",
            settings="openai",
        ),
        JudgeEntry(
            "bespoke-minicheck",
            "Bespoke-MiniCheck-7B behind an OpenAI-compatible server (one yes/no per claim and sentence window)",
            _bespoke,
            UNMEASURED,
            "published ~77% balanced accuracy on LLM-AggreFact, not on your traffic",
            extra="openai",
            settings="bespoke",
        ),
        JudgeEntry(
            "nli",
            "a cross-encoder or seq2seq NLI model of yours (MiniCheck, HHEM, an MNLI model) on your hardware",
            _nli,
            UNMEASURED,
            "your own NLI weights (MiniCheck, HHEM, an MNLI cross-encoder)",
            extra="nli",
            settings="nli_*",
        ),
        JudgeEntry(
            "cascade",
            "a cheap first judge, a stronger second one for the claims it is unsure of (within a budget)",
            _cascade,
            UNMEASURED,
            "as good as its stages, and its first stage decides most claims",
            settings="cascade",
            calibrated=False,
        ),
        JudgeEntry(
            "heuristic",
            "rules over numbers, dates, names and negation (offline; demos and trials, not rollbacks)",
            _heuristic,
            UNFIT,
            "answer AUC 0.55-0.74 vs answer length 0.52-0.58 on the same rows; 59-79% of faithful answers "
            "flagged; 21% of contradictions found",
            offline=True,
        ),
        JudgeEntry(
            "hybrid",
            "the heuristic plus offline sentence embeddings (offline; trials)",
            _hybrid,
            UNFIT,
            "answer AUC 0.57-0.68 vs answer length 0.52-0.58 on the same rows; 58-72% of faithful answers flagged",
            extra="embed",
            offline=True,
        ),
        JudgeEntry(
            "verifier",
            "the cross-encoder trained here, shipped with the package (offline; trials)",
            _verifier,
            UNFIT,
            "v2: claim AUC 0.64-0.74 vs claim length 0.43-0.59, but answer AUC 0.53-0.61 (risk 0.60-0.61) vs answer "
            "length 0.54-0.56; no contradiction found (0 of 33); unsupported rate on faithful claims spans 46 points "
            "across source models",
            extra="verifier",
            settings="verifier_model",
            offline=True,
        ),
        JudgeEntry(
            "offline",
            "heuristic verdicts on numbers and dates, the verifier for the rest (offline; trials)",
            _offline,
            UNFIT,
            "answer AUC 0.55-0.59 vs answer length 0.54-0.56; ExpertQA claim accuracy 0.37 (the verifier alone: 0.58)",
            extra="verifier",
            settings="verifier_model",
            offline=True,
        ),
    )
}


def judge_names() -> tuple[str, ...]:
    """Every judge name the table declares, in its order."""
    return tuple(TABLE)


def offline_judges() -> tuple[str, ...]:
    """The judges that run with nothing more than the package (demos, trials, benchmarks)."""
    return tuple(name for name, e in TABLE.items() if e.offline)
