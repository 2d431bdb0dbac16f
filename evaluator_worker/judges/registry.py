"""Build a judge by name: a judge the table declares (:mod:`evaluator_worker.judges.table`: anthropic, openai,
bespoke-minicheck, nli, cascade, heuristic, hybrid, verifier, offline), or ``package.module:factory`` for a judge
of your own (called with the settings)."""

from __future__ import annotations

import importlib

from evaluator_worker.errors import ConfigError
from evaluator_worker.judges.base import Judge
from evaluator_worker.judges.settings import JudgeSettings
from evaluator_worker.judges.table import TABLE, judge_names

#: the shipped judges' names (declared in :data:`evaluator_worker.judges.table.TABLE`)
JUDGES = judge_names()


def get_judge(name: str, settings: JudgeSettings | None = None) -> Judge:
    """The judge ``name``, its confidences calibrated per ``settings.confidence_calibration`` (a cascade's
    stages are calibrated, not the cascade: its confidences are its stages')."""
    settings = settings or JudgeSettings()
    entry = TABLE.get(name)
    judge = _build(name, settings)
    if entry is not None and not entry.calibrated:
        return judge
    from evaluator_worker.judges.calibrated import calibrated

    return calibrated(judge, settings.confidence_calibration)


def _build(name: str, settings: JudgeSettings) -> Judge:
    entry = TABLE.get(name)
    if entry is not None:
        return entry.build(settings, get_judge)
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
    raise ConfigError(f"unknown judge {name!r}: choose one of {', '.join(TABLE)} or module:factory")
