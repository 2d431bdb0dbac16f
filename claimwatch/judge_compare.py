"""``claimwatch judge-compare``: the current judge and a candidate (the shadow) on the same answers, before a switch.

Reads the main judge's results and the shadow judge's (``evaluator_worker.shadow``; two topics, or two result
files such as ``claimwatch score`` output of two judges on one traces file), pairs them by record key, and says:

- **answers**: how often the two judges make the same call (flagged as the gate counts it: at risk, or any flagged
  claim where the risk is missing), Cohen's kappa, and the flagged share under each with the **shift** a switch
  would cause and its 95% interval (paired: both judges saw the same answers; Newcombe's paired hybrid score
  interval, :func:`claimwatch.stats.proportions.paired_difference_interval`), in all and per slice value;
- **claims**: the verdicts of claims both judges extracted (paired by their text), and how many only one did;
- **on your labels** (``--labels``, answers labelled by ``claimwatch label --unit answer``): each judge's false-alarm
  rate (faithful answers flagged) and miss rate (hallucinated answers passed), weighted by the labels' strata (the
  sample was stratified by the main judge's call: each label stands for ``stratum_population / labelled`` answers),
  with 95% stratified-bootstrap intervals. These are the numbers that say which judge to trust.

The shift moves every release's rates at once after a switch: re-baseline (docs/choosing-a-judge.md, "Switching
judges"). A shift is what a switch does, not which judge is right: only labels say that.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import re
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from claimwatch.calibration import read_jsonl
from claimwatch.gate.counts import ResultSkips, record_judge
from claimwatch.stats.proportions import paired_difference_interval, wilson_interval
from contract.errors import ConfigError
from contract.record import record_key

__all__ = ["Comparison", "ErrorRate", "Shift", "compare", "call_of", "render"]

Z95 = 1.959963984540054
#: slice rows with fewer paired answers than this are left out of the per-slice table (said in the report)
DEFAULT_MIN_SLICE_ANSWERS = 30
#: the default slice labels the table cuts by
DEFAULT_SLICES = ("release", "model", "route")
BOOTSTRAP_DRAWS = 2_000


def call_of(record: Mapping[str, Any]) -> str:
    """A judge's call on one result record: flagged | ok | none (no claim judged) | failed; as the gate counts it."""
    outcome = record.get("outcome")
    if outcome == "failed":
        return "failed"
    if outcome != "evaluated":
        return "none"
    at_risk = record.get("at_risk")
    if isinstance(at_risk, bool):
        return "flagged" if at_risk else "ok"
    counts = record.get("counts") or {}
    flagged = int(counts.get("UNSUPPORTED", 0) or 0) + int(counts.get("CONTRADICTED", 0) or 0)
    if not counts:
        flagged = sum(
            str(c.get("verdict", "")).upper() in ("UNSUPPORTED", "CONTRADICTED")
            for c in record.get("claims") or []
            if isinstance(c, Mapping)
        )
    return "flagged" if flagged else "ok"


@dataclass(frozen=True)
class Shift:
    """Both judges' flagged shares on the same answers, and the shift a switch would cause (shadow - main)."""

    answers: int
    main_flagged: int
    shadow_flagged: int
    #: the paired table: both flagged, main only, shadow only, neither
    table: tuple[int, int, int, int]
    lower: float
    upper: float

    @property
    def main_share(self) -> float:
        return self.main_flagged / self.answers if self.answers else 0.0

    @property
    def shadow_share(self) -> float:
        return self.shadow_flagged / self.answers if self.answers else 0.0

    @property
    def shift(self) -> float:
        return self.shadow_share - self.main_share

    @property
    def agreement(self) -> float:
        a, _, _, d = self.table
        return (a + d) / self.answers if self.answers else 0.0

    @property
    def kappa(self) -> float | None:
        """Cohen's kappa of the two judges' calls (None when chance agreement is total)."""
        n = self.answers
        if not n:
            return None
        expected = self.main_share * self.shadow_share + (1 - self.main_share) * (1 - self.shadow_share)
        return None if expected >= 1 else (self.agreement - expected) / (1 - expected)

    @property
    def significant(self) -> bool:
        """The interval excludes 0: the switch moves the flagged share."""
        return self.lower > 0 or self.upper < 0


def shift_of(pairs: Iterable[tuple[str, str]]) -> Shift:
    """The :class:`Shift` of (main call, shadow call) pairs, answers both judged (flagged or ok) only."""
    table = Counter((m, s) for m, s in pairs if m in ("flagged", "ok") and s in ("flagged", "ok"))
    a, b = table[("flagged", "flagged")], table[("flagged", "ok")]
    c, d = table[("ok", "flagged")], table[("ok", "ok")]
    lower, upper = paired_difference_interval(a, c, b, d, Z95)  # shadow - main
    return Shift(a + b + c + d, a + b, a + c, (a, b, c, d), lower, upper)


@dataclass(frozen=True)
class ErrorRate:
    """One judge's error rate on the labels: a weighted share with a 95% interval and the labels behind it."""

    rate: float | None
    lower: float
    upper: float
    labels: int


@dataclass
class Comparison:
    """What ``claimwatch judge-compare`` reports."""

    main_judges: list[str]
    shadow_judges: list[str]
    paired: int
    unpaired_main: int
    unpaired_shadow: int
    #: pairs where either judge made no call (none / failed), by (main call, shadow call)
    no_call: dict[str, int]
    overall: Shift
    slices: dict[str, list[tuple[str, Shift]]]
    slices_left_out: int
    claims: dict[str, int]
    errors: dict[str, dict[str, ErrorRate]] = field(default_factory=dict)
    left_out: list[str] = field(default_factory=list)
    #: label lines given (--labels)
    labels: int = 0

    def to_json(self) -> dict[str, Any]:
        def shift(s: Shift) -> dict[str, Any]:
            return {
                **asdict(s),
                "main_share": s.main_share,
                "shadow_share": s.shadow_share,
                "shift": s.shift,
                "agreement": s.agreement,
                "kappa": s.kappa,
            }

        out = asdict(self)
        out["overall"] = shift(self.overall)
        out["slices"] = {k: [{"value": v, **shift(s)} for v, s in rows] for k, rows in self.slices.items()}
        return out


_SPACE = re.compile(r"\s+")


def _norm(text: str) -> str:
    return _SPACE.sub(" ", text).strip().strip(".").lower()


def claim_pairs(main: Mapping[str, Any], shadow: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(main verdict, shadow verdict) of claims paired by their text; a claim only one judge extracted pairs with
    ``none`` (the worker's ``claimwatch_shadow_claims_total`` pairs them the same way)."""

    def verdicts(r: Mapping[str, Any]) -> list[tuple[str, str]]:
        return [
            (_norm(str(c.get("text", ""))), str(c.get("verdict", "")).lower())
            for c in r.get("claims") or []
            if isinstance(c, Mapping)
        ]

    theirs: dict[str, list[str]] = defaultdict(list)
    for text, v in verdicts(shadow):
        theirs[text].append(v)
    pairs = []
    for text, v in verdicts(main):
        left = theirs.get(text)
        pairs.append((v, left.pop(0) if left else "none"))
    pairs += [("none", v) for rest in theirs.values() for v in rest]
    return pairs


def _by_key(records: Iterable[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    out: dict[str, Mapping[str, Any]] = {}
    for r in records:
        tid = r.get("trace_id")
        if isinstance(tid, str) and tid:
            call = r.get("call_id")
            out[record_key(tid, call if isinstance(call, str) else None)] = r  # the latest read wins
    return out


def compare(
    main: Iterable[Mapping[str, Any]],
    shadow: Iterable[Mapping[str, Any]],
    *,
    slice_labels: Sequence[str] = DEFAULT_SLICES,
    min_slice_answers: int = DEFAULT_MIN_SLICE_ANSWERS,
    labels: Sequence[Mapping[str, Any]] = (),
    seed: int = 0,
) -> Comparison:
    """Pair ``main`` and ``shadow`` result records by record key and compare the two judges (module docstring)."""
    m, s = _by_key(main), _by_key(shadow)
    keys = sorted(set(m) & set(s))
    if not keys:
        raise ConfigError(
            f"no answer judged by both judges: {len(m)} main and {len(s)} shadow results share no record key "
            "(is the shadow running, CLAIMWATCH_SHADOW__JUDGE set, and are both read over the same window?)"
        )
    calls = {k: (call_of(m[k]), call_of(s[k])) for k in keys}
    overall = shift_of(calls.values())
    no_call = Counter(f"{a}/{b}" for a, b in calls.values() if not ({a, b} <= {"flagged", "ok"}))
    slices: dict[str, list[tuple[str, Shift]]] = {}
    left = 0
    for label in slice_labels:
        groups: dict[str, list[tuple[str, str]]] = defaultdict(list)
        for k in keys:
            value = (m[k].get("slices") or {}).get(label)
            if isinstance(value, str) and value:
                groups[value].append(calls[k])
        rows = []
        for value, pairs in groups.items():
            sh = shift_of(pairs)
            if sh.answers >= min_slice_answers:
                rows.append((value, sh))
            else:
                left += 1
        if rows:
            slices[label] = sorted(rows, key=lambda r: (-abs(r[1].shift), r[0]))
    claims = Counter(f"{a}/{b}" for k in keys for a, b in claim_pairs(m[k], s[k]))
    comparison = Comparison(
        main_judges=sorted({record_judge(m[k]) for k in keys}),
        shadow_judges=sorted({record_judge(s[k]) for k in keys}),
        paired=len(keys),
        unpaired_main=len(m) - len(keys),
        unpaired_shadow=len(s) - len(keys),
        no_call=dict(sorted(no_call.items())),
        overall=overall,
        slices=slices,
        slices_left_out=left,
        claims=dict(sorted(claims.items())),
    )
    if labels:
        comparison.labels = len(labels)
        comparison.errors, comparison.left_out = error_rates(labels, m, s, seed=seed)
    return comparison


# -- on the user's labels -----------------------------------------------------------------------------------------


def _source(label: Mapping[str, Any]) -> Mapping[str, Any]:
    raw = label.get("source")
    return raw if isinstance(raw, Mapping) else {}


def _label_key(label: Mapping[str, Any]) -> str | None:
    for value in (_source(label).get("trace_id"), label.get("id")):
        if isinstance(value, str) and value:
            return value
    return None


def _claim_call(result: Mapping[str, Any], text: str, claim_id: Any = None) -> str | None:
    """flagged / ok for the claim of ``result`` with ``claim_id`` (the main judge's own claim) or, else, the same
    text; None when the judge has no such claim or no verdict on it."""
    claims = [c for c in result.get("claims") or [] if isinstance(c, Mapping)]
    found = next((c for c in claims if claim_id is not None and c.get("id") == claim_id), None)
    if found is None:
        found = next((c for c in claims if _norm(str(c.get("text", ""))) == _norm(text)), None)
    verdict = str((found or {}).get("verdict", "")).upper()
    return "flagged" if verdict in ("UNSUPPORTED", "CONTRADICTED") else "ok" if verdict == "SUPPORTED" else None


#: the unit of a label line, by its label
_UNIT = {"faithful": "answer", "hallucinated": "answer", "SUPPORTED": "claim", "UNSUPPORTED": "claim"}
_UNIT["CONTRADICTED"] = "claim"


def error_rates(
    labels: Sequence[Mapping[str, Any]],
    main: Mapping[str, Mapping[str, Any]],
    shadow: Mapping[str, Mapping[str, Any]],
    *,
    seed: int = 0,
) -> tuple[dict[str, dict[str, ErrorRate]], list[str]]:
    """Each judge's false-alarm and miss rates on the labelled items both judged, weighted by the labels' strata,
    with 95% stratified-bootstrap intervals; and what was left out. Answer labels (faithful / hallucinated) give
    ``false_alarm`` and ``miss``; claim labels (SUPPORTED / UNSUPPORTED / CONTRADICTED, paired with each judge's claim
    of the same text in that answer; the main judge's by its claim id) give ``claim_false_alarm`` and ``claim_miss``."""
    by_trace: dict[str, tuple[Mapping[str, Any], Mapping[str, Any]]] = {}
    for key in set(main) & set(shadow):
        tid = str(main[key].get("trace_id"))
        by_trace.setdefault(tid, (main[key], shadow[key]))
    rows: dict[str, list[tuple[str, float, bool, str, str]]] = {"answer": [], "claim": []}
    per_stratum = Counter(str(lab.get("stratum", "all")) for lab in labels)
    missing = 0
    for lab in labels:
        unit, trace = _UNIT.get(str(lab.get("label"))), _label_key(lab)
        pair = by_trace.get(trace) if trace else None
        if unit is None or pair is None:
            missing += 1
            continue
        text = str(lab.get("claim", ""))
        mc, sc = (
            (call_of(pair[0]), call_of(pair[1]))
            if unit == "answer"
            else (_claim_call(pair[0], text, _source(lab).get("claim_id")), _claim_call(pair[1], text))
        )
        if mc not in ("flagged", "ok") or sc not in ("flagged", "ok") or mc is None or sc is None:
            missing += 1
            continue
        stratum = str(lab.get("stratum", "all"))
        population = lab.get("stratum_population")
        weight = float(population) / per_stratum[stratum] if isinstance(population, (int, float)) else 1.0
        truly = lab["label"] in ("hallucinated", "UNSUPPORTED", "CONTRADICTED")
        rows[unit].append((stratum, weight, truly, mc, sc))
    left = [f"{missing} labels not judged by both judges left out"] if missing else []
    out: dict[str, dict[str, ErrorRate]] = {"main": {}, "shadow": {}}
    rng = random.Random(seed)
    for unit, prefix in (("answer", ""), ("claim", "claim_")):
        unit_rows = rows[unit]
        if not unit_rows:
            continue
        strata: dict[str, list[tuple[str, float, bool, str, str]]] = defaultdict(list)
        for r in unit_rows:
            strata[r[0]].append(r)
        for side, idx in (("main", 3), ("shadow", 4)):
            out[side][f"{prefix}false_alarm"] = _rate(unit_rows, strata, idx, truly=False, wrong="flagged", rng=rng)
            out[side][f"{prefix}miss"] = _rate(unit_rows, strata, idx, truly=True, wrong="ok", rng=rng)
    return (out if out["main"] else {}), left


def _weighted(rows: Sequence[tuple[str, float, bool, str, str]], idx: int, truly: bool, wrong: str) -> float | None:
    den = sum(w for _, w, h, *_ in rows if h is truly)
    num = sum(r[1] for r in rows if r[2] is truly and r[idx] == wrong)
    return num / den if den else None


def _rate(
    rows: Sequence[tuple[str, float, bool, str, str]],
    strata: Mapping[str, Sequence[tuple[str, float, bool, str, str]]],
    idx: int,
    *,
    truly: bool,
    wrong: str,
    rng: random.Random,
) -> ErrorRate:
    n = sum(1 for r in rows if r[2] is truly)
    point = _weighted(rows, idx, truly, wrong)
    if point is None:
        return ErrorRate(None, 0.0, 1.0, 0)
    if len(strata) == 1 and all(r[1] == rows[0][1] for r in rows):  # one stratum, equal weights: Wilson
        lo, hi = wilson_interval(point * n, n, Z95)
        return ErrorRate(point, lo, hi, n)
    draws = []
    groups = list(strata.values())
    for _ in range(BOOTSTRAP_DRAWS):
        sample = [r for g in groups for r in rng.choices(g, k=len(g))]
        x = _weighted(sample, idx, truly, wrong)
        if x is not None:
            draws.append(x)
    draws.sort()
    if not draws:
        return ErrorRate(point, 0.0, 1.0, n)
    lo = draws[int(0.025 * (len(draws) - 1))]
    hi = draws[int(math.ceil(0.975 * (len(draws) - 1)))]
    return ErrorRate(point, lo, hi, n)


# -- the report -----------------------------------------------------------------------------------------------------


def _pct(x: float) -> str:
    return f"{x * 100:.1f}%"


def _pts(x: float) -> str:
    return f"{x * 100:+.1f} pts"


def _shift_line(s: Shift) -> str:
    kappa = "n/a" if s.kappa is None else f"{s.kappa:.2f}"
    moved = "moves it" if s.significant else "no significant move"
    return (
        f"{s.answers} answers: flagged {_pct(s.main_share)} (main) -> {_pct(s.shadow_share)} (shadow), shift "
        f"{_pts(s.shift)} [95%: {_pts(s.lower)}, {_pts(s.upper)}] ({moved}); same call on {_pct(s.agreement)}, "
        f"kappa {kappa}"
    )


def render(c: Comparison) -> str:
    """The text report."""
    lines = [
        "claimwatch judge-compare",
        f"  main judge:   {', '.join(c.main_judges)}",
        f"  shadow judge: {', '.join(c.shadow_judges)}",
        f"  paired answers: {c.paired} (main only: {c.unpaired_main}, shadow only: {c.unpaired_shadow})",
        "",
        "answers (flagged as the gate counts it)",
        f"  all: {_shift_line(c.overall)}",
    ]
    a, b, cc, d = c.overall.table
    lines.append(f"  both flagged {a}, main only {b}, shadow only {cc}, neither {d}")
    if c.no_call:
        lines.append(
            "  without a call from a judge (main/shadow): " + ", ".join(f"{k} {n}" for k, n in c.no_call.items())
        )
    for label, rows in c.slices.items():
        lines.append(f"  by {label}:")
        lines += [f"    {value}: {_shift_line(s)}" for value, s in rows]
    if c.slices_left_out:
        lines.append(f"  ({c.slices_left_out} slice values with too few paired answers left out of the table)")
    paired = {k: n for k, n in c.claims.items() if "none" not in k.split("/")}
    total = sum(paired.values())
    same = sum(n for k, n in paired.items() if k.split("/")[0] == k.split("/")[1])
    lines += ["", "claims (paired by their text)"]
    if total:
        lines.append(f"  {total} claims both judges extracted: same verdict on {_pct(same / total)}")
        lines += [f"    {k}: {n}" for k, n in sorted(paired.items(), key=lambda kv: -kv[1])]
    only_main = sum(n for k, n in c.claims.items() if k.endswith("/none"))
    only_shadow = sum(n for k, n in c.claims.items() if k.startswith("none/"))
    lines.append(f"  extracted by the main judge only: {only_main}; by the shadow only: {only_shadow}")
    if c.errors:
        lines += ["", "on your labels (weighted by the labels' strata; 95% intervals)"]
        for prefix, good, bad in (
            ("", "faithful answers", "hallucinated answers"),
            ("claim_", "supported claims", "unsupported claims"),
        ):
            if f"{prefix}false_alarm" not in c.errors["main"]:
                continue
            for side in ("main", "shadow"):
                e = c.errors[side]
                lines.append(
                    f"  {side:<6} false alarms {_rate_text(e[prefix + 'false_alarm'])} of {good}; "
                    f"misses {_rate_text(e[prefix + 'miss'])} of {bad}"
                )
        lines += [f"  {x}" for x in c.left_out]
    elif c.labels:
        lines += ["", f"on your labels: none of the {c.labels} labels was judged by both judges"]
        lines += [f"  {x}" for x in c.left_out]
    else:
        lines += ["", "on your labels: none given (--labels): agreement and shift do not say which judge is right"]
    return "\n".join(lines)


def _rate_text(e: ErrorRate) -> str:
    if e.rate is None:
        return "n/a (no such labels)"
    return f"{_pct(e.rate)} [{_pct(e.lower)}, {_pct(e.upper)}] (n={e.labels})"


# -- the command ----------------------------------------------------------------------------------------------------


def _read(path: str | None, bootstrap: str | None, topic: str | None, since: str | None, skips: ResultSkips) -> list:
    from claimwatch.claims_query import open_results, parse_since, read_results, read_results_file

    if path:
        return list(read_results_file(path, skips))
    consumer, name = open_results(bootstrap, topic)
    try:
        since_s = parse_since(since) if since else None
        return [
            v
            for v, _ in read_results(
                consumer, name, since_s=since_s, from_offset=None, max_records=500_000, skips=skips
            )
        ]
    finally:
        consumer.close()


def cmd_judge_compare(args: argparse.Namespace) -> int:
    skips = ResultSkips()
    main = _read(args.main, args.bootstrap, args.main_topic, args.since, skips)
    shadow = _read(args.shadow, args.bootstrap, args.shadow_topic or "claimwatch.shadow-results", args.since, skips)
    labels = [obj for _, obj in read_jsonl(Path(args.labels))] if args.labels else []
    c = compare(
        main,
        shadow,
        slice_labels=[x.strip() for x in args.slices.split(",") if x.strip()],
        min_slice_answers=args.min_slice_answers,
        labels=labels,
    )
    c.left_out += skips.lines()
    if args.json:
        Path(args.json).write_text(json.dumps(c.to_json(), indent=2), encoding="utf-8")
    print(render(c))
    return 0


def add_cli(sub: Any) -> None:
    p = sub.add_parser(
        "judge-compare",
        help="compare the main judge with the shadow judge on the same answers (agreement, shift, error rates)",
    )
    p.add_argument("--main", metavar="FILE", help="the main judge's results (JSONL) instead of the results topic")
    p.add_argument("--shadow", metavar="FILE", help="the shadow judge's results (JSONL) instead of its topic")
    p.add_argument("--bootstrap", help="Kafka bootstrap servers (default: CLAIMWATCH_KAFKA__BOOTSTRAP_SERVERS)")
    p.add_argument("--main-topic", help="the results topic (default: CLAIMWATCH_RESULTS_TOPIC)")
    p.add_argument("--shadow-topic", help="the shadow's results topic (default: claimwatch.shadow-results)")
    p.add_argument("--since", default="24h", help="results newer than this, from topics (e.g. 30m, 2h, 1d)")
    p.add_argument("--labels", metavar="FILE", help="answers you labelled (claimwatch label --unit answer)")
    p.add_argument("--slices", default=",".join(DEFAULT_SLICES), help="slice labels to cut the shift by")
    p.add_argument(
        "--min-slice-answers",
        type=int,
        default=DEFAULT_MIN_SLICE_ANSWERS,
        help="paired answers a slice value needs for its row",
    )
    p.add_argument("--json", metavar="FILE", help="also write the comparison as JSON")
    p.set_defaults(func=cmd_judge_compare)
