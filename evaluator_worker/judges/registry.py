"""Build a judge by name: ``heuristic`` (default), ``hybrid`` (heuristic + offline sentence
embeddings), ``anthropic``, ``nli``, ``cascade``, ``verifier`` (the trained cross-encoder shipped with
the package), ``offline`` (heuristic number/date verdicts, the verifier for the rest),
or ``package.module:factory`` for a judge of your own (called with the settings)."""

from __future__ import annotations

import importlib

from evaluator_worker.errors import ConfigError
from evaluator_worker.judges.base import Judge
from evaluator_worker.judges.settings import JudgeSettings

JUDGES = ("heuristic", "hybrid", "anthropic", "openai", "bespoke-minicheck", "nli", "cascade", "verifier", "offline")


def get_judge(name: str, settings: JudgeSettings | None = None) -> Judge:
    """The judge ``name``, its confidences calibrated per ``settings.confidence_calibration`` (a cascade's
    stages are calibrated, not the cascade: its confidences are its stages')."""
    settings = settings or JudgeSettings()
    judge = _build(name, settings)
    if name == "cascade":
        return judge
    from evaluator_worker.judges.calibrated import calibrated

    return calibrated(judge, settings.confidence_calibration)


def _build(name: str, settings: JudgeSettings) -> Judge:
    if name == "heuristic":
        from evaluator_worker.judges.heuristic import HeuristicJudge

        return HeuristicJudge()
    if name == "hybrid":
        from evaluator_worker.judges.hybrid import make_judge

        return make_judge(settings)
    if name == "anthropic":
        import os

        from evaluator_worker.judges.anthropic import AnthropicJudge

        a = settings.anthropic
        if (
            a.platform == "anthropic"
            and a.api_key is None
            and not os.environ.get("ANTHROPIC_API_KEY")
            and not a.base_url
        ):
            raise ConfigError("the anthropic judge needs a key: set ANTHROPIC_API_KEY or CLAIMWATCH_ANTHROPIC__API_KEY")
        return AnthropicJudge(a)
    if name == "openai":
        from evaluator_worker.judges.openai_compat import OpenAIJudge

        return OpenAIJudge(settings.openai)
    if name == "bespoke-minicheck":
        from evaluator_worker.judges.bespoke import BespokeMiniCheckJudge

        return BespokeMiniCheckJudge(settings.bespoke)
    if name == "nli":
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
    if name == "cascade":
        from evaluator_worker.judges.cascade import CascadeJudge

        c = settings.cascade
        return CascadeJudge(get_judge(c.first, settings), get_judge(c.second, settings), c)
    if name in ("verifier", "offline"):
        from evaluator_worker.judges.verifier import VerifierJudge

        verifier = VerifierJudge(settings.verifier_model)
        verifier.load()  # fail at start-up (missing extra, bad directory), not on the first record
        if name == "verifier":
            return verifier
        from evaluator_worker.judges.offline import OfflineJudge

        return OfflineJudge(verifier)
    if ":" in name:
        module, _, attr = name.partition(":")
        try:
            factory = getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError) as exc:
            raise ConfigError(f"cannot load judge {name!r}: {exc}") from exc
        judge = factory(settings)
        if not isinstance(judge, Judge):
            missing = [
                m
                for m in ("name", "io_bound", "extract_sees_contexts", "extract_claims", "verify", "bind_metrics")
                if not hasattr(judge, m)
            ]
            raise ConfigError(
                f"judge {name!r} lacks {', '.join(missing)}: subclass "
                "evaluator_worker.judges.base.JudgeBase for the defaults"
            )
        return judge
    raise ConfigError(f"unknown judge {name!r}: choose one of {', '.join(JUDGES)} or module:factory")
