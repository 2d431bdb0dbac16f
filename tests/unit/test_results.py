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


def _big_result(question_chars: int = 0, claims: int = 3):
    from evaluator_worker.judges.base import Claim, ClaimVerdict, Verdict

    cs = [Claim(id=f"c{i}", text=f"Claim number {i} " * 5) for i in range(claims)]
    vs = [
        ClaimVerdict(
            claim_id=c.id,
            verdict=Verdict.CONTRADICTED if i == 0 else Verdict.SUPPORTED,
            evidence="evidence " * 20,
            context_index=0,
            confidence=0.9,
        )
        for i, c in enumerate(cs)
    ]
    return score("t" * 32, "j", cs, vs, question="q" * question_chars, answer="a" * 1000, slices={"release": "v1"})


def test_a_result_over_the_request_limit_is_shrunk_keeping_verdicts():
    """A 1.1 MB question: the result drops text to fit the budget; ids, verdicts and counts stay; it says what it dropped."""
    from evaluator_worker.results import encode_result

    r = _big_result(question_chars=1_100_000)
    key, value, headers, dropped = encode_result(r, budget=1_000_000)
    assert len(key) + len(value) <= 1_000_000 and key == b"t" * 32 and headers == []
    out = json.loads(value)
    assert out["question"] is None and "question" in dropped and out["truncated"] == dropped
    assert [c["verdict"] for c in out["claims"]] == ["CONTRADICTED", "SUPPORTED", "SUPPORTED"]
    assert out["counts"]["CONTRADICTED"] == 1 and out["faithfulness"] == r.faithfulness
    assert r.question == "q" * 1_100_000  # the original is not modified


def test_thousands_of_claims_drop_the_claim_list_but_keep_the_counts():
    """When even bare verdicts do not fit, the claim list goes and the counts stay."""
    from evaluator_worker.results import encode_result

    r = _big_result(claims=20_000)
    key, value, _, dropped = encode_result(r, budget=200_000)
    out = json.loads(value)
    assert len(value) <= 200_000 and "claims" in dropped and out["claims"] == []
    assert out["counts"]["SUPPORTED"] == 19_999 and out["counts"]["CONTRADICTED"] == 1


def test_small_result_is_written_as_is():
    """A result under the budget is not touched."""
    from evaluator_worker.results import encode_result

    r = _big_result()
    _, value, _, dropped = encode_result(r, budget=1_000_000)
    assert dropped == [] and json.loads(value) == json.loads(r.model_dump_json())


def test_oversized_keys_and_values_are_bounded():
    """A 2 MB key becomes sha256:<hex> with its length in a header; a value over budget becomes b'' + header."""
    from evaluator_worker.results import MAX_KEY_BYTES, fit_key, fit_value

    key, headers = fit_key(b"k" * 2_000_000)
    assert key.startswith(b"sha256:") and len(key) <= MAX_KEY_BYTES
    assert dict(headers)["claimwatch.original_key_bytes"] == b"2000000"
    assert fit_key(b"short") == (b"short", [])
    value, headers = fit_value(b"v" * 5000, budget=4000)
    assert value == b"" and dict(headers)["claimwatch.original_bytes"] == b"5000"


def test_results_readers_count_each_record_once(tmp_path):
    """Byte-identical copies of a result (a producer re-send after a stall) are read once; other calls of the trace stay."""
    import json

    from claimwatch.claims_query import FirstPerRecord, read_results_file

    rows = [
        {"trace_id": "a" * 32, "faithfulness": 1.0},
        {"trace_id": "a" * 32, "faithfulness": 1.0},
        {"trace_id": "a" * 32, "call_id": "2", "faithfulness": 0.5},
        {"trace_id": "b" * 32, "faithfulness": 0.0},
        {"trace_id": "b" * 32, "faithfulness": 0.0},
    ]
    path = tmp_path / "results.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    got = list(read_results_file(path))
    assert [(r["trace_id"][0], r.get("call_id")) for r in got] == [("a", None), ("a", "2"), ("b", None)]
    first = FirstPerRecord()
    assert [first(r) for r in rows] == [True, False, True, True, False] and first.duplicates == 2
