"""The drift canary: a stable judge alarms in at most alpha of the runs, a 10-point accuracy drop is caught (simulated);
runs, references, metrics and the command behave."""

from __future__ import annotations

import random

import pytest
from prometheus_client.parser import text_string_to_metric_families

from claimwatch.calibration import LabeledClaim, data_path, load_labeled_claims
from claimwatch.cli import main as cli
from claimwatch.drift import DEFAULT_ALPHA, DEFAULT_REFERENCE_RUNS, DriftMetrics, DriftRun, compare_runs, run_drift
from claimwatch.stats.proportions import sign_flip_p_value
from evaluator_worker.pipeline import Evaluator
from tests.fakes.judges import TagJudge

#: the shipped set's size: the numbers the docs state hold for it
N_ITEMS = 148


def _items(n: int, rng: random.Random) -> list[LabeledClaim]:
    labels = ["SUPPORTED"] * 6 + ["UNSUPPORTED"] * 2 + ["CONTRADICTED"] * 2
    return [LabeledClaim(f"i{k}", f"claim {k}", ("ctx",), rng.choice(labels)) for k in range(n)]


def _judge_run(items, p_wrong, rng, at) -> DriftRun:
    """Verdicts of a judge that is wrong on item i with probability p_wrong[i] (independently per run)."""
    out = {}
    for it, p in zip(items, p_wrong):
        flagged = it.label != "SUPPORTED"
        wrong = rng.random() < p
        out[it.id] = ("SUPPORTED" if flagged else "UNSUPPORTED") if wrong else it.label
    return DriftRun("j", "s", out, at)


def _difficulty(n: int, rng: random.Random, coin_share: float) -> list[float]:
    """Most items the judge gets right (or wrong) every time; ``coin_share`` of them are coin flips."""
    out = []
    for _ in range(n):
        u = rng.random()
        out.append(0.5 if u < coin_share else 0.98 if u < coin_share + 0.15 else 0.02)
    return out


M = DEFAULT_REFERENCE_RUNS


@pytest.mark.slow  # the slow tier (scripts/test.sh --fast leaves it out)
@pytest.mark.parametrize("coin_share", [0.1, 0.3])
def test_a_stable_judge_alarms_in_at_most_alpha_of_the_runs(coin_share):
    """Same judge, same items, its randomness only (10% or 30% coin-flip items): alarms <= alpha over 2,000 runs."""
    rng = random.Random(11)
    alarms = 0
    reps = 2_000
    for _ in range(reps):
        items = _items(N_ITEMS, rng)
        p = _difficulty(N_ITEMS, rng, coin_share)
        runs = [_judge_run(items, p, rng, float(k)) for k in range(M + 1 + rng.randrange(M))]
        alarms += compare_runs(items, runs).alarm
    assert alarms / reps <= DEFAULT_ALPHA


def _first_alarm(n: int, reps: int, max_runs: int, rng: random.Random) -> list[int | None]:
    """Runs after a 10-point accuracy drop (items the judge always got right, now wrong) until the first alarm."""
    first = []
    for _ in range(reps):
        items = _items(n, rng)
        p = _difficulty(n, rng, 0.1)
        runs = [_judge_run(items, p, rng, float(k)) for k in range(M)]
        reliable = [i for i, x in enumerate(p) if x == 0.02]
        drifted = list(p)
        for i in rng.sample(reliable, round(0.10 * n / 0.96)):
            drifted[i] = 0.98
        hit = None
        for k in range(1, max_runs + 1):
            runs.append(_judge_run(items, drifted, rng, float(M + k)))
            runs = runs[:M] + runs[max(M, len(runs) - M) :]  # what run_drift keeps
            if compare_runs(items, runs).alarm:
                hit = k
                break
        first.append(hit)
    return first


@pytest.mark.slow  # the slow tier (scripts/test.sh --fast leaves it out)
def test_a_10_point_accuracy_drop_is_caught_within_the_stated_runs():
    """148 items: the first drifted run alarms with probability >= 0.45, one within 3 runs >= 0.9, within 6 >= 0.97;
    500 items: the first run >= 0.99 (the numbers docs/choosing-a-judge.md states)."""
    rng = random.Random(12)
    small = _first_alarm(N_ITEMS, 400, 6, rng)
    within = lambda k: sum(h is not None and h <= k for h in small) / len(small)  # noqa: E731
    assert within(1) >= 0.45 and within(3) >= 0.9 and within(6) >= 0.97, [within(k) for k in (1, 3, 6)]
    large = _first_alarm(500, 100, 1, rng)
    assert sum(h == 1 for h in large) / len(large) >= 0.99


def test_the_sign_flip_test_is_mcnemar_for_0_1_differences_and_exact():
    """For +-1 differences it is P(Bin(n, 1/2) >= worse); larger differences weigh more; nothing to test: 1."""
    assert sign_flip_p_value([]) == 1.0 and sign_flip_p_value([0, 0]) == 1.0 and sign_flip_p_value([-1, -1]) == 1.0
    assert sign_flip_p_value([1, 1, 1]) == pytest.approx(1 / 8)
    assert sign_flip_p_value([1] * 6 + [-1] * 4) == pytest.approx(
        sum(__import__("math").comb(10, k) for k in range(6, 11)) / 1024
    )
    assert sign_flip_p_value([3, 1]) == pytest.approx(1 / 4)  # +4 only when both signs stay
    assert sign_flip_p_value([3, -1]) == pytest.approx(2 / 4)  # +2 or +4


def test_the_first_runs_are_the_reference_and_a_changed_judge_starts_a_new_one(tmp_path):
    """Runs 1..3 build the reference (no decision); run 4 compares; a judge with another id gets its own runs."""
    items = load_labeled_claims(data_path("heldout"))[:20]
    ev = Evaluator(TagJudge())
    metrics = DriftMetrics()
    for k in range(1, M + 1):
        c, runs = run_drift(ev, items, tmp_path, metrics=metrics, clock=lambda k=k: 100.0 * k)
        assert not c.alarm and not c.decided and f"building the reference: run {k} of {M}" in c.reason
    c, runs = run_drift(ev, items, tmp_path, metrics=metrics, clock=lambda: 900.0)
    assert c.decided and not c.alarm and [r.at for r in runs] == [100.0, 200.0, 300.0, 900.0]
    assert c.agreement == 1.0  # a deterministic judge: the same verdicts
    for k in range(5):  # the reference stays, the recent runs roll
        _, runs = run_drift(ev, items, tmp_path, clock=lambda k=k: 1000.0 + k)
    assert [r.at for r in runs] == [100.0, 200.0, 300.0, 1002.0, 1003.0, 1004.0]
    get = metrics.registry.get_sample_value
    jid = ev.identity.judge_id
    assert get("claimwatch_drift_alarm", {"judge_id": jid}) == 0
    assert get("claimwatch_drift_last_run_timestamp_seconds", {"judge_id": jid}) == 900.0
    assert get("claimwatch_drift_error_rate", {"judge_id": jid, "rate": "overall"}) is not None
    assert len(list(tmp_path.glob("drift-*.json"))) == 1

    class Other(TagJudge):
        name = "other-tag"

    c, runs = run_drift(Evaluator(Other()), items, tmp_path, clock=lambda: 2000.0)
    assert len(runs) == 1 and not c.decided
    assert len(list(tmp_path.glob("drift-*.json"))) == 2


def test_a_judge_that_got_worse_raises_the_alarm():
    """The same judge id flagging 12 of 40 supported claims after 3 clean reference runs: alarm, exported as 1."""
    items = [LabeledClaim(f"c{i}", f"Fact {i} holds.", ("ctx",), "SUPPORTED") for i in range(40)]
    clean = {i.id: "SUPPORTED" for i in items}
    worse = {i.id: "UNSUPPORTED" if k < 12 else "SUPPORTED" for k, i in enumerate(items)}
    runs = [DriftRun("j", "x", clean, float(k)) for k in range(M)] + [DriftRun("j", "x", worse, 9.0)]
    c = compare_runs(items, runs)
    assert c.alarm and "false_alarm" in c.reason and c.error_rates["false_alarm"] == pytest.approx(0.3)
    m = DriftMetrics()
    m.record("j", c, 9.0)
    assert m.registry.get_sample_value("claimwatch_drift_alarm", {"judge_id": "j"}) == 1


def test_an_outage_is_not_drift():
    """A run where the judge failed on more than 10% of items decides nothing."""
    items = [LabeledClaim(f"c{i}", "x", ("ctx",), "SUPPORTED") for i in range(20)]
    ref = [DriftRun("j", "s", {i.id: "SUPPORTED" for i in items}, float(k)) for k in range(M)]
    now = DriftRun("j", "s", {i.id: "ERROR" if k < 5 else "UNSUPPORTED" for k, i in enumerate(items)}, 9.0)
    c = compare_runs(items, [*ref, now])
    assert not c.alarm and not c.decided and c.errors == 5 and "outage" in c.reason


def test_the_command_writes_a_textfile_and_exits_0(tmp_path, capsys):
    """claimwatch drift-check --judge heuristic over the shipped set: reference runs, then ok, numbers in the textfile."""
    state, text = tmp_path / "state", tmp_path / "drift.prom"
    args = ["drift-check", "--judge", "heuristic", "--state", str(state), "--textfile", str(text), "--threads", "1"]
    for _ in range(M + 1):
        assert cli(args) == 0
    out = capsys.readouterr().out.split("claimwatch drift-check:")[-1]
    assert out.startswith(" ok (judge_id heuristic@") and "no error rate rose beyond chance" in out
    assert "same verdict as the first reference run on 100.0%" in out
    names = {s.name for fam in text_string_to_metric_families(text.read_text()) for s in fam.samples}
    assert {"claimwatch_drift_alarm", "claimwatch_drift_error_rate", "claimwatch_drift_agreement_ratio"} <= names
