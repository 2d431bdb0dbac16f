"""Dump the spans, ground truth and records of every LlamaIndex agent row, one JSON file per row.

    python -m tests.conformance.dump_agents_llama_index OUTDIR

Writes ``OUTDIR/<row>.json``: ``{"row", "spans": [span_summary(limit=400)...], "seen": AgentSeen,
"records": [RagTrace...]}``. Not collected by pytest.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

from tests.conformance.harness import make_capture, span_summary


def dump(outdir: Path) -> list[Path]:
    from tests.conformance.agent_flows_llama_index import ROWS

    outdir.mkdir(parents=True, exist_ok=True)
    written = []
    for row, run in ROWS.items():
        cap = make_capture()
        try:
            seen = run(cap)
            doc = {
                "row": row,
                "spans": [span_summary(s, limit=400) for s in cap.finished_spans()],
                "seen": dataclasses.asdict(seen),
                "records": [r.model_dump(mode="json") for r in cap.records()],
            }
        finally:
            cap.close()
        path = outdir / f"{row}.json"
        path.write_text(json.dumps(doc, indent=1, ensure_ascii=False, default=str) + "\n", encoding="utf-8")
        written.append(path)
    return written


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m tests.conformance.dump_agents_llama_index OUTDIR", file=sys.stderr)
        return 2
    for path in dump(Path(argv[0])):
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
