"""Download FaithBench.csv (vectara/FaithBench, CC BY-NC-SA 4.0) next to this script and check its sha256.

    python3 data/real/faithbench/fetch.py

FaithBench is not committed: its licence (non-commercial, share-alike) does not fit this Apache-2.0
repository. Use it for evaluation only. Standard library only; needs network to raw.githubusercontent.com.
"""

from __future__ import annotations

import hashlib
import sys
import urllib.request
from pathlib import Path

COMMIT = "cf89797d82812c23b5d5e5c121f1d9b8983bbbce"
URL = f"https://raw.githubusercontent.com/vectara/FaithBench/{COMMIT}/FaithBench.csv"
SHA256 = "b64595319c5a0673c7af00a12c9340a79aeb3437c021b097745413da42d80a09"
TARGET = Path(__file__).resolve().parent / "FaithBench.csv"


def main() -> int:
    with urllib.request.urlopen(URL, timeout=60) as resp:
        data = resp.read()
    digest = hashlib.sha256(data).hexdigest()
    if digest != SHA256:
        print(f"sha256 mismatch: got {digest}, expected {SHA256}; not written", file=sys.stderr)
        return 1
    TARGET.write_bytes(data)
    print(f"wrote {TARGET} ({len(data)} bytes, sha256 {digest}); licence CC BY-NC-SA 4.0, evaluation only")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
