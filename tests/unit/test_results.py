"""Dedupe window and result sinks."""

import io
import json

from evaluator_worker.results import DedupeWindow, JsonlResults
from evaluator_worker.scoring import score


def test_dedupe_window_is_bounded_lru():
    """The window keeps the most recent ids only."""
    w = DedupeWindow(maxsize=3)
    for i in range(5):
        w.add(str(i))
    assert "0" not in w and "1" not in w and "4" in w and len(w) == 3


def test_jsonl_results_writes_one_object_per_line():
    """Each result is one JSON line."""
    buf = io.StringIO()
    sink = JsonlResults(buf)
    sink.write(score("a", "j", [], []))
    sink.write(score("b", "j", [], []))
    lines = buf.getvalue().splitlines()
    assert [json.loads(line)["trace_id"] for line in lines] == ["a", "b"]
