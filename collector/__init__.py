"""claimwatch collector: an OpenTelemetry SpanProcessor that turns RAG traces into ``RagTrace`` records on Kafka."""

__all__ = ["RagTrace", "Context"]

from collector.record import Context, RagTrace  # noqa: E402
