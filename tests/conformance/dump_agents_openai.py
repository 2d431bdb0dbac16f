"""Dump the spans (and GenAI log records) of every OpenAI agent-turn row, with the ground truth, as JSON.

    python -m tests.conformance.dump_agents_openai OUTDIR

Writes ``OUTDIR/<row>.json``: ``{"row", "spans": [span_summary...], "logs": [log_summary...], "seen": AgentSeen}``
(spans in start order, values cut to 400 chars), for the rows in ``agent_flows_openai.ROWS``. Not collected by
pytest. Rows whose packages are missing are written as ``{"row", "skipped": reason}``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from tests.conformance.harness import log_summary, make_capture, span_summary


def dump_row(name: str, run: Any) -> dict[str, Any]:
    """Run one row into a fresh capture; its spans, log records and ground truth."""
    from tests.conformance.agent_flows_openai import seen_json

    cap = make_capture(logs=True)
    try:
        try:
            seen = run(cap)
        except ImportError as exc:
            return {"row": name, "skipped": str(exc)}
        spans = sorted(cap.finished_spans(), key=lambda s: s.start_time or 0)
        return {
            "row": name,
            "spans": [span_summary(s, limit=400) for s in spans],
            "logs": [log_summary(r, limit=400) for r in cap.log_records()],
            "seen": seen_json(seen),
        }
    finally:
        cap.close()


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    import structlog

    structlog.configure(logger_factory=structlog.PrintLoggerFactory(file=sys.stderr))  # collector warnings off stdout
    from tests.conformance.agent_flows_openai import ROWS

    out = Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    for name, run in ROWS.items():
        data = dump_row(name, run)
        (out / f"{name}.json").write_text(json.dumps(data, indent=1, ensure_ascii=False, default=str) + "\n")
        print(f"{out / name}.json: {len(data.get('spans', []))} spans, {len(data.get('logs', []))} log records")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
