"""Row 4b, run in its own process: ``Traceloop.init`` (sets the global TracerProvider, once per process)
with our RagTraceProcessor as ``processor=``, and a ``@workflow`` around the LCEL chain.

``python -m tests.conformance.traceloop_sdk_app`` prints one JSON object: the app's answer and
ground truth, the records our processor built, and a summary of every span.
"""

from __future__ import annotations

import json
import os
import sys

#: the result line starts with this (Traceloop.init prints its own banners on stdout)
RESULT_MARK = "@@claimwatch-result "


def main() -> int:
    os.environ.setdefault("TRACELOOP_TELEMETRY", "false")
    os.environ.setdefault("TRACELOOP_METRICS_ENABLED", "false")
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from prometheus_client import CollectorRegistry

    from collector.config import CollectorSettings
    from collector.processor import RagTraceProcessor
    from collector.sink import MemorySink
    from tests.conformance.flows import langchain_chain
    from tests.conformance.harness import QUESTION, span_summary

    # ground truth first: the retriever call must not be traced
    chain, seen = langchain_chain()

    from traceloop.sdk import Traceloop
    from traceloop.sdk.decorators import workflow
    from traceloop.sdk.instruments import Instruments
    from traceloop.sdk.utils import package_check

    # The SDK instruments LangChain only if a distribution named `langchain` (or `langgraph`) is
    # installed; the chain needs only langchain-core. Say it is, rather than install the `langchain`
    # meta-package (the instrumentor it then runs is the same LangchainInstrumentor()).
    faked = not ({"langchain", "langgraph"} & package_check.installed_packages)
    if faked:
        package_check.installed_packages.add("langchain")

    sink = MemorySink()
    proc = RagTraceProcessor(CollectorSettings(late_span_wait_s=0.0), sink=sink, registry=CollectorRegistry())
    exporter = InMemorySpanExporter()
    Traceloop.init(
        app_name="claimwatch-conformance",
        processor=[SimpleSpanProcessor(exporter), proc],
        disable_batch=True,
        telemetry_enabled=False,
        instruments={Instruments.LANGCHAIN},
    )

    @workflow(name="rag_answer")
    def answer(question: str) -> str:
        return chain.invoke(question)

    out = answer(QUESTION)
    proc.force_flush(10_000)
    print(
        RESULT_MARK
        + json.dumps(
            {
                "answer": out,
                "faked_langchain_dist": faked,
                "seen": {"contents": [d.content for d in seen.docs], "ids": seen.ids},
                "records": [r.model_dump(mode="json") for r in sink.records],
                "spans": [span_summary(s, limit=400) for s in exporter.get_finished_spans()],
            }
        )
    )
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
