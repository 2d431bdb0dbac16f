"""Dump the spans every LangChain / LangGraph agent-turn row produces (OpenInference), with its ground truth.

    python -m tests.conformance.dump_agents_langchain OUTDIR

Writes ``OUTDIR/<builder>-<row>.json``: ``{"row", "builder", "seen": AgentSeen as JSON, "records": what the
collector built, "spans": [harness.span_summary(s, limit=400) ...] (in end order), "span_times": {span_id: [start,
end]}}`` (``"error"``: the traceback, where a row could not run). Not collected by pytest.
"""

from __future__ import annotations

import json
import sys
import traceback
import warnings
from pathlib import Path

from tests.conformance.agent_flows_langchain import BUILDERS, ROWS, seen_json
from tests.conformance.harness import make_capture, span_summary


def dump(outdir: Path) -> int:
    outdir.mkdir(parents=True, exist_ok=True)
    failed = 0
    for builder in BUILDERS:
        for row, flow in ROWS.items():
            name = f"{builder}-{row}"
            cap = make_capture(logs=True)
            out: dict = {"row": row, "builder": builder}
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", DeprecationWarning)
                    out["seen"] = seen_json(flow(cap, builder))
                out["records"] = [r.model_dump(mode="json") for r in cap.records()]
            except Exception:  # a row that cannot run is dumped as such (with its spans); the others still run
                failed += 1
                out["error"] = traceback.format_exc()
            finally:
                spans = cap.finished_spans()  # in the order they ended
                out["spans"] = [span_summary(s, limit=400) for s in spans]
                # span_summary has no times: start/end (ns) by span id, for call order and parallel tool calls
                out["span_times"] = {format(s.context.span_id, "016x"): [s.start_time, s.end_time] for s in spans}
                cap.close()
            path = outdir / f"{name}.json"
            path.write_text(json.dumps(out, indent=1, ensure_ascii=False, default=str) + "\n", encoding="utf-8")
            status = "ERROR" if "error" in out else f"{len(out['spans'])} spans, {len(out['records'])} record(s)"
            print(f"{path}: {status}")
    return 1 if failed else 0


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    return dump(Path(argv[0]))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
