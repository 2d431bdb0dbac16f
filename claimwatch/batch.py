"""Offline batch modes on the worker's code path: ``claimwatch score`` and ``claimwatch verify``.

Bad lines are reported with their line number and skipped (counted); they never
stop the rest of the file.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Iterator

from pydantic import ValidationError

from claimwatch.progress import Progress
from contract.record import RagTrace
from evaluator_worker.errors import JudgeError
from evaluator_worker.judges.base import Claim, Judge, complete_verdicts
from evaluator_worker.pipeline import Evaluator
from evaluator_worker.results import JsonlResults


@dataclass
class BatchStats:
    read: int = 0
    written: int = 0
    skipped: int = 0
    errors: list[str] = field(default_factory=list)

    def skip(self, lineno: int, reason: str, err: IO[str]) -> None:
        self.skipped += 1
        msg = f"line {lineno}: skipped: {reason}"
        self.errors.append(msg)
        print(msg, file=err)


def _lines(path: str | Path) -> Iterator[tuple[int, str]]:
    handle = sys.stdin if str(path) == "-" else open(path, encoding="utf-8", errors="replace")
    try:
        for i, line in enumerate(handle, 1):
            if line.strip():
                yield i, line
    finally:
        if handle is not sys.stdin:
            handle.close()


def _count(path: str | Path) -> int | None:
    if str(path) == "-":
        return None
    with open(path, "rb") as fh:
        return sum(1 for line in fh if line.strip())


def parse_trace_line(line: str, lineno: int) -> RagTrace:
    """A ``RagTrace`` from one input line; ``trace_id`` defaults to ``line-N``."""
    raw = json.loads(line)
    if not isinstance(raw, dict):
        raise ValueError("line is not a JSON object")
    raw.setdefault("trace_id", f"line-{lineno}")
    if "answer" not in raw:
        raise ValueError("missing 'answer'")
    return RagTrace.model_validate(raw)


def score_file(
    evaluator: Evaluator, input_path: str | Path, output: IO[str] | str | Path, err: IO[str] | None = None
) -> BatchStats:
    """Score every ``RagTrace`` line of ``input_path``; results as JSONL to ``output``."""
    err = err or sys.stderr  # resolved per call: sys.stderr may have been replaced since import
    stats = BatchStats()
    sink = JsonlResults(output)
    try:
        with Progress(_count(input_path), "scoring", stream=err) as bar:
            for lineno, line in _lines(input_path):
                stats.read += 1
                try:
                    trace = parse_trace_line(line, lineno)
                except (ValueError, ValidationError) as exc:
                    stats.skip(lineno, str(exc).splitlines()[0][:300], err)
                    bar.advance()
                    continue
                result = evaluator.evaluate(trace)
                evaluator.metrics.observe(result)
                sink.write(result)
                stats.written += 1
                bar.advance()
    finally:
        sink.close()
    return stats


def verify_file(judge: Judge, input_path: str | Path, output: IO[str], err: IO[str] | None = None) -> BatchStats:
    """Claim-level mode: ``{"claim", "context": [...]}`` lines in, the same plus ``verdict``/``evidence`` out."""
    err = err or sys.stderr
    stats = BatchStats()
    with Progress(_count(input_path), "verifying", stream=err) as bar:
        for lineno, line in _lines(input_path):
            stats.read += 1
            try:
                raw = json.loads(line)
                if not isinstance(raw, dict) or not isinstance(raw.get("claim"), str):
                    raise ValueError("needs a string 'claim'")
                context = raw.get("context", [])
                if isinstance(context, str):
                    context = [context]
                if not isinstance(context, list) or not all(isinstance(c, str) for c in context):
                    raise ValueError("'context' must be a list of strings")
            except ValueError as exc:
                stats.skip(lineno, str(exc)[:300], err)
                bar.advance()
                continue
            claims = [Claim(id="c1", text=raw["claim"])]
            try:
                verdicts = judge.verify(claims, context).verdicts
            except JudgeError as exc:
                print(f"line {lineno}: judge error ({exc.reason}): {str(exc)[:200]}", file=err)
                verdicts = []
            verdict = complete_verdicts(claims, verdicts)[0]
            raw.update(
                verdict=verdict.verdict.value,
                evidence=verdict.evidence,
                context_index=verdict.context_index,
                confidence=verdict.confidence,
                reason=verdict.reason,
            )
            output.write(json.dumps(raw, ensure_ascii=False) + "\n")
            stats.written += 1
            bar.advance()
    output.flush()
    return stats
