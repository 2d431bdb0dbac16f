"""Metric names the dashboards and rules may reference.

The worker's names are declared in :mod:`evaluator_worker.metrics`, the
collector's in :mod:`collector.metrics` (served by the instrumented
application's registry). The unit tests cross-check the worker list against a
live ``WorkerMetrics`` registry and ``tests/integration/test_prometheus_e2e.py``
both lists against the real registries scraped by a real Prometheus. Label
values the panels and rules rely on are listed in :data:`LABEL_VALUES`. The
cascade metrics exist only when the cascade judge runs: their panels stay
empty otherwise.
``OPTIONAL_METRICS`` is for names exported by components not in this repo.
"""

from __future__ import annotations

from contract.record import DEFAULT_SLICE_LABELS

SLICE_LABELS: tuple[str, ...] = tuple(DEFAULT_SLICE_LABELS)

#: exposition name -> type, as scraped (counters carry ``_total``).
WORKER_METRICS: dict[str, str] = {
    "claimwatch_claims_total": "counter",
    "claimwatch_answers_total": "counter",
    "claimwatch_answers_with_unsupported_total": "counter",
    "claimwatch_answers_with_contradicted_total": "counter",
    "claimwatch_answer_faithfulness_ratio": "histogram",
    "claimwatch_answer_claims": "histogram",
    "claimwatch_records_total": "counter",
    "claimwatch_dead_letters_total": "counter",
    "claimwatch_judge_latency_seconds": "histogram",
    "claimwatch_judge_calls_total": "counter",
    "claimwatch_judge_tokens_total": "counter",
    "claimwatch_judge_cost_dollars_total": "counter",
    "claimwatch_judge_errors_total": "counter",
    "claimwatch_evaluation_duration_seconds": "histogram",
    "claimwatch_consumer_lag_records": "gauge",
    "claimwatch_last_evaluation_timestamp_seconds": "gauge",
    "claimwatch_worker_up": "gauge",
    "claimwatch_judge_info": "gauge",
    "claimwatch_cascade_claims_total": "counter",
    "claimwatch_cascade_agreement_total": "counter",
    "claimwatch_answers_failing_total": "counter",
    "claimwatch_answer_context_hallucination_ratio": "histogram",
    "claimwatch_answer_factscore_ratio": "histogram",
    "claimwatch_suspect_claims_total": "counter",
    "claimwatch_consistency_checks_total": "counter",
    "claimwatch_consistency_conflicts_total": "counter",
    "claimwatch_judge_throttled_total": "counter",
    "claimwatch_judge_concurrency_limit": "gauge",
    "claimwatch_in_flight_answers": "gauge",
    "claimwatch_unacked_writes": "gauge",
    "claimwatch_oldest_unacked_write_age_seconds": "gauge",
    "claimwatch_rebalance_drain_seconds": "histogram",
    "claimwatch_result_write_errors_total": "counter",
    "claimwatch_results_shrunk_total": "counter",
    "claimwatch_commit_failures_total": "counter",
}

COLLECTOR_METRICS: dict[str, str] = {
    "claimwatch_collector_spans_total": "counter",
    "claimwatch_collector_traces_total": "counter",
    "claimwatch_collector_dropped_total": "counter",
    "claimwatch_collector_queue_depth": "gauge",
    "claimwatch_collector_buffered_traces": "gauge",
    "claimwatch_collector_produce_latency_seconds": "histogram",
    "claimwatch_collector_produce_errors_total": "counter",
    "claimwatch_collector_truncated_total": "counter",
    "claimwatch_collector_sampling_decisions_total": "counter",
    "claimwatch_collector_prompt_context_total": "counter",
}

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
    ("claimwatch_answers_failing_total", "evaluator"): frozenset({"faithfulness", "hallucination"}),
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
    return series_names(WORKER_METRICS) | series_names(COLLECTOR_METRICS) | series_names(OPTIONAL_METRICS)
