"""The metric catalogue: every metric name the docs, dashboards and rules may reference, read from the declarations.

The worker's names are declared in :mod:`evaluator_worker.metrics`, the
collector's in :mod:`collector.metrics` (served by the instrumented
application's registry), the drift canary's in :mod:`claimwatch.drift`; the lists here are read from those declarations, as
by docs/metrics.md (:mod:`claimwatch.docgen.metrics`) and the dashboards and rules (:mod:`dashboards.catalog`), and
``tests/integration/test_prometheus_e2e.py`` checks both against the real
registries scraped by a real Prometheus. Label
values the panels and rules rely on are listed in :data:`LABEL_VALUES`. The
cascade metrics exist only when the cascade judge runs: their panels stay
empty otherwise.
``OPTIONAL_METRICS`` is for names exported by components not in this repo.
"""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry

from claimwatch.drift import RATES as DRIFT_RATES
from claimwatch.drift import DriftMetrics
from collector.metrics import CONTEXT_SOURCES, NOT_RECORDED_REASONS, RECORD_UNITS, get_metrics
from contract.failures import LABELS as FAILURE_LABELS
from contract.slices import DEFAULT_SLICE_LABELS
from evaluator_worker.metrics import CALLS, WorkerMetrics
from evaluator_worker.metrics import SHADOW_SKIP_REASONS as SKIP_REASONS
from evaluator_worker.shape import OFF, REASONING, SOURCES

SLICE_LABELS: tuple[str, ...] = tuple(DEFAULT_SLICE_LABELS)


def declared_metrics(obj: Any) -> dict[str, str]:
    """Exposition name -> type of every metric attribute of ``obj`` (counters are scraped with ``_total``)."""
    metrics = [v for v in vars(obj).values() if hasattr(v, "_type") and hasattr(v, "_labelnames")]
    return {m._name + ("_total" if m._type == "counter" else ""): m._type for m in metrics}


#: exposition name -> type, as scraped (counters carry ``_total``): read from the declarations themselves
#: (``WorkerMetrics``, ``CollectorMetrics``), so a metric is named once, where it is declared.
WORKER_METRICS: dict[str, str] = declared_metrics(WorkerMetrics(registry=CollectorRegistry()))
COLLECTOR_METRICS: dict[str, str] = declared_metrics(get_metrics(CollectorRegistry()))
#: the judge drift canary's gauges (``claimwatch drift-check``, pushed to a Pushgateway)
DRIFT_METRICS: dict[str, str] = declared_metrics(DriftMetrics(CollectorRegistry()))

#: (metric, label) -> the values the code emits (panels and rules filter on these).
LABEL_VALUES: dict[tuple[str, str], frozenset[str]] = {
    ("claimwatch_claims_total", "verdict"): frozenset({"supported", "unsupported", "contradicted", "error"}),
    ("claimwatch_answers_total", "outcome"): frozenset({"evaluated", "abstained", "failed"}),
    ("claimwatch_records_total", "outcome"): frozenset({"processed", "dead_lettered", "duplicate", "abandoned"}),
    ("claimwatch_result_write_errors_total", "reason"): frozenset({"retriable", "non_retriable"}),
    ("claimwatch_collector_traces_total", "outcome"): frozenset(
        {"assembled", "not_rag", "incomplete", "sampled_in", "sampled_out", "queued", "other"}
    ),
    ("claimwatch_collector_queue_depth", "queue"): frozenset({"span", "sink"}),
    ("claimwatch_claim_failures_total", "failure_type"): frozenset(FAILURE_LABELS),
    ("claimwatch_answers_with_failure_total", "failure_type"): frozenset(FAILURE_LABELS),
    ("claimwatch_answers_with_failure_total", "sources"): frozenset({*SOURCES, OFF}),
    ("claimwatch_answers_with_failure_total", "reasoning"): frozenset({*REASONING, OFF}),
    ("claimwatch_answers_by_shape_total", "sources"): frozenset({*SOURCES, OFF}),
    ("claimwatch_answers_by_shape_total", "reasoning"): frozenset({*REASONING, OFF}),
    ("claimwatch_collector_not_recorded_total", "reason"): frozenset(NOT_RECORDED_REASONS | {"other"}),
    ("claimwatch_collector_records_total", "unit"): frozenset(RECORD_UNITS | {"other"}),
    ("claimwatch_collector_records_total", "context_source"): frozenset(CONTEXT_SOURCES | {"other"}),
    ("claimwatch_answers_failing_total", "evaluator"): frozenset({"faithfulness", "hallucination"}),
    ("claimwatch_shadow_answers_total", "main"): frozenset(CALLS),
    ("claimwatch_shadow_answers_total", "shadow"): frozenset(CALLS),
    ("claimwatch_shadow_skipped_total", "reason"): frozenset(SKIP_REASONS),
    ("claimwatch_drift_error_rate", "rate"): frozenset(DRIFT_RATES),
    ("claimwatch_worker_slice_labels_info", "slice_labels"): frozenset({",".join(DEFAULT_SLICE_LABELS)}),
    ("claimwatch_consistency_checks_total", "outcome"): frozenset({"consistent", "inconsistent", "not_detected"}),
    ("claimwatch_collector_sampling_decisions_total", "decision"): frozenset({"keep", "drop"}),
}

OPTIONAL_METRICS: dict[str, str] = {}


def series_names(metrics: dict[str, str]) -> set[str]:
    """Every series name a metric family exposes (histograms add _bucket/_sum/_count)."""
    out: set[str] = set()
    for name, kind in metrics.items():
        if kind == "histogram":
            out |= {name + "_bucket", name + "_sum", name + "_count"}
        else:
            out.add(name)
    return out


def known_series() -> set[str]:
    """All raw series names the dashboards and rules may use."""
    return (
        series_names(WORKER_METRICS)
        | series_names(COLLECTOR_METRICS)
        | series_names(DRIFT_METRICS)
        | series_names(OPTIONAL_METRICS)
    )
