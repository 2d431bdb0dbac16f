"""``claimwatch label``: label a stratified sample of the judge's claims from your own traffic.

Rooms: :mod:`~claimwatch.labeling.sample` (the population of judged claims, its strata, the seeded plan),
:mod:`~claimwatch.labeling.session` (the terminal session: one claim at a time, resumable, scriptable),
:mod:`~claimwatch.labeling.html` (the same as a self-contained page, imported back with ``--import``),
:mod:`~claimwatch.labeling.cli` (the command). The labels file is what ``claimwatch calibrate`` reads; its
judge profile (measured error rates, corrected rates) is :mod:`claimwatch.judge_profile`. See docs/labeling.md.
"""

from claimwatch.labeling.cli import add_cli, main

__all__ = ["add_cli", "main"]
