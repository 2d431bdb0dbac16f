"""docs/collector.md's conformance table is what a fresh run of the instrumentations produces."""

from __future__ import annotations

import pytest

from tests.conformance import table
from tests.conformance.harness import need

pytestmark = pytest.mark.conformance


def test_collector_doc_table_matches_a_fresh_run():
    """Every row is re-run; the committed table equals the rendered one (regenerate with --write)."""
    for module in ("openinference.instrumentation.llama_index", "opentelemetry.instrumentation.openai_v2",
                   "opentelemetry.instrumentation.langchain"):
        need(module)
    doc = table.DOC.read_text(encoding="utf-8")
    assert table.current_table(doc) == table.render(), \
        "docs/collector.md conformance table is stale: python -m tests.conformance.table --write"
