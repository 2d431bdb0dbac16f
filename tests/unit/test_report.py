"""The HTML release report: numbers from result records, a self-contained page, rendered by a real Chromium."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from claimwatch.report import build_report, rate_rows, render_html
from tests.fakes.chromium import chromium

BASE, CAND = "v1.4.0", "v1.5.0-rc1"


def _result(i: int, release: str, route: str, verdicts: list[str], at: float) -> dict:
    claims = []
    for j, v in enumerate(verdicts):
        claims.append(
            {
                "id": f"c{j}",
                "text": f"Claim {j} of answer {i}: the fee is {10 + j} dollars.",
                "verdict": v,
                "confidence": 0.9 if v == "CONTRADICTED" else 0.7,
                "reason": "number 12 vs 10 in context",
                "evidence": "The fee is 10 dollars.",
                "context_index": 0,
                "context_id": "doc-7",
                "context_source": "kb/fees.md",
                "context_excerpt": "Intro text. The fee is 10 dollars. More text.",
            }
        )
    return {
        "trace_id": f"{i:032x}",
        "judge": "heuristic",
        "slices": {"release": release, "route": route},
        "claims": claims,
        "evaluated_at": at,
    }


def _demo_like_results(seed: int = 7) -> list[dict]:
    """240 baseline answers (~1% unsupported), 240 candidate answers (~12% contradicted, ~8% unsupported)."""
    rnd = random.Random(seed)
    out = []
    for i in range(480):
        release = BASE if i < 240 else CAND
        route = ("finance", "history", "product")[i % 3]
        verdicts = []
        for _ in range(2):
            x = rnd.random()
            if release == BASE:
                verdicts.append("UNSUPPORTED" if x < 0.01 else "SUPPORTED")
            else:
                verdicts.append("CONTRADICTED" if x < 0.12 else "UNSUPPORTED" if x < 0.2 else "SUPPORTED")
        out.append(_result(i, release, route, verdicts, 1_700_000_000 + i))
    return out


def test_report_counts_releases_and_rolls_back_a_worse_candidate():
    """Answer and claim counts per release come from the records; a clearly worse candidate is a ROLLBACK (judge trusted)."""
    r = build_report(_demo_like_results(), BASE, CAND, trust_judge=True)
    assert r.decision.action == "rollback"
    assert r.decision.candidate.judges == ("heuristic",)
    assert r.answers == {BASE: 240, CAND: 240}
    assert r.decision.baseline.answers == r.decision.candidate.answers == 240  # the gate decides on answers
    assert r.decision.candidate.flagged > 60 and r.decision.baseline.flagged < 15
    assert r.decision.baseline.claims.judged == r.decision.candidate.claims.judged == 480
    assert r.decision.candidate.claims.contradicted > 30 and r.decision.baseline.claims.contradicted == 0
    assert {route for (_, route) in r.by_slice} == {"finance", "history", "product"}
    assert r.worst and all(w.slices["release"] == CAND for w in r.worst)
    assert r.worst[0].claim["verdict"] == "CONTRADICTED"


def test_rate_intervals_contain_the_rate_and_other_releases_are_ignored():
    """Each slice's 95% Wilson interval brackets its rate; results of other releases do not count."""
    results = _demo_like_results() + [_result(999, "v0-old", "finance", ["CONTRADICTED"] * 5, 1.0)]
    r = build_report(results, BASE, CAND)
    rows = rate_rows(r)
    assert len(rows) == 3 * 2 * 2  # routes x releases x rates
    assert all(0.0 <= row["lo"] <= row["rate"] <= row["hi"] <= 1.0 for row in rows)
    assert "v0-old" not in str(rows)


def test_page_is_self_contained_escaped_and_highlights_the_evidence():
    """No script, stylesheet link or remote resource; hostile claim text is escaped; evidence is marked in its chunk."""
    results = _demo_like_results()
    results[300]["claims"][0].update(verdict="CONTRADICTED", confidence=1.0, text='<script>alert("x")</script> fee')
    report = build_report(results, BASE, CAND, trust_judge=True)
    page = render_html(report, trace_url_template="http://jaeger:16686/trace/{trace_id}")
    lowered = page.lower()
    assert "<script" not in lowered and "<link" not in lowered and 'src="http' not in lowered
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page
    assert page.count("<svg") == 3
    assert "Intro text. <mark>The fee is 10 dollars.</mark> More text." in page
    assert f'href="http://jaeger:16686/trace/{300:032x}"' in page
    assert 'class="decision rollback"' in page and "ROLLBACK" in page
    assert 'id="judge"' in page and "judge heuristic: not fit for a rollback decision (trusted" in page
    assert len(page.encode()) < 400_000


def test_report_renders_in_headless_chromium(tmp_path: Path):
    """Chromium renders the page with no console errors, the charts are in the DOM, and a screenshot is produced."""
    page = tmp_path / "report.html"
    page.write_text(render_html(build_report(_demo_like_results(), BASE, CAND, trust_judge=True)), encoding="utf-8")
    shot = tmp_path / "report.png"
    run = chromium(tmp_path, f"--screenshot={shot}", "--window-size=1200,2400", page.as_uri())
    assert shot.exists() and shot.stat().st_size > 20_000  # a rendered page, not a blank one
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    console = [ln for ln in run.stderr.splitlines() if "CONSOLE" in ln or "Uncaught" in ln]
    assert console == []
    dom = chromium(tmp_path, "--dump-dom", page.as_uri())
    assert "ROLLBACK" in dom.stdout and dom.stdout.count("<svg") == 3
    assert "<path" in dom.stdout or "<line" in dom.stdout  # the charts drew marks


def test_a_release_with_no_answers_shows_no_infinite_rise():
    """With no candidate answers yet, the smallest detectable rise is "not computable", not "+inf pts"."""
    results = [r for r in _demo_like_results() if r["slices"]["release"] == BASE]
    page = render_html(build_report(results, BASE, CAND))
    assert "inf pts" not in page and "not computable" in page


def test_the_report_shows_other_tools_numbers_per_release_from_the_records():
    """RagaliQ pass shares, DeepEval and FActScore means, suspect claims and PAS2 conflicts per release, read from
    the records' parity and consistency objects; a record without them is not counted in those columns."""
    from evaluator_worker.parity import parity_scores
    from evaluator_worker.scoring import ClaimResult

    results = _demo_like_results()
    for r in results:
        claims = [ClaimResult.model_validate(c) for c in r["claims"]]
        r["parity"] = parity_scores(claims, 2, expected_min_claims=3, confidence_floor=0.8).model_dump()
    results[0]["consistency"] = {"status": "consistent", "conflicts": []}
    results[-1]["consistency"] = {"status": "inconsistent", "conflicts": [{"claim": "x"}, {"claim": "y"}]}
    results[-2]["consistency"] = {"status": "no_group"}  # not a check
    del results[-3]["parity"]
    report = build_report(results, BASE, CAND)
    base, cand = report.other_tools[BASE], report.other_tools[CAND]
    assert (base.scored, cand.scored) == (240, 239)
    bad = sum(any(c["verdict"] != "SUPPORTED" for c in r["claims"]) for r in results[240:-3] + results[-2:])
    assert cand.hallucination_pass.value == pytest.approx(1 - bad / 239)
    assert base.hallucination_pass.value > cand.hallucination_pass.value
    supported = sum(c["verdict"] == "SUPPORTED" for r in results[:240] for c in r["claims"])
    assert cand.factscore.n == 239 and base.suspect_claims == supported  # every supported claim is at 0.7 < 0.8
    assert (base.consistency_checks, base.inconsistent) == (1, 0)
    assert (cand.consistency_checks, cand.inconsistent, cand.conflicts) == (1, 1, 2)
    page = render_html(report)
    assert 'id="other-tools"' in page and "1 of 1 (2 conflicts)" in page


def test_without_other_tools_numbers_the_report_has_no_such_table():
    """Records carrying no parity or consistency object (switched off, older workers): no other-tools table."""
    assert 'id="other-tools"' not in render_html(build_report(_demo_like_results(), BASE, CAND))
