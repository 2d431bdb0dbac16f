"""The terminal labelling session: one claim at a time, one key and Enter, resumable, scriptable through a pipe.

Keys: ``s`` SUPPORTED, ``u`` UNSUPPORTED, ``c`` CONTRADICTED (``--unit answer``: ``f`` faithful, ``h``
hallucinated), ``k`` skip, ``b`` back (undo the last answer of this session), ``q`` quit (so does end of input). Each label is appended to the labels file (and flushed)
the moment it is given; a skip goes to ``<labels>.skipped`` (the labels file holds labels only, so
``claimwatch calibrate`` reads it as it is). Claims already in either file are not shown again.
"""

from __future__ import annotations

import json
import os
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Mapping, Sequence

from claimwatch.labeling.sample import FAITHFUL, HALLUCINATED, answer_label_record, label_record

KEYS = {"s": "SUPPORTED", "u": "UNSUPPORTED", "c": "CONTRADICTED"}
HELP = "[s]upported  [u]nsupported  [c]ontradicted  [k] skip  [b]ack  [q]uit"
ANSWER_KEYS = {"f": FAITHFUL, "h": HALLUCINATED}
ANSWER_HELP = "[f]aithful  [h]allucinated (a claim not supported)  [k] skip  [b]ack  [q]uit"


def skipped_path(labels_path: str | Path) -> Path:
    return Path(f"{labels_path}.skipped")


def _ids(path: Path) -> list[str]:
    if not path.exists():
        return []
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            out.append(str(json.loads(line).get("id")))
    return out


def _append(path: Path, record: Mapping[str, Any]) -> None:
    with path.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(record, ensure_ascii=False) + "\n")
        fh.flush()
        os.fsync(fh.fileno())


def _drop_last(path: Path, ident: str) -> None:
    """Remove the last line whose id is ``ident`` (rewritten atomically)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    for i in range(len(lines) - 1, -1, -1):
        if lines[i].strip() and str(json.loads(lines[i]).get("id")) == ident:
            del lines[i]
            break
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    tmp.replace(path)


@dataclass
class Summary:
    total: int
    labelled: int
    skipped: int
    this_session: int
    finished: bool


def _wrap(label: str, text: str, width: int = 100) -> str:
    return textwrap.fill(text, width=width, initial_indent=f"{label:<10}", subsequent_indent=" " * 10)


def _header(item: Mapping[str, Any], position: int, total: int, unit: str) -> list[str]:
    slices = item.get("slices") or {}
    where = "  ".join(f"{k} {slices[k]}" for k in ("release", "route") if slices.get(k))
    share = item.get("stratum_share") or 0.0
    return [
        "",
        f"[{position}/{total}]  stratum {item['stratum']} ({share:.0%} of {item['population_total']} "
        f"{unit}s)" + (f"  {where}" if where else ""),
        _wrap("question", item.get("question") or "(not kept in the result record)"),
    ]


def render_answer(item: Mapping[str, Any], position: int, total: int, *, blind: bool = False) -> str:
    """What the labeller sees for one answer: the answer, then each claim with its chunk (and the judge's verdict)."""
    lines = _header(item, position, total, "answer") + [_wrap("answer", item["answer"])]
    for c in item.get("claims") or []:
        verdict = (
            ""
            if blind
            else f"  [{c.get('verdict')}"
            + ("" if c.get("confidence") is None else f" {float(c['confidence']):.2f}")
            + "]"
        )
        lines.append(_wrap(f"  {c.get('id')}", f"{c.get('text')}{verdict}"))
        lines.append(_wrap("", f"chunk: {c.get('context_excerpt') or c.get('evidence') or '(none kept)'}"))
    if not blind:
        lines.append(_wrap("judge", str(item["judge_verdict"])))
    return "\n".join(lines)


def render(item: Mapping[str, Any], position: int, total: int, *, blind: bool = False) -> str:
    """What the labeller sees for one claim (or answer)."""
    if item.get("unit") == "answer":
        return render_answer(item, position, total, blind=blind)
    lines = _header(item, position, total, "claim") + [_wrap("claim", item["claim"])]
    chunk = item.get("context_excerpt")
    origin = " ".join(str(x) for x in (item.get("context_source"), item.get("context_id")) if x)
    if item.get("evidence"):
        lines.append(_wrap("evidence", repr(item["evidence"]) + (f"  ({origin})" if origin else "")))
    lines.append(_wrap("chunk", chunk or "(no evidence chunk kept: label from the question and your sources)"))
    if not blind:
        conf = item.get("judge_confidence")
        judge = f"{item['judge_verdict']}" + ("" if conf is None else f" ({float(conf):.2f})")
        if item.get("reason"):
            judge += f"  why: {item['reason']}"
        lines.append(_wrap("judge", judge))
    return "\n".join(lines)


def run_session(
    plan: Mapping[str, Any],
    labels_path: str | Path,
    stdin: IO[str],
    stdout: IO[str],
    *,
    blind: bool = False,
    labeller: str | None = None,
) -> Summary:
    """Label the plan's claims not labelled or skipped yet, reading one answer per line from ``stdin``."""
    labels = Path(labels_path)
    skips = skipped_path(labels)
    items: Sequence[Mapping[str, Any]] = plan["items"]
    done = set(_ids(labels)) | set(_ids(skips))
    queue = [it for it in items if it["id"] not in done]
    total = len(items)
    history: list[tuple[Mapping[str, Any], Path]] = []
    answers = plan.get("unit") == "answer"
    keys, help_, record = (ANSWER_KEYS, ANSWER_HELP, answer_label_record) if answers else (KEYS, HELP, label_record)
    i = 0
    quit_ = False
    if not queue:
        stdout.write(f"all {total} items of the plan are labelled or skipped ({labels})\n")
    while i < len(queue) and not quit_:
        item = queue[i]
        stdout.write(render(item, total - len(queue) + i + 1, total, blind=blind) + "\n")
        while True:
            stdout.write(f"label? {help_} > ")
            stdout.flush()
            line = stdin.readline()
            if not line:  # end of input: stop, everything given so far is saved
                quit_ = True
                stdout.write("\n")
                break
            key = line.strip().lower()[:1]
            if key in keys:
                _append(labels, record(item, keys[key], labeller=labeller, at=time.time()))
                history.append((item, labels))
                i += 1
                break
            if key == "k":
                _append(skips, {"id": item["id"], "stratum": item["stratum"], "skipped_at": round(time.time(), 3)})
                history.append((item, skips))
                i += 1
                break
            if key == "b":
                if not history:
                    stdout.write("nothing to go back to in this session\n")
                    continue
                prev, where = history.pop()
                _drop_last(where, str(prev["id"]))
                i -= 1
                break
            if key == "q":
                quit_ = True
                break
            stdout.write(f"? one of: {help_}\n")
    labelled = len(_ids(labels))
    skipped = len(_ids(skips))
    return Summary(total, labelled, skipped, len(history), labelled + skipped >= total)
