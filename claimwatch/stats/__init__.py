"""Statistics of the release gate, with no I/O: proportions, a sequential test, power.

- :mod:`claimwatch.stats.proportions`: Wilson and Newcombe score intervals (fixed horizon).
- :mod:`claimwatch.stats.sequential`: a one-sided normal-mixture test and its bounds (always valid:
  look as often as you like, the error rate holds over all looks).
- :mod:`claimwatch.stats.answer_share`: the gate's test on the share of flagged answers,
  each answer one independent trial, in either mode.
- :mod:`claimwatch.stats.power`: the smallest increase a test can detect with given counts,
  and the answers it needs to detect a given one.

Only :mod:`statistics` from the standard library: the gate's runtime path stays light.
The simulation that shows these keep their error rates is ``benchmarks/gate_simulation.py``
(run by ``tests/unit/test_gate_simulation.py``).
"""
