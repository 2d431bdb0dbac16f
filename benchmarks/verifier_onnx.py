"""The shipped verifier in torch vs ONNX Runtime (fp32, and int8 dynamic quantisation): speed and agreement.

    pip install onnxruntime onnx      # not in the project's lock: this measures whether they should be
    python -m benchmarks.verifier_onnx [--per-set 80] [--batch 16]

Real dev claims (Factcheck-GPT, ExpertQA, WiCE) against their contexts, tokenised once at the model's served
length; the same batches run through the torch model, an ONNX export of it (``torch.onnx.export``, dynamic
batch and sequence axes) and that export quantised to int8 (``onnxruntime.quantization.quantize_dynamic``),
two threads each. Prints the seconds per run, the speed-up over torch, the largest probability difference
and the share of pairs whose argmax label is unchanged. The times are from one run on one machine: compare
the ratios.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from claimwatch import realdata
from evaluator_worker.judges.verifier import CALIBRATION_FILE, DEFAULT_MODEL_DIR, WEIGHTS_FILE, load_int8_state_dict

SETS = ("factcheck-gpt", "expertqa", "wice")


def _softmax(x: Any) -> Any:
    import numpy as np

    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-set", type=int, default=80, help="dev claims per set (fixed sample)")
    ap.add_argument("--batch", type=int, default=16)
    args = ap.parse_args(argv)
    try:
        import onnxruntime as ort
        from onnxruntime.quantization import QuantType, quantize_dynamic
    except ImportError as exc:
        raise SystemExit(
            f"benchmarks.verifier_onnx needs onnxruntime and onnx ({exc}): pip install onnxruntime onnx"
        ) from None
    import numpy as np
    import torch
    from transformers import AutoConfig, AutoModelForSequenceClassification, AutoTokenizer

    torch.set_num_threads(2)
    src = Path(DEFAULT_MODEL_DIR)
    tok = AutoTokenizer.from_pretrained(str(src), local_files_only=True)
    model = AutoModelForSequenceClassification.from_config(AutoConfig.from_pretrained(str(src), local_files_only=True))
    model.load_state_dict(load_int8_state_dict(src / WEIGHTS_FILE), strict=False)
    model.eval()
    max_length = int(json.loads((src / CALIBRATION_FILE).read_text()).get("max_length", 192))
    pairs = [
        (" ".join(c.context), c.claim)
        for name in SETS
        for c in realdata.load_real(name, "dev", limit=args.per_set).claims
    ]
    encs = [
        tok(
            [p for p, _ in pairs[i : i + args.batch]],
            [h for _, h in pairs[i : i + args.batch]],
            truncation="only_first",
            max_length=max_length,
            padding=True,
            return_tensors="pt",
        )
        for i in range(0, len(pairs), args.batch)
    ]
    names = [k for k in ("input_ids", "attention_mask", "token_type_ids") if k in encs[0]]

    started = time.perf_counter()
    with torch.inference_mode():
        ref = np.concatenate([torch.softmax(model(**e).logits.float(), -1).numpy() for e in encs])
    torch_s = time.perf_counter() - started

    with tempfile.TemporaryDirectory() as tmp:
        fp32, int8 = Path(tmp) / "verifier.onnx", Path(tmp) / "verifier.int8.onnx"
        torch.onnx.export(
            model,
            tuple(encs[0][k] for k in names),
            str(fp32),
            input_names=names,
            output_names=["logits"],
            dynamic_axes={**{k: {0: "batch", 1: "tokens"} for k in names}, "logits": {0: "batch"}},
            opset_version=17,
            dynamo=False,
        )
        quantize_dynamic(str(fp32), str(int8), weight_type=QuantType.QInt8)
        options = ort.SessionOptions()
        options.intra_op_num_threads = 2
        rows = [("torch fp32", torch_s, ref)]
        for label, path in (("onnxruntime fp32", fp32), ("onnxruntime int8", int8)):
            session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
            started = time.perf_counter()
            out = np.concatenate([_softmax(session.run(None, {k: e[k].numpy() for k in names})[0]) for e in encs])
            rows.append((label, time.perf_counter() - started, out))
    print(f"{len(pairs)} real dev claim/context pairs, {max_length} tokens, batches of {args.batch}, 2 threads\n")
    print("| runtime | seconds | speed-up over torch | max prob. difference | argmax unchanged |")
    print("|---|---|---|---|---|")
    for label, seconds, out in rows:
        print(
            f"| {label} | {seconds:.2f} | {torch_s / seconds:.2f}x | {np.abs(out - ref).max():.1e} | "
            f"{(out.argmax(1) == ref.argmax(1)).mean():.3f} |"
        )


if __name__ == "__main__":
    main()
