"""Metric names the dashboards and rules may reference: the catalogue of :mod:`claimwatch.metric_catalog` (read from
the metrics' declarations; docs/metrics.md reads it too), seen from the generators."""

from __future__ import annotations

from claimwatch.metric_catalog import (
    COLLECTOR_METRICS,
    DRIFT_METRICS,
    LABEL_VALUES,
    OPTIONAL_METRICS,
    SLICE_LABELS,
    WORKER_METRICS,
    declared_metrics,
    known_series,
    series_names,
)

__all__ = [
    "COLLECTOR_METRICS",
    "DRIFT_METRICS",
    "LABEL_VALUES",
    "OPTIONAL_METRICS",
    "SLICE_LABELS",
    "WORKER_METRICS",
    "declared_metrics",
    "known_series",
    "series_names",
]
