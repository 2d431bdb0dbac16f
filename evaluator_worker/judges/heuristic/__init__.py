"""The offline ``heuristic`` judge as a package (see docs/heuristic-judge.md).

- ``judge``: ``HeuristicJudge`` (walks ``RULES``; the first rule that fires decides)
- ``analysis``: what the rules read (``ClaimCase``: analysed text, aligned sentences, number findings, coverage)
- ``rules``: the rules and their ordered declaration ``RULES``
- ``thresholds``: ``Thresholds`` (every threshold, weight and confidence, grouped by concern) and ``DEFAULT_THRESHOLDS``
- ``text`` (tokens, stemming, synonym keys), ``quantities`` (numbers, units, dates), ``cues`` (negation, hedges,
  intensifiers, quotes, speakers)
- ``lexicon``: every word list, data only (the cue regexes are built from its lists)
"""

from __future__ import annotations

from evaluator_worker.judges.heuristic.analysis import ClaimCase, Sentence, analyse, context_vocab, index_contexts
from evaluator_worker.judges.heuristic.judge import HeuristicJudge
from evaluator_worker.judges.heuristic.rules import RULES, FailureType, Rule, RuleHit, supported
from evaluator_worker.judges.heuristic.thresholds import DEFAULT_THRESHOLDS, Thresholds

__all__ = [
    "HeuristicJudge",
    "ClaimCase",
    "Sentence",
    "analyse",
    "context_vocab",
    "index_contexts",
    "RULES",
    "FailureType",
    "Rule",
    "RuleHit",
    "supported",
    "Thresholds",
    "DEFAULT_THRESHOLDS",
]
