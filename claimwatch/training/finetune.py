"""Fine-tune a verifier on premise/claim pairs and score it on dev claims (CPU or GPU, same code).

    python3 -m claimwatch.training.finetune --pairs train.jsonl.gz --dev dev.jsonl.gz \\
        --init INIT_DIR --out OUT [--epochs 3 --lr 5e-5 --batch-size 32 --max-length 256 --seed 13]

``INIT_DIR``: a verifier directory (int8 as shipped, or ``save_pretrained`` fp32), e.g. the base made by
``python3 -m claimwatch.training.base`` or the v1 verifier. Rows come from ``claimwatch.training.realpairs``
(``premises[0]`` is the training premise). Writes ``OUT/fp32`` and ``OUT/dev.json``: per dev set, the
claim-level AUC of P(not grounded) = 1 - max over the claim's premises of P(entailment), accuracy at 0.5
and the mean of the per-set AUCs (what ``--sweep`` chooses by). Needs torch and transformers only.
"""

from __future__ import annotations

import argparse
import gzip
import inspect
import json
import random
import sys
import time
from pathlib import Path
from typing import Any, Sequence

#: how a pair longer than ``max_length`` is cut: the premise only, as the verifier judge serves it (it judges a
#: claim too long to leave room for a premise ERROR instead of cutting it)
TRUNCATION = "only_first"
LABEL_IDS = {"SUPPORTED": 0, "UNSUPPORTED": 1, "CONTRADICTED": 2}
ID2LABEL = {0: "entailment", 1: "neutral", 2: "contradiction"}


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def read_rows(path: str | Path) -> list[dict[str, Any]]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def load_model(init: Path, device: str) -> tuple[Any, Any]:
    """(tokenizer, model) from a verifier directory: int8 per-row weights or a fp32 ``save_pretrained``."""
    from transformers import AutoConfig, AutoModelForSequenceClassification, AutoTokenizer

    from evaluator_worker.judges.verifier import WEIGHTS_FILE, load_int8_state_dict

    tok = AutoTokenizer.from_pretrained(str(init), local_files_only=True)
    if (init / WEIGHTS_FILE).is_file():
        model = AutoModelForSequenceClassification.from_config(
            AutoConfig.from_pretrained(str(init), local_files_only=True)
        )
        model.load_state_dict(load_int8_state_dict(init / WEIGHTS_FILE), strict=False)
    else:  # a fp32 verifier, or an encoder base (a sentence-transformers directory): a seeded 3-label head
        model = AutoModelForSequenceClassification.from_pretrained(
            str(init), num_labels=len(ID2LABEL), local_files_only=True
        )
    model.config.id2label, model.config.label2id = ID2LABEL, {v: k for k, v in ID2LABEL.items()}
    return tok, model.to(device)


def dev_scores(
    tok: Any, model: Any, rows: list[dict[str, Any]], max_length: int, device: str, truncation: str = TRUNCATION
) -> list[float]:
    """P(not grounded) per dev claim: 1 - the best entailment probability over its premises."""
    import torch

    pairs = [(i, p, r["claim"]) for i, r in enumerate(rows) for p in r["premises"]]
    best = [0.0] * len(rows)
    model.eval()
    with torch.inference_mode():
        for s in range(0, len(pairs), 128):
            part = pairs[s : s + 128]
            enc = tok(
                [p for _, p, _ in part],
                [c for _, _, c in part],
                padding=True,
                truncation=truncation,
                max_length=max_length,
                return_tensors="pt",
            ).to(device)
            probs = model(**enc).logits.float().softmax(-1)[:, 0].tolist()
            for (i, _, _), pe in zip(part, probs):
                best[i] = max(best[i], pe)
    return [1.0 - b for b in best]


def evaluate(
    tok: Any, model: Any, rows: list[dict[str, Any]], max_length: int, device: str, truncation: str = TRUNCATION
) -> dict[str, Any]:
    """Per dev set: claim-level AUC of P(not grounded), accuracy at 0.5; and the mean AUC."""
    from claimwatch.calibration import roc_auc

    scores = dev_scores(tok, model, rows, max_length, device, truncation)
    out: dict[str, Any] = {}
    for name in sorted({r["set"] for r in rows}):
        idx = [i for i, r in enumerate(rows) if r["set"] == name]
        pos = [rows[i]["label"] != "SUPPORTED" for i in idx]
        s = [scores[i] for i in idx]
        acc = sum((x >= 0.5) == p for x, p in zip(s, pos)) / len(idx)
        out[name] = {"n": len(idx), "auc": round(roc_auc(s, pos) or 0.5, 4), "acc@0.5": round(acc, 4)}
    out["mean_auc"] = round(sum(v["auc"] for v in out.values()) / len(out), 4)
    return out


def train_step(
    model: Any,
    opt: Any,
    sched: Any,
    loss_fn: Any,
    ids: Sequence[Sequence[int]],
    types: Sequence[Sequence[int]] | None,
    labels: Sequence[int],
    batch: Sequence[int],
    device: str = "cpu",
) -> Any:
    """One optimiser step on the rows ``batch`` (padded to their longest); returns the loss tensor.

    ``types``: the token type ids, or None for a base without segment embeddings (MPNet).
    """
    import torch

    width = max(len(ids[k]) for k in batch)
    x = torch.zeros((len(batch), width), dtype=torch.long)
    tt, mask = torch.zeros_like(x), torch.zeros_like(x)
    for r, k in enumerate(batch):
        n = len(ids[k])
        x[r, :n], mask[r, :n] = torch.tensor(ids[k]), 1
        if types is not None:
            tt[r, :n] = torch.tensor(types[k])
    inputs = {"input_ids": x.to(device), "attention_mask": mask.to(device)}
    if types is not None:
        inputs["token_type_ids"] = tt.to(device)
    out = model(**inputs)
    loss = loss_fn(out.logits, torch.tensor(list(labels), device=device))
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    sched.step()
    opt.zero_grad()
    return loss


def train(args: argparse.Namespace) -> dict[str, Any]:
    import torch

    device = args.device if args.device != "auto" else ("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(args.seed)
    rows = read_rows(args.pairs)
    dev = read_rows(args.dev) if args.dev else []
    tok, model = load_model(Path(args.init), device)
    result = fit(tok, model, rows, dev, args, device)
    out_dir = Path(args.out)
    model.save_pretrained(str(out_dir / "fp32"))
    tok.save_pretrained(str(out_dir / "fp32"))
    (out_dir / "dev.json").write_text(json.dumps(result, indent=2) + "\n")
    return result


def fit(
    tok: Any,
    model: Any,
    rows: list[dict[str, Any]],
    dev: list[dict[str, Any]],
    args: Any,
    device: str,
    truncation: str = TRUNCATION,
) -> dict:
    """Fine-tune ``model`` on ``rows`` (``args``: epochs, lr, batch_size, max_length, seed, balance); dev per epoch.

    ``truncation``: how pairs past ``max_length`` are cut, in training and dev alike (``longest_first`` where a
    short length leaves some claims no room; the shipped verifier was trained with the default).
    """
    import torch
    from transformers import get_linear_schedule_with_warmup

    enc = tok(
        [r["premises"][0] for r in rows],
        [r["claim"] for r in rows],
        truncation=truncation,
        max_length=args.max_length,
    )
    ids, types = enc["input_ids"], enc.get("token_type_ids")
    if "token_type_ids" not in inspect.signature(model.forward).parameters:
        types = None  # a base without segment embeddings (MPNet), whatever its tokenizer returns
    labels = [LABEL_IDS[r["label"]] for r in rows]
    counts = [max(1, labels.count(k)) for k in range(3)]
    weight = torch.tensor([len(labels) / (3 * c) for c in counts], device=device) if args.balance else None
    rng = random.Random(args.seed)
    steps = ((len(rows) + args.batch_size - 1) // args.batch_size) * args.epochs
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    sched = get_linear_schedule_with_warmup(opt, int(0.06 * steps), steps)
    loss_fn = torch.nn.CrossEntropyLoss(weight=weight, label_smoothing=0.05)
    t0, step, history = time.time(), 0, []
    for epoch in range(args.epochs):
        model.train()
        order = list(range(len(rows)))
        rng.shuffle(order)
        for s in range(0, len(order), args.batch_size):
            b = order[s : s + args.batch_size]
            train_step(model, opt, sched, loss_fn, ids, types, [labels[k] for k in b], b, device)
            step += 1
        metrics = evaluate(tok, model, dev, args.max_length, device, truncation) if dev else {}
        history.append({"epoch": epoch + 1, "seconds": round(time.time() - t0, 1), **metrics})
        log(f"epoch {epoch + 1}/{args.epochs} ({step} steps, {time.time() - t0:.0f}s): {json.dumps(metrics)}")
    return {
        "device": device,
        "train_seconds": round(time.time() - t0, 1),
        "pairs": len(rows),
        "label_counts": {k: labels.count(v) for k, v in LABEL_IDS.items()},
        "history": history,
        "dev": history[-1] if history else {},
        "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
    }


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python3 -m claimwatch.training.finetune", description=__doc__.split("\n\n")[0])
    p.add_argument("--pairs", type=Path, required=True)
    p.add_argument("--dev", type=Path, default=None)
    p.add_argument("--init", type=Path, required=True)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--lr", type=float, default=5e-5)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--max-length", type=int, default=256)
    p.add_argument("--seed", type=int, default=13)
    p.add_argument("--balance", action="store_true", help="weight the loss by inverse label frequency")
    p.add_argument("--threads", type=int, default=2, help="torch threads on CPU")
    p.add_argument("--device", default="auto", help="auto (cuda when available), cpu or cuda")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    args.out.mkdir(parents=True, exist_ok=True)
    train(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
