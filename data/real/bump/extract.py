"""Extract the compact BUMP files under data/real/bump/ from the upstream repository (maintainers only).

    python3 data/real/bump/extract.py DIR

DIR is a git directory of dataminr-ai/BUMP (a bare clone or a ``.git`` folder); the two task files are
read with ``git show HEAD:PATH``, so the commit recorded in SOURCE.md is the one ``HEAD`` points to. Same
conventions as ``data/real/extract.py`` (whose helpers it uses): only the fields the loader
(``claimwatch.realdata.load_bump``) reads, upstream labels kept exactly as written (the loader maps
them), deterministic gzip JSONL with sorted keys, and the sha256 of every upstream file read and of every
(decompressed) file written printed for SOURCE.md and ``claimwatch.realdata.SHA256``.

Output: ``articles.jsonl.gz`` (each CNN/DM article once: ``article_id``, ``article``) and ``edits.jsonl.gz``
(one row per edited summary: ``id``, ``task``, ``upstream_id``, ``article_id``, ``reference_summary``,
``edited_summary``, ``error_type``, ``corrected_error_type`` (task 1 only, else null)). The metric scores
upstream stores per row are not kept. Standard library only; CI never runs it.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("real_extract", HERE.parent / "extract.py")
assert _spec is not None and _spec.loader is not None
real_extract = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(real_extract)

FILES = {1: "data/task1_dataset.json", 2: "data/task2_dataset.json"}


def bump(repo: str) -> None:
    upstream: dict[str, bytes] = {}
    articles: dict[int, dict[str, Any]] = {}
    edits: list[dict[str, Any]] = []
    for task, path in FILES.items():
        raw = real_extract.git_show(repo, path)
        upstream[path] = raw
        for row in json.loads(raw):
            aid = row["article_id"]
            prev = articles.setdefault(aid, {"article_id": aid, "article": row["article"]})
            if prev["article"] != row["article"]:
                raise SystemExit(f"article_id {aid}: two different article texts upstream")
            edits.append(
                {
                    "id": f"bump-t{task}-{row['id']}",
                    "task": task,
                    "upstream_id": row["id"],
                    "article_id": aid,
                    "reference_summary": row["reference_summary"],
                    "edited_summary": row["edited_summary"],
                    "error_type": row["error_type"],
                    "corrected_error_type": row.get("corrected_error_type"),
                }
            )
    written = {
        "bump/articles.jsonl.gz": real_extract.write_jsonl_gz(
            HERE / "articles.jsonl.gz", sorted(articles.values(), key=lambda a: a["article_id"])
        ),
        "bump/edits.jsonl.gz": real_extract.write_jsonl_gz(HERE / "edits.jsonl.gz", edits),
    }
    real_extract.report("bump", repo, upstream, written)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("repo", help="git directory of dataminr-ai/BUMP")
    bump(ap.parse_args(argv).repo)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
