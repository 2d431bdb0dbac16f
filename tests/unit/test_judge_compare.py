"""claimwatch judge-compare: pairs two judges' results by record key, reports agreement, the shift and error rates on labels."""

from __future__ import annotations

import json

import pytest

from claimwatch.cli import main as cli
from claimwatch.judge_compare import call_of, claim_pairs, compare, render, shift_of
from contract.errors import ConfigError

MAIN = "anthropic:claude-a@11111111"
SHADOW = "anthropic:claude-b@22222222"


def _result(i: int, judge: str, flagged: bool, route: str = "qa", claims: list | None = None, **kw) -> dict:
    return {
        "trace_id": f"{i:032x}",
        "judge": "anthropic",
        "judge_id": judge,
        "outcome": kw.pop("outcome", "evaluated"),
        "slices": {"release": "v1", "route": route},
        "at_risk": flagged,
        "counts": {"SUPPORTED": 1, "UNSUPPORTED": int(flagged)},
        "claims": claims or [],
        **kw,
    }


def _pair(n_both: int, n_main: int, n_shadow: int, n_neither: int, route: str = "qa", start: int = 0):
    main, shadow = [], []
    i = start
    for m_flag, s_flag, n in (
        (True, True, n_both),
        (True, False, n_main),
        (False, True, n_shadow),
        (False, False, n_neither),
    ):
        for _ in range(n):
            main.append(_result(i, MAIN, m_flag, route))
            shadow.append(_result(i, SHADOW, s_flag, route))
            i += 1
    return main, shadow


def test_a_judges_call_is_the_gates_flag():
    """at_risk decides when present; else any flagged claim; no claims: none; failed: failed."""
    assert call_of({"outcome": "evaluated", "at_risk": True}) == "flagged"
    assert call_of({"outcome": "evaluated", "at_risk": False, "counts": {"UNSUPPORTED": 2}}) == "ok"
    assert call_of({"outcome": "evaluated", "counts": {"CONTRADICTED": 1}}) == "flagged"
    assert call_of({"outcome": "evaluated", "claims": [{"verdict": "UNSUPPORTED"}]}) == "flagged"
    assert call_of({"outcome": "abstained"}) == "none" and call_of({"outcome": "failed"}) == "failed"


def test_the_paired_table_the_shift_and_its_interval():
    """Same answers under both judges: the table, shares, shift (shadow - main), agreement and kappa."""
    s = shift_of(
        [("flagged", "flagged")] * 10 + [("flagged", "ok")] * 2 + [("ok", "flagged")] * 20 + [("ok", "ok")] * 68
    )
    assert s.table == (10, 2, 20, 68) and s.answers == 100
    assert s.main_share == pytest.approx(0.12) and s.shadow_share == pytest.approx(0.30)
    assert s.shift == pytest.approx(0.18) and s.lower > 0 and s.significant
    assert s.agreement == pytest.approx(0.78) and 0 < (s.kappa or 0) < 1
    same = shift_of([("flagged", "flagged")] * 10 + [("ok", "ok")] * 90)
    assert same.shift == 0 and same.lower <= 0 <= same.upper and not same.significant and same.kappa == 1


def test_compare_pairs_by_record_key_and_cuts_by_slice():
    """Only answers both judged are compared; slice rows below the minimum are left out and counted; biggest shift first."""
    m1, s1 = _pair(5, 0, 30, 65, route="qa")
    m2, s2 = _pair(5, 0, 0, 95, route="faq", start=1000)
    m3, s3 = _pair(1, 0, 0, 3, route="rare", start=5000)
    extra_main = [_result(9999, MAIN, False)]
    c = compare(m1 + m2 + m3 + extra_main, s1 + s2 + s3, slice_labels=["route"], min_slice_answers=30)
    assert c.paired == 204 and c.unpaired_main == 1 and c.unpaired_shadow == 0
    assert [v for v, _ in c.slices["route"]] == ["qa", "faq"] and c.slices_left_out == 1
    qa = dict(c.slices["route"])["qa"]
    assert qa.shift == pytest.approx(0.30) and qa.significant
    assert c.main_judges == [MAIN] and c.shadow_judges == [SHADOW]
    text = render(c)
    assert "qa: 100 answers" in text and "1 slice values with too few paired answers" in text


def test_answers_without_a_call_are_counted_apart():
    """A pair where a judge failed or found no claim is not in the table but is said."""
    main = [_result(1, MAIN, False), _result(2, MAIN, True)]
    shadow = [_result(1, SHADOW, False, outcome="failed"), _result(2, SHADOW, True)]
    c = compare(main, shadow)
    assert c.overall.answers == 1 and c.no_call == {"ok/failed": 1}


def test_claims_pair_by_text():
    """Claims pair by normalised text; a claim only one judge extracted pairs with none."""
    main = _result(
        1,
        MAIN,
        True,
        claims=[{"text": "Paris is big.", "verdict": "SUPPORTED"}, {"text": "X", "verdict": "UNSUPPORTED"}],
    )
    shadow = _result(
        1,
        SHADOW,
        True,
        claims=[{"text": "paris is  big", "verdict": "CONTRADICTED"}, {"text": "Y", "verdict": "SUPPORTED"}],
    )
    assert sorted(claim_pairs(main, shadow)) == [
        ("none", "supported"),
        ("supported", "contradicted"),
        ("unsupported", "none"),
    ]


def test_no_common_answer_is_a_clear_error():
    """Two result sets with no record key in common: a ConfigError that says what to check."""
    with pytest.raises(ConfigError, match="no answer judged by both judges"):
        compare([_result(1, MAIN, True)], [_result(2, SHADOW, True)])


def _labels(rows: list[tuple[int, str, str, int]]) -> list[dict]:
    """(index, label, stratum, stratum population) -> claimwatch label --unit answer lines."""
    per = {}
    for _, _, stratum, pop in rows:
        per[stratum] = pop
    return [
        {"id": f"{i:032x}", "label": label, "unit": "answer", "stratum": stratum, "stratum_population": pop}
        for i, label, stratum, pop in rows
    ]


def test_error_rates_on_labels_are_weighted_by_the_strata():
    """Each label stands for its stratum's population / labelled: rates are weighted, each with an interval."""
    # the main judge flagged answers 0-9 (stratum "flagged", 100 such answers in traffic), passed 10-19 ("ok", 900)
    main = [_result(i, MAIN, i < 10) for i in range(20)]
    # the shadow flags the same, plus answers 10-14
    shadow = [_result(i, SHADOW, i < 15) for i in range(20)]
    rows = [
        (
            i,
            "hallucinated" if i < 8 or 10 <= i < 12 else "faithful",
            "flagged" if i < 10 else "ok",
            100 if i < 10 else 900,
        )
        for i in range(20)
    ]
    c = compare(main, shadow, labels=_labels(rows), seed=1)
    main_miss = c.errors["main"]["miss"]
    # hallucinated: 8 in "flagged" (weight 10 each, all flagged by main) + 2 in "ok" (weight 90 each, passed)
    assert main_miss.rate == pytest.approx(180 / (80 + 180)) and main_miss.labels == 10
    assert c.errors["shadow"]["miss"].rate == pytest.approx(0.0)
    fa = c.errors["shadow"]["false_alarm"]  # faithful: 2 in flagged (w 10, flagged), 8 in ok (w 90): 3 of them flagged
    assert fa.rate == pytest.approx((20 + 270) / (20 + 720)) and fa.lower <= fa.rate <= fa.upper
    assert "on your labels (weighted" in render(c)


def test_the_command_reads_two_files_and_writes_json(tmp_path, capsys):
    """claimwatch judge-compare --main --shadow [--labels] prints the report and writes --json."""
    main, shadow = _pair(10, 1, 15, 74)
    mf, sf, out = tmp_path / "main.jsonl", tmp_path / "shadow.jsonl", tmp_path / "c.json"
    mf.write_text("\n".join(json.dumps(r) for r in main))
    sf.write_text("\n".join(json.dumps(r) for r in shadow))
    assert cli(["judge-compare", "--main", str(mf), "--shadow", str(sf), "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "paired answers: 100" in text and "shift +14.0 pts" in text
    report = json.loads(out.read_text())
    assert report["overall"]["table"] == [10, 1, 15, 74]
    other = tmp_path / "other.jsonl"
    other.write_text(json.dumps(_result(12345, SHADOW, True)))
    assert cli(["judge-compare", "--main", str(mf), "--shadow", str(other)]) == 2
    assert "no answer judged by both judges" in capsys.readouterr().err


def test_claim_labels_give_claim_error_rates_per_judge():
    """Claim labels (claimwatch label, unit claim) pair with each judge's claim of the same text: claim-level rates."""
    main, shadow = [], []
    labels = []
    for i in range(10):
        text = f"Fact {i} holds."
        truly_supported = i < 6
        main_says = "SUPPORTED" if i < 8 else "UNSUPPORTED"  # main misses claims 6 and 7
        shadow_says = "SUPPORTED" if i < 5 else "UNSUPPORTED"  # shadow flags claim 5 (a false alarm), misses none
        main.append(_result(i, MAIN, False, claims=[{"id": "c1", "text": text, "verdict": main_says}]))
        shadow.append(_result(i, SHADOW, False, claims=[{"id": "c1", "text": text.lower(), "verdict": shadow_says}]))
        labels.append(
            {
                "id": f"{i:032x}:c1",
                "claim": text,
                "label": "SUPPORTED" if truly_supported else "UNSUPPORTED",
                "stratum": "all",
                "stratum_population": 10,
                "source": {"trace_id": f"{i:032x}", "claim_id": "c1"},
            }
        )
    labels.append({"id": "zzz", "claim": "x", "label": "SUPPORTED", "source": {"trace_id": "unknown"}})
    c = compare(main, shadow, labels=labels)
    assert c.errors["main"]["claim_miss"].rate == pytest.approx(0.5)  # 2 of 4 unsupported claims passed
    assert c.errors["main"]["claim_false_alarm"].rate == pytest.approx(0.0)
    assert c.errors["shadow"]["claim_miss"].rate == pytest.approx(0.0)
    assert c.errors["shadow"]["claim_false_alarm"].rate == pytest.approx(1 / 6)
    assert "false_alarm" not in c.errors["main"]  # no answer labels given
    text = render(c)
    assert "of supported claims" in text and "1 labels not judged by both judges left out" in text
    none = compare(main, shadow, labels=[labels[-1]])
    assert "none of the 1 labels was judged by both judges" in render(none)
