"""The ``claimwatch`` command and the tools around the product path.

The product path lives in :mod:`collector` (in-app and ingestion) and
:mod:`evaluator_worker` (consume, judge, score, metrics, results); this package
holds what runs around it and is never imported by them:

- :mod:`claimwatch.cli`           the console command (dispatches to everything)
- :mod:`claimwatch.batch`         ``score`` / ``verify``: files through the worker's evaluator
- :mod:`claimwatch.claims_query`  ``claims``: the flagged claims behind a spike
- :mod:`claimwatch.gate`          ``gate``: should a release be rolled back
- :mod:`claimwatch.calibration`   ``calibrate``: judge accuracy on labelled data (+ :mod:`claimwatch.halueval`)
- :mod:`claimwatch.soak`, :mod:`claimwatch.demo`, :mod:`claimwatch.embedded`  loopback runs
- :mod:`claimwatch.docgen`        generators of the reference docs
"""
