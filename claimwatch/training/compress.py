"""Int8 per-row storage of a fine-tuned verifier (dequantised to float32 at load; no quantised kernels).

Every floating-point matrix (2-D tensor: embeddings, attention and feed-forward weights, classifier)
is stored as int8 with one float32 scale per row (``scale = max|row| / 127``); vectors (biases,
LayerNorm) stay float32. MiniLM-L6: ~90 MB fp32 -> ~23 MB. The reader is
``evaluator_worker.judges.verifier.load_int8_state_dict``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from evaluator_worker.judges.verifier import SCALE_SUFFIX, WEIGHTS_FILE

__all__ = ["quantize_state_dict", "write_compressed", "TOKENIZER_FILES"]

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt")


def quantize_state_dict(state: dict[str, Any]) -> dict[str, Any]:
    """``name -> int8 rows`` plus ``name + SCALE_SUFFIX -> float32 scales`` for matrices; vectors as float32."""
    import torch

    out: dict[str, Any] = {}
    for name, tensor in state.items():
        t = tensor.detach().to(torch.float32).cpu().contiguous()
        if t.dim() == 2:
            scale = t.abs().amax(dim=1).clamp(min=1e-12) / 127.0
            out[name] = torch.round(t / scale[:, None]).clamp(-127, 127).to(torch.int8).contiguous()
            out[name + SCALE_SUFFIX] = scale.contiguous()
        else:
            out[name] = t
    return out


def write_compressed(model: Any, tokenizer_dir: Path, out: Path, extra_config: dict[str, Any] | None = None) -> Path:
    """Write ``out/`` = int8 weights + config.json (+ ``extra_config`` keys) + tokenizer files; returns ``out``."""
    from safetensors.torch import save_file

    out.mkdir(parents=True, exist_ok=True)
    state = {k: v for k, v in model.state_dict().items() if not k.endswith("position_ids")}
    save_file(quantize_state_dict(state), str(out / WEIGHTS_FILE), metadata={"format": "int8-per-row"})
    config = model.config.to_dict()
    config.update(extra_config or {})
    (out / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    for name in TOKENIZER_FILES:
        src = Path(tokenizer_dir) / name
        if src.is_file():
            shutil.copyfile(src, out / name)
    return out
