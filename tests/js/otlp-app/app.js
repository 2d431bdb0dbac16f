// A Node.js "RAG app" traced with the official OpenTelemetry JS SDK: every request is a root CHAIN span with a
// RETRIEVER child (OpenInference attributes, retrieved documents) and an LLM child, exported by the SDK's own
// BatchSpanProcessor + OTLP/HTTP exporter (protobuf or JSON), which streams its bodies (Transfer-Encoding: chunked).
//
//   CW_ENDPOINT=http://127.0.0.1:4318/v1/traces CW_PROTOCOL=proto|json CW_N=10 [CW_TOKEN=...] node app.js
//
// CW_GZIP=1 compresses the streamed bodies (Content-Encoding: gzip).
// CW_DOCS=64 puts 64 documents (x3 attributes) on each retriever span: past the SDK's attribute count limit.
// Prints one JSON line: {"requests": N, "export_ok": batches, "export_failed": batches, "errors": [...]}.
// For https endpoints set NODE_EXTRA_CA_CERTS to the receiver's CA certificate.
'use strict';

const { trace, diag, DiagLogLevel } = require('@opentelemetry/api');
const { NodeTracerProvider, BatchSpanProcessor } = require('@opentelemetry/sdk-trace-node');
const { resourceFromAttributes } = require('@opentelemetry/resources');

const endpoint = process.env.CW_ENDPOINT;
const protocol = process.env.CW_PROTOCOL || 'proto';
const n = parseInt(process.env.CW_N || '10', 10);
const token = process.env.CW_TOKEN || '';
const nDocs = parseInt(process.env.CW_DOCS || '2', 10); // > 30 documents overflow the SDK's 128-attribute limit
const { OTLPTraceExporter } = protocol === 'json'
  ? require('@opentelemetry/exporter-trace-otlp-http')
  : require('@opentelemetry/exporter-trace-otlp-proto');

const errors = [];
diag.setLogger({
  error: (...a) => errors.push(a.map(String).join(' ').slice(0, 300)),
  warn: (...a) => errors.push(a.map(String).join(' ').slice(0, 300)),
  info: () => {}, debug: () => {}, verbose: () => {},
}, DiagLogLevel.WARN);

const exporter = new OTLPTraceExporter({
  url: endpoint,
  headers: token ? { Authorization: `Bearer ${token}` } : {},
  timeoutMillis: 10000,
  compression: process.env.CW_GZIP ? 'gzip' : 'none',   // CompressionAlgorithm.GZIP / NONE
});
// count what the SDK's exporter reports for every batch
let ok = 0;
let failed = 0;
const counting = {
  export(spans, done) {
    exporter.export(spans, (result) => {
      if (result.code === 0) ok += 1; else { failed += 1; errors.push(String(result.error && result.error.message)); }
      done(result);
    });
  },
  shutdown: () => exporter.shutdown(),
  forceFlush: () => exporter.forceFlush(),
};

const provider = new NodeTracerProvider({
  resource: resourceFromAttributes({ 'service.name': 'js-rag', 'service.version': 'js-1' }),
  spanProcessors: [new BatchSpanProcessor(counting, { scheduledDelayMillis: 100, maxExportBatchSize: 4 })],
});
provider.register();
const tracer = trace.getTracer('js-rag-app');

function question(i) { return `Question ${i}: how long do refunds take for order ${i}? (退款 €${i}, Grüße)`; }
function answer(i) { return `Refunds for order ${i} take ${i + 1} days (退款, €${i}, Müller).`; }
function chunks(i) {
  const out = [`Refunds are paid within ${i + 1} days. 退款 ${i}`, `A fee of €${i} applies. Grüße`];
  for (let k = 2; k < nDocs; k += 1) out.push(`Extra document ${k} for order ${i}.`);
  return out;
}

function ragRequest(i) {
  tracer.startActiveSpan('rag', { attributes: {
    'openinference.span.kind': 'CHAIN', 'input.value': question(i), 'output.value': answer(i) } }, (root) => {
    const attrs = { 'openinference.span.kind': 'RETRIEVER', 'input.value': question(i) };
    chunks(i).forEach((c, k) => {
      attrs[`retrieval.documents.${k}.document.id`] = `doc-${i}-${k}`;
      attrs[`retrieval.documents.${k}.document.content`] = c;
      attrs[`retrieval.documents.${k}.document.score`] = 1 - k / 100;
    });
    tracer.startActiveSpan('retrieve', { attributes: attrs }, (s) => s.end());
    tracer.startActiveSpan('llm', { attributes: {
      'openinference.span.kind': 'LLM', 'llm.output_messages.0.message.role': 'assistant',
      'llm.output_messages.0.message.content': answer(i) } }, (s) => s.end());
    root.end();
  });
}

(async () => {
  for (let i = 0; i < n; i += 1) ragRequest(i);
  try { await provider.forceFlush(); } catch (e) { errors.push(`forceFlush: ${[].concat(e).map(String).join(' ')}`); }
  try { await provider.shutdown(); } catch (e) { errors.push(`shutdown: ${[].concat(e).map(String).join(' ')}`); }
  process.stdout.write(JSON.stringify({ requests: n, export_ok: ok, export_failed: failed, errors }) + '\n');
})();
