"""Release gate error rates on simulated releases: false rollbacks (A/A) and power.

Model of one release: ``n`` answers; answer ``i`` has ``L_i`` claims (1 + negative binomial,
mean 4.6, sd 3.3, capped at 40: the spread of RAG answers split into claims) and a latent
unsupported-claim probability ``q_i ~ Beta`` with mean ``claim_rate`` and intra-answer
correlation ``rho``; its unsupported claims are ``Binomial(L_i, q_i)``, and it is flagged when
any is. ``rho`` is set from the overdispersion ``D`` (variance of the release's claim rate over
the binomial variance the old gate assumed): ``D = 1 + rho (E[L^2] / E[L] - 1)``.

A candidate ``+delta`` points worse makes each answer, with probability
``delta / (1 - p_flagged)``, a hallucinating one (at least one unsupported claim, the others
unsupported with probability 0.5): its flagged-answer share rises by ``delta``.

Tests compared (all through the project's code: :mod:`claimwatch.stats`):

- ``fixed``: the gate's answer-share test, one look at ``n`` answers per release;
- ``sequential``: the gate's always-valid sequential test, ``looks`` looks at ``n/looks, 2n/looks, ... n``
  answers per release (the data accumulate: what ``claimwatch gate --follow`` and the Argo
  analysis see); a rollback at any look counts;
- ``old``: the claim-level gate before issue 29 (Newcombe on claim counts, every claim an
  independent trial), one look.

``python -m benchmarks.gate_simulation`` prints the tables of docs/gate.md (about a minute).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

import numpy as np

from claimwatch.stats.answer_share import TestConfig, compare_shares
from claimwatch.stats.proportions import newcombe_interval

MAX_CLAIMS = 40
#: 1 + NegBin(r, p): mean 1 + r (1 - p) / p = 4.6
LENGTH_R, LENGTH_P = 1.5, 1.5 / (1.5 + 3.6)


@dataclass(frozen=True)
class Scenario:
    """One simulated comparison: answers per release, the claim rate, overdispersion, the true rise."""

    answers: int = 200
    claim_rate: float = 0.12
    overdispersion: float = 1.0
    delta: float = 0.0  # true rise of the candidate's flagged-answer share
    hallucinated_claim_rate: float = 0.5


def lengths(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Claims per answer: 1 + negative binomial, capped."""
    return np.minimum(1 + rng.negative_binomial(LENGTH_R, LENGTH_P, size=shape), MAX_CLAIMS)


def length_moments(rng: np.random.Generator, size: int = 200_000) -> tuple[float, float]:
    """``E[L]`` and ``E[L^2] / E[L]`` of :func:`lengths` (by sampling)."""
    sample = lengths(rng, (size,)).astype(float)
    return float(sample.mean()), float((sample**2).mean() / sample.mean())


def rho_for(overdispersion: float, l2_over_l: float) -> float:
    """Intra-answer correlation giving ``overdispersion`` for these answer lengths."""
    return max(0.0, (overdispersion - 1) / (l2_over_l - 1))


def release(
    rng: np.random.Generator, pairs: int, sc: Scenario, rho: float, worse: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(claims, unsupported claims, flagged)`` per answer, shape ``(pairs, answers)``."""
    shape = (pairs, sc.answers)
    n_claims = lengths(rng, shape)
    if rho > 0:
        a = sc.claim_rate * (1 - rho) / rho
        b = (1 - sc.claim_rate) * (1 - rho) / rho
        q = rng.beta(a, b, size=shape)
    else:
        q = np.full(shape, sc.claim_rate)
    bad = rng.binomial(n_claims, q)
    if worse and sc.delta > 0:
        base_flagged = baseline_flagged_share(sc, rho)
        turn = rng.random(shape) < sc.delta / (1 - base_flagged)
        extra = 1 + rng.binomial(n_claims - 1, sc.hallucinated_claim_rate)
        bad = np.where(turn, np.maximum(bad, extra), bad)
    return n_claims, bad, bad > 0


_FLAGGED_CACHE: dict[tuple[float, float, float], float] = {}


def baseline_flagged_share(sc: Scenario, rho: float) -> float:
    """The baseline's flagged-answer share for this claim rate and correlation (by a large sample)."""
    key = (sc.claim_rate, rho, sc.overdispersion)
    if key not in _FLAGGED_CACHE:
        rng = np.random.default_rng(12345)
        big = Scenario(answers=200_000, claim_rate=sc.claim_rate, overdispersion=sc.overdispersion)
        _, _, flagged = release(rng, 1, big, rho, worse=False)
        _FLAGGED_CACHE[key] = float(flagged.mean())
    return _FLAGGED_CACHE[key]


def rollback_rates(
    sc: Scenario,
    pairs: int,
    seed: int,
    *,
    looks: int = 20,
    alpha: float = 0.05,
    max_increase: float = 0.0,
    min_answers: int = 50,
    tau: float | None = None,
    baseline_ratio: int = 1,
) -> dict[str, float]:
    """Share of ``pairs`` simulated release pairs each test rolls back.

    ``tau``: the sequential test's (default: its default); ``baseline_ratio``: the baseline gets
    this many answers for each candidate answer (a canary split, 9 for 10% canary traffic).
    """
    rng = np.random.default_rng(seed)
    _, l2_over_l = length_moments(np.random.default_rng(seed + 1))
    rho = rho_for(sc.overdispersion, l2_over_l)
    k = baseline_ratio
    base_sc = Scenario(answers=sc.answers * k, claim_rate=sc.claim_rate, overdispersion=sc.overdispersion)
    bc, bb, bf = release(rng, pairs, base_sc, rho, worse=False)
    cc, cb, cf = release(rng, pairs, sc, rho, worse=True)
    fixed = TestConfig(method="fixed", alpha=alpha, max_increase=max_increase)
    seq = TestConfig(
        method="sequential", alpha=alpha, max_increase=max_increase, **({"tau": tau} if tau is not None else {})
    )
    z = fixed.z
    n = sc.answers
    ends = sorted({max(1, round(n * k / looks)) for k in range(1, looks + 1)})
    bfc, cfc = np.cumsum(bf, axis=1), np.cumsum(cf, axis=1)
    out = {"fixed": 0, "sequential": 0, "old": 0}
    for i in range(pairs):
        xb, xc = int(bfc[i, -1]), int(cfc[i, -1])
        out["fixed"] += compare_shares(xc, n, xb, n * k, fixed).rolls_back
        for m in ends:
            if m < min_answers:
                continue
            if compare_shares(int(cfc[i, m - 1]), m, int(bfc[i, m * k - 1]), m * k, seq).rolls_back:
                out["sequential"] += 1
                break
        lower, _ = newcombe_interval(int(cb[i].sum()), int(cc[i].sum()), int(bb[i].sum()), int(bc[i].sum()), z)
        out["old"] += lower > max_increase
    rates = {k: v / pairs for k, v in out.items()}
    rates["baseline_flagged_share"] = float(bf.mean())
    rates["candidate_flagged_share"] = float(cf.mean())
    return rates


def argo_rollback_rate(
    sc: Scenario,
    pairs: int,
    seed: int,
    *,
    looks: int = 12,
    window_looks: int = 24,
    alpha: float = 0.05,
    max_increase: float = 0.0,
    min_answers: int = 50,
) -> float:
    """Share of pairs the Argo analysis rolls back: ``looks`` looks, a window of ``window_looks`` intervals.

    The candidate is born at the first interval, so the window always holds all of it (its data
    grow, as the sequential test needs); the baseline ran before and its window slides (it
    gains one interval and loses one at each look). ``sc.answers`` is the candidate's total at
    the last look; the baseline serves as many answers per interval.
    """
    rng = np.random.default_rng(seed)
    _, l2_over_l = length_moments(np.random.default_rng(seed + 1))
    rho = rho_for(sc.overdispersion, l2_over_l)
    step = max(1, sc.answers // looks)
    base_sc = Scenario(
        answers=step * (window_looks + looks), claim_rate=sc.claim_rate, overdispersion=sc.overdispersion
    )
    _, _, bf = release(rng, pairs, base_sc, rho, worse=False)
    _, _, cf = release(
        rng,
        pairs,
        Scenario(answers=step * looks, claim_rate=sc.claim_rate, overdispersion=sc.overdispersion, delta=sc.delta),
        rho,
        worse=True,
    )
    bfc = np.concatenate([np.zeros((pairs, 1), dtype=np.int64), np.cumsum(bf, axis=1)], axis=1)
    cfc = np.cumsum(cf, axis=1)
    seq = TestConfig(method="sequential", alpha=alpha, max_increase=max_increase)
    nb = step * window_looks
    rolled = 0
    for i in range(pairs):
        for k in range(1, looks + 1):
            nc = step * k
            if nc < min_answers:
                continue
            xb = int(bfc[i, step * k + nb] - bfc[i, step * k])
            if compare_shares(int(cfc[i, nc - 1]), nc, xb, nb, seq).rolls_back:
                rolled += 1
                break
    return rolled / pairs


def measured_overdispersion(sc: Scenario, pairs: int, seed: int) -> float:
    """Variance of a release's claim rate across simulated releases over the binomial variance."""
    rng = np.random.default_rng(seed)
    _, l2_over_l = length_moments(np.random.default_rng(seed + 1))
    claims, bad, _ = release(rng, pairs, sc, rho_for(sc.overdispersion, l2_over_l), worse=False)
    rate = bad.sum(axis=1) / claims.sum(axis=1)
    binomial = sc.claim_rate * (1 - sc.claim_rate) / claims.sum(axis=1).mean()
    return float(rate.var() / binomial)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pairs", type=int, default=4000)
    p.add_argument("--seed", type=int, default=29)
    args = p.parse_args(argv)
    print("A/A: share of identical release pairs rolled back (alpha 0.05, tolerance 0)")
    print(f"{'overdispersion':>14} {'answers':>7} {'fixed':>7} {'seq x20':>7} {'old':>7}")
    for d in (1.0, 2.0, 4.0):
        for n in (200, 1000):
            r = rollback_rates(Scenario(answers=n, overdispersion=d), args.pairs, args.seed)
            print(f"{d:>14g} {n:>7} {r['fixed']:>7.3f} {r['sequential']:>7.3f} {r['old']:>7.3f}")
    print()
    print("Old claim-level gate at its default 2-point tolerance (A/A, 200 answers)")
    for d in (1.0, 2.0, 4.0):
        r = rollback_rates(Scenario(answers=200, overdispersion=d), args.pairs, args.seed, max_increase=0.02)
        print(
            f"  overdispersion {d:g}: old {r['old']:.3f}   new fixed {r['fixed']:.3f}   new seq x20 {r['sequential']:.3f}"
        )
    print()
    print("Argo analysis (12 looks, baseline window 24 intervals sliding), A/A, tolerance 0")
    for d in (1.0, 2.0, 4.0):
        r_argo = argo_rollback_rate(Scenario(answers=600, overdispersion=d), args.pairs, args.seed)
        print(f"  overdispersion {d:g}: {r_argo:.3f}")
    print()
    print(
        "Power: share of pairs rolled back when the candidate's flagged-answer share is worse "
        "(overdispersion 2, alpha 0.05, tolerance 0.02)"
    )
    print(f"{'rise':>5} {'answers':>7} {'baseline':>8} {'fixed':>7} {'seq x20':>7}")
    for delta in (0.05, 0.10, 0.25):
        for n in (50, 200, 1000):
            r = rollback_rates(
                Scenario(answers=n, overdispersion=2.0, delta=delta), args.pairs // 4, args.seed, max_increase=0.02
            )
            print(
                f"{delta:>5.2f} {n:>7} {r['baseline_flagged_share']:>8.3f} {r['fixed']:>7.3f} {r['sequential']:>7.3f}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
