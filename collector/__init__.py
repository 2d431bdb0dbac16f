"""claimwatch collector: an OpenTelemetry SpanProcessor that turns RAG traces into ``RagTrace`` records on Kafka."""

__all__ = ["RagTrace", "Context", "RagTraceProcessor", "check_provider"]

from contract.record import Context, RagTrace


def __getattr__(name: str):
    """Import the processor lazily, so ``contract.record`` stays light for the worker."""
    if name in ("RagTraceProcessor", "check_provider"):
        from collector import processor

        return getattr(processor, name)
    raise AttributeError(name)
