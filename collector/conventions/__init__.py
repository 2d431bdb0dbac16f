"""Reading RAG calls and agent turns out of finished spans (OpenInference, OTel GenAI, Traceloop).

The public face of the package:

- :class:`SpanExtractor`: ``extract(span) -> SpanFacts`` (one span, by the first matching reader of
  :data:`~collector.conventions.extract.READERS`) and ``build(trace_id, facts) -> [BuildResult]`` (one record per
  RAG call or agent turn, :mod:`collector.conventions.build`);
- :class:`SpanFacts` (what a span contributes, kept per trace), :class:`BuildResult`, :data:`NOT_RECORDED`
  (why a unit gave no record);
- :func:`unwrap_text` (JSON shapes to text), :data:`HIDDEN_MARK`.

Rooms: ``text`` (JSON/messages/documents to text), ``messages`` (chat messages and the current turn),
``react`` (the ReAct text protocol), one module per convention (``openinference``, ``genai``, ``traceloop``),
``extract`` (the reader table), ``tree`` / ``grounding`` / ``build`` (records from a trace).
"""

from collector.conventions.build import NOT_RECORDED, BuildResult, RecordBuilder
from collector.conventions.extract import READERS, SpanExtractor, extract
from collector.conventions.facts import AGENT, CHAIN, LLM, OTHER, RETRIEVER, TOOL, SpanFacts
from collector.conventions.text import HIDDEN_MARK, unwrap_text

__all__ = [
    "AGENT",
    "CHAIN",
    "HIDDEN_MARK",
    "LLM",
    "NOT_RECORDED",
    "OTHER",
    "READERS",
    "RETRIEVER",
    "TOOL",
    "BuildResult",
    "RecordBuilder",
    "SpanExtractor",
    "SpanFacts",
    "extract",
    "unwrap_text",
]
