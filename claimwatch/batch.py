"""Offline batch modes on the worker's code path: ``claimwatch score`` and ``claimwatch verify``.

Bad lines (not JSON, nested too deeply, not a record) are reported with their line number (the first
:data:`MAX_LISTED` of them) and skipped (counted); they never stop the rest of the file. Invalid UTF-8 is
replaced by U+FFFD, the lines counted and said at the end. A line without a ``trace_id`` gets
``line-N-<hash of the line>``: unique across files, so separately scored files can be read together,
and the same for the same line.
"""

from __future__ import annotations

import hashlib
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Iterator

from pydantic import ValidationError

from claimwatch.progress import Progress
from contract.record import RagTrace
from evaluator_worker.errors import JudgeError
from evaluator_worker.judges.base import Claim, Judge, complete_verdicts
from evaluator_worker.pipeline import Evaluator
from evaluator_worker.results import JsonlResults

#: skipped lines listed one by one; the rest are counted (and said to be) only
MAX_LISTED = 50
#: lines with invalid UTF-8 named in the note at the end
MAX_NAMED = 10


@dataclass
class BatchStats:
    read: int = 0
    written: int = 0
    skipped: int = 0
    errors: list[str] = field(default_factory=list)
    #: lines whose invalid UTF-8 was replaced by U+FFFD (scored as repaired), and the first of their numbers
    bad_utf8: int = 0
    bad_utf8_lines: list[int] = field(default_factory=list)

    def skip(self, lineno: int, reason: str, err: IO[str]) -> None:
        self.skipped += 1
        if self.skipped > MAX_LISTED:
            return
        msg = f"line {lineno}: skipped: {reason}"
        self.errors.append(msg)
        print(msg, file=err)
        if self.skipped == MAX_LISTED:
            print(f"(further skipped lines are counted, not listed: the first {MAX_LISTED} are above)", file=err)

    def repaired(self, lineno: int) -> None:
        self.bad_utf8 += 1
        if len(self.bad_utf8_lines) < MAX_NAMED:
            self.bad_utf8_lines.append(lineno)

    def notes(self) -> list[str]:
        """What the summary line does not say: lines whose invalid UTF-8 was replaced."""
        if not self.bad_utf8:
            return []
        named = ", ".join(map(str, self.bad_utf8_lines)) + (", ..." if self.bad_utf8 > len(self.bad_utf8_lines) else "")
        return [f"{self.bad_utf8} line(s) had invalid UTF-8, replaced by U+FFFD before scoring (line {named})"]

    def finish(self, err: IO[str]) -> None:
        for note in self.notes():
            print(note, file=err)


def _lines(path: str | Path, stats: BatchStats | None = None) -> Iterator[tuple[int, str]]:
    """Non-blank lines and their numbers; invalid UTF-8 replaced by U+FFFD and counted in ``stats``."""
    stdin = str(path) == "-"
    handle: IO[Any] = getattr(sys.stdin, "buffer", sys.stdin) if stdin else open(path, "rb")
    try:
        for i, raw in enumerate(handle, 1):
            line = raw if isinstance(raw, str) else _decode(raw, i, stats)  # str: a text stdin, already decoded
            if line.strip():
                yield i, line
    finally:
        if not stdin:
            handle.close()


def _decode(raw: bytes, lineno: int, stats: BatchStats | None) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        if stats is not None:
            stats.repaired(lineno)
        return raw.decode("utf-8", errors="replace")


def _count(path: str | Path) -> int | None:
    if str(path) == "-":
        return None
    with open(path, "rb") as fh:
        return sum(1 for line in fh if line.strip())


def default_trace_id(line: str, lineno: int) -> str:
    """``line-N-<12 hex digits of the line's SHA-256>``: the same for the same line, and two files' line N only
    share it when the lines are the same (a bare ``line-N`` made one file's records duplicates of another's)."""
    digest = hashlib.sha256(line.strip().encode("utf-8", errors="surrogatepass")).hexdigest()[:12]
    return f"line-{lineno}-{digest}"


def _json_line(line: str) -> Any:
    """One line's JSON; a ``ValueError`` for anything that is not (absurdly deep nesting included)."""
    try:
        return json.loads(line)
    except RecursionError:  # not a ValueError: it would end the whole batch
        raise ValueError("not JSON: nested too deeply") from None


def parse_trace_line(line: str, lineno: int) -> RagTrace:
    """A ``RagTrace`` from one input line; ``trace_id`` defaults to :func:`default_trace_id`."""
    raw = _json_line(line)
    if not isinstance(raw, dict):
        raise ValueError("line is not a JSON object")
    raw.setdefault("trace_id", default_trace_id(line, lineno))
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
            for lineno, line in _lines(input_path, stats):
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
    stats.finish(err)
    return stats


def verify_file(judge: Judge, input_path: str | Path, output: IO[str], err: IO[str] | None = None) -> BatchStats:
    """Claim-level mode: ``{"claim", "context": [...]}`` lines in, the same plus ``verdict``/``evidence`` out."""
    err = err or sys.stderr
    stats = BatchStats()
    with Progress(_count(input_path), "verifying", stream=err) as bar:
        for lineno, line in _lines(input_path, stats):
            stats.read += 1
            try:
                raw = _json_line(line)
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
    stats.finish(err)
    return stats
