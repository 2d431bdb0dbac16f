"""The ceiling of ``benchmarks/llm_latency.py``'s burst run: what a zero-overhead worker could deliver at best.

A discrete-event model of the run ``llm_latency --in-flight 64 --burst-answers 200`` measures,
with none of the worker's costs (no Kafka, no threads, no GIL, no limiter): ``--slots``
answers are judged at once, each by ``--calls`` calls in a row whose latencies are lognormal
(median ``--median`` s, sigma ``--sigma``, as ``tests/fakes/messages_server.py`` draws them); a
finished answer frees its slot for the next. Answers/s is counted as the benchmark counts
it, from the first result to the last. After the 50th result the provider rejects the next
``--burst`` calls (each in ``--rejection-rtt`` s) with a retry-after of ``--retry-after`` s,
and a rejected call is tried again once that has passed.

Three responses to the burst, each an upper bound for a class of worker:

- ``none``: no burst at all (the run's ceiling);
- ``per-call``: only the rejected call waits its retry-after, every other call goes on as if
  nothing happened (the least any client that honours retry-after can lose);
- ``gate``: a rejection holds back every new call until its retry-after has passed (what a
  client does that believes the provider's "wait", as the shipped limiter does), never
  lowering the concurrency;
- ``gate+halve``: ``gate``, and a rejection also halves the calls allowed at once (at most
  once per ``--cooldown`` s), back to full once a call started after the gate opened has been
  out ``--accepted-after`` s: close to the shipped limiter, less its proportional rate
  reduction (which lets a few more calls start while the old ones drain).

``--window S`` makes the burst a provider's rate-limit window instead: every call started in
the S seconds after the 50th result is rejected, so the calls a response sends into the
window are what it costs the provider.

Printed per response: the median and 10th percentile answers/s over ``--runs`` seeded runs,
the share of runs at or above ``--target``, the ratio of the median to ``none``'s, and the
median count of rejected calls.

    python -m benchmarks.burst_ceiling [--runs 400] [--answers 200] [--slots 64] [--target 10]
"""

from __future__ import annotations

import argparse
import heapq
import math
import random
import statistics
from dataclasses import dataclass

RESPONSES = ("none", "per-call", "gate", "gate+halve")


@dataclass(frozen=True)
class Model:
    answers: int = 200
    slots: int = 64
    calls: int = 2
    median: float = 2.0
    sigma: float = 0.5
    burst: int = 40
    burst_after: int = 50
    retry_after: float = 1.0
    rejection_rtt: float = 0.005
    #: a time-based burst instead: every call started in the next ``window`` s is rejected (0: count-based)
    window: float = 0.0
    cooldown: float = 2.0
    accepted_after: float = 0.1


def run(model: Model, response: str, seed: int) -> tuple[float, int]:
    """One run: answers/s from the first result to the last, and the calls rejected."""
    rng = random.Random(seed)
    mu = math.log(model.median)
    # ready calls: (when they may start, answer, call index); events: (when, answer, call index, accepted)
    ready: list[tuple[float, int, int]] = []
    events: list[tuple[float, int, int, bool]] = []
    done: list[float] = []
    now, admitted, busy, gate = 0.0, 0, 0, 0.0
    rejections_left, window_ends, rejected = 0, -math.inf, 0
    limit, halved_at, restore_at = model.slots, -math.inf, math.inf
    while admitted < model.slots and admitted < model.answers:
        heapq.heappush(ready, (0.0, admitted, 0))
        admitted += 1
    while True:
        if now >= restore_at:
            limit, restore_at = model.slots, math.inf
        while busy < limit and ready and ready[0][0] <= now and now >= gate:
            _, answer, call = heapq.heappop(ready)
            busy += 1
            if rejections_left > 0 or now < window_ends:
                rejections_left, rejected = rejections_left - 1, rejected + 1
                heapq.heappush(events, (now + model.rejection_rtt, answer, call, False))
            else:
                heapq.heappush(events, (now + rng.lognormvariate(mu, model.sigma), answer, call, True))
                if limit < model.slots:  # seen accepting once it has been out accepted_after s
                    restore_at = min(restore_at, now + model.accepted_after)
        next_start = max(ready[0][0], gate) if ready and busy < limit else math.inf
        if not events and next_start == math.inf and restore_at == math.inf:
            break
        if restore_at < min(next_start, events[0][0] if events else math.inf):
            now = restore_at
        elif events and events[0][0] <= next_start:
            now, answer, call, accepted = heapq.heappop(events)
            busy -= 1
            if not accepted:
                heapq.heappush(ready, (now + model.retry_after, answer, call))
                if response in ("gate", "gate+halve"):
                    gate = max(gate, now + model.retry_after)
                if response == "gate+halve" and now - halved_at >= model.cooldown:
                    limit, halved_at, restore_at = max(1, limit // 2), now, math.inf
            elif call + 1 < model.calls:
                heapq.heappush(ready, (now, answer, call + 1))
            else:
                done.append(now)
                if admitted < model.answers:
                    heapq.heappush(ready, (now, admitted, 0))
                    admitted += 1
                if len(done) == model.burst_after and response != "none":
                    if model.window > 0:
                        window_ends = now + model.window
                    else:
                        rejections_left = model.burst
        else:
            now = next_start
    return (len(done) - 1) / (done[-1] - done[0]), rejected


def main(argv: list[str] | None = None) -> dict[str, list[float]]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=400)
    ap.add_argument("--answers", type=int, default=200)
    ap.add_argument("--slots", type=int, default=64)
    ap.add_argument("--calls", type=int, default=2, help="calls per answer, one after the other")
    ap.add_argument("--median", type=float, default=2.0)
    ap.add_argument("--sigma", type=float, default=0.5)
    ap.add_argument("--burst", type=int, default=40, help="calls rejected after the 50th result")
    ap.add_argument("--window", type=float, default=0.0, help="instead: reject every call for this many seconds")
    ap.add_argument("--retry-after", type=float, default=1.0)
    ap.add_argument("--rejection-rtt", type=float, default=0.005)
    ap.add_argument("--target", type=float, default=10.0)
    args = ap.parse_args(argv)
    model = Model(
        answers=args.answers,
        slots=args.slots,
        calls=args.calls,
        median=args.median,
        sigma=args.sigma,
        burst=args.burst,
        retry_after=args.retry_after,
        rejection_rtt=args.rejection_rtt,
        window=args.window,
    )
    print(f"model: {model}; {args.runs} seeded runs per response (the same seeds for each)")
    runs = {r: [run(model, r, seed) for seed in range(args.runs)] for r in RESPONSES}
    rates = {r: [rate for rate, _ in rs] for r, rs in runs.items()}
    ceiling = statistics.median(rates["none"])
    for response, xs in rates.items():
        rejected = statistics.median(n for _, n in runs[response])
        p10 = statistics.quantiles(xs, n=10)[0]
        share = sum(x >= args.target for x in xs) / len(xs)
        print(
            f"{response:9s}: median {statistics.median(xs):6.2f} answers/s, 10th percentile {p10:6.2f}, "
            f"runs >= {args.target:g}: {share:6.1%}, ratio to no burst {statistics.median(xs) / ceiling:.2f}, "
            f"rejected calls {rejected:.0f}"
        )
    return rates


if __name__ == "__main__":
    main()
