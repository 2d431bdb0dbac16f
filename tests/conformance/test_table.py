"""docs/collector.md's conformance table is what a fresh run of the instrumentations produces."""

from __future__ import annotations

import pytest

from tests.conformance import table
from tests.conformance.harness import need

pytestmark = pytest.mark.conformance


def test_collector_doc_table_matches_a_fresh_run():
    """Every row is re-run at the locked versions; the committed table equals the rendered one (regenerate with --write)."""
    for module in (
        "openinference.instrumentation.llama_index",
        "opentelemetry.instrumentation.openai_v2",
        "opentelemetry.instrumentation.langchain",
    ):
        need(module)
    assert not table.drift(), (
        f"installed versions differ from requirements/lock.txt: {table.drift()} (bash scripts/setup.sh)"
    )
    doc = table.DOC.read_text(encoding="utf-8")
    assert table.current_table(doc) == table.render(), (
        "docs/collector.md conformance table is stale: python -m tests.conformance.table --write"
    )


def test_collector_doc_agent_table_matches_a_fresh_run():
    """Every agent row is re-run at the locked versions; the committed agent table equals the rendered one."""
    for module in ("langgraph.prebuilt", "langchain.agents", "agents", "openinference.instrumentation.openai_agents"):
        need(module)
    doc = table.DOC.read_text(encoding="utf-8")
    assert table.current_table(doc, table.AGENT_BEGIN, table.AGENT_END) == table.render_agents(), (
        "docs/collector.md agent table is stale: python -m tests.conformance.table --write"
    )


def test_versions_column_comes_from_the_lock_not_the_environment(monkeypatch):
    """A newer release installed by hand changes nothing in the rendered versions: they are the lock's."""
    monkeypatch.setattr(table.importlib.metadata, "version", lambda name: "999.0")
    pins = table.locked_versions()
    cell = table._version(("langchain-core", "llama-index-core"))
    assert cell == f"langchain-core {pins['langchain-core']}<br>llama-index-core {pins['llama-index-core']}"
    assert "999.0" not in cell
    assert any("999.0" in line for line in table.drift())  # ... while the drift is reported, not hidden
