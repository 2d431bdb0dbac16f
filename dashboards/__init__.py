"""Grafana dashboards and Prometheus rules for claimwatch, generated from Python.

- :mod:`dashboards.catalog`   the metric names the dashboards and rules may reference
- :mod:`dashboards.rules_gen` recording + alerting rules rendered from a thresholds dict
- :mod:`dashboards.generate`  writes ``grafana/*.json`` and ``rules/*.yml``
  (``python -m dashboards.generate [--check] [--thresholds FILE]``)
- :mod:`dashboards.queries`   ``iter_queries()``: every panel query with variables substituted
"""
