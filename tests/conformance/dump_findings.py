"""Dump every span (and GenAI log record) each conformance row produces, as Markdown.

    python -m tests.conformance.dump_findings > /tmp/dumps.md

Used to write docs/conformance-findings.md; not collected by pytest. Rows whose packages are
missing are reported as such.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

from tests.conformance.harness import Capture, log_summary, make_capture, span_summary

REPO = Path(__file__).resolve().parents[2]


def _fmt_value(v: Any) -> str:
    return json.dumps(v, ensure_ascii=False)


def spans_md(spans: list[dict[str, Any]]) -> str:
    """Spans as a tree (parents first, then by start order as given)."""
    by_parent: dict[str | None, list[dict[str, Any]]] = {}
    ids = {s["span_id"] for s in spans}
    for s in spans:
        parent = s["parent_id"] if s["parent_id"] in ids else None
        by_parent.setdefault(parent, []).append(s)
    out: list[str] = []

    def walk(parent: str | None, depth: int) -> None:
        for s in by_parent.get(parent, []):
            out.append(
                f"{'  ' * depth}- **{s['name']}** kind={s['kind']} span={s['span_id']} parent={s['parent_id']} scope={s['scope']}"
            )
            body = [f"{k} = {_fmt_value(v)}" for k, v in s["attributes"].items()]
            for e in s["events"]:
                body.append(f"EVENT {e['name']}: " + json.dumps(e["attributes"], ensure_ascii=False))
            if body:
                pad = "  " * (depth + 1)
                out.append(pad + "```")
                out.extend(pad + line for line in body)
                out.append(pad + "```")
            walk(s["span_id"], depth + 1)

    walk(None, 0)
    return "\n".join(out)


def logs_md(logs: list[dict[str, Any]]) -> str:
    if not logs:
        return "_no log records_"
    out = []
    for r in logs:
        out.append(f"- event_name={r['event_name']!r} trace_id={r['trace_id']} span_id={r['span_id']}")
        out.append("  ```")
        out.append(f"  body = {r['body']}")
        for k, v in r["attributes"].items():
            out.append(f"  {k} = {_fmt_value(v)}")
        out.append("  ```")
    return "\n".join(out)


def records_md(records: list[Any]) -> str:
    if not records:
        return "_no record_"
    out = []
    for r in records:
        d = r if isinstance(r, dict) else r.model_dump(mode="json")
        keep = {k: d.get(k) for k in ("question", "answer", "contexts", "slices", "attributes", "convention")}
        out.append("```json\n" + json.dumps(keep, indent=1, ensure_ascii=False) + "\n```")
    return "\n".join(out)


def section(title: str, run: Callable[[Capture], Any]) -> str:
    cap = make_capture(logs=True)
    try:
        try:
            run(cap)
        except ImportError as exc:
            return f"## {title}\n\n_skipped: {exc}_\n"
        spans = [span_summary(s, limit=160) for s in sorted(cap.finished_spans(), key=lambda s: s.start_time or 0)]
        logs = [log_summary(r, limit=300) for r in cap.log_records()]
        records = cap.records()
    finally:
        cap.close()
    return (
        f"## {title}\n\n### Spans ({len(spans)})\n\n{spans_md(spans)}\n\n### Log records ({len(logs)})\n\n"
        f"{logs_md(logs)}\n\n### Record(s) built by RagTraceProcessor (collector as of this dump)\n\n{records_md(records)}\n"
    )


def traceloop_sdk_section() -> str:
    title = "Row 4b: traceloop-sdk 0.62.4, Traceloop.init(processor=...) + @workflow"
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRACELOOP_")}
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run(
        [sys.executable, "-m", "tests.conformance.traceloop_sdk_app"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    from tests.conformance.traceloop_sdk_app import RESULT_MARK

    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith(RESULT_MARK)), None)
    if line is None:
        return f"## {title}\n\n_failed (rc={proc.returncode}):_\n```\n{proc.stderr[-2000:]}\n```\n"
    out = json.loads(line[len(RESULT_MARK) :])
    spans = out["spans"]
    for s in spans:  # the subprocess cut values at 400 chars; cut to 160 like the rest
        s["attributes"] = {
            k: (v[:160] + f"…(+{len(v) - 160})" if isinstance(v, str) and len(v) > 160 else v)
            for k, v in s["attributes"].items()
        }
    return (
        f"## {title}\n\nlangchain distribution faked for the SDK's installed-package check: "
        f"{out['faked_langchain_dist']}\n\n### Spans ({len(spans)})\n\n{spans_md(spans)}\n\n"
        f"### Record(s) built by RagTraceProcessor\n\n{records_md(out['records'])}\n"
    )


def main() -> int:
    import structlog

    structlog.configure(logger_factory=structlog.PrintLoggerFactory(file=sys.stderr))  # collector warnings off stdout
    from tests.conformance import flows

    parts = [
        "# Span dumps (generated by `python -m tests.conformance.dump_findings`)\n",
        section("Row 1: OpenInference LangChain (LCEL)", flows.run_openinference_langchain),
        section("Row 2: OpenInference LlamaIndex, query", flows.run_llama_index_query),
        section("Row 2: OpenInference LlamaIndex, index build only", flows.run_llama_index_build),
    ]
    for mode in ("span_only", "event_only", "span_and_event", "true", None):
        parts.append(
            section(
                f"Row 3: openai-v2 + util-genai, CAPTURE_MESSAGE_CONTENT={mode!r}",
                lambda cap, m=mode: flows.run_openai_v2(cap, m),
            )
        )
    parts.append(
        section(
            "Row 3: openai-v2 + util-genai, span_only, documents with only id and score",
            lambda cap: flows.run_openai_v2(cap, "span_only", with_content=False),
        )
    )
    parts.append(
        section("Row 4: Traceloop opentelemetry-instrumentation-langchain (LCEL)", flows.run_traceloop_langchain)
    )
    try:
        import traceloop.sdk  # noqa: F401

        parts.append(traceloop_sdk_section())
    except ImportError as exc:
        parts.append(f"## Row 4b: traceloop-sdk\n\n_skipped: {exc}_\n")
    sys.stdout.write("\n".join(parts))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
