"""Judges: decompose an answer into claims and verify each against the context.

``get_judge(name, settings)`` builds one by name: heuristic (offline default),
anthropic (Claude), nli (cross-encoder), cascade (cheap first, Claude on doubt).
"""

from evaluator_worker.judges.base import Claim, ClaimVerdict, Judge, Usage, Verdict

__all__ = ["Claim", "ClaimVerdict", "Judge", "Usage", "Verdict"]
