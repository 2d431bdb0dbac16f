"""docs/metrics.md lists every metric the worker and the collector declare, and is regenerated from them."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from claimwatch.docgen import metrics as metrics_doc
from collector.metrics import get_metrics
from evaluator_worker.metrics import WorkerMetrics


def test_metrics_doc_is_up_to_date():
    """The committed docs/metrics.md equals `python -m claimwatch.docgen.metrics` output."""
    assert metrics_doc.DOC.read_text(encoding="utf-8") == metrics_doc.render(), (
        "docs/metrics.md is stale: python -m claimwatch.docgen.metrics --write"
    )


def test_every_declared_metric_has_a_line_with_type_and_help():
    """Each worker and collector metric appears as a table row with its type and a non-empty meaning."""
    doc = metrics_doc.render()
    metrics = metrics_doc._metrics(WorkerMetrics(registry=CollectorRegistry())) + metrics_doc._metrics(
        get_metrics(CollectorRegistry())
    )
    assert len(metrics) >= 40
    for m in metrics:
        row = next((line for line in doc.splitlines() if line.startswith(f"| `{metrics_doc._exposed(m)}` |")), None)
        assert row is not None, m._name
        cells = [c.strip() for c in row.split(" | ")]
        assert cells[1] == m._type and cells[3], row
