"""Extract the compact JSONL files under data/real/ from the upstream repositories (maintainers only).

    python3 data/real/extract.py --factcheck-gpt DIR --summedits DIR --expertqa DIR --wice DIR

Each DIR is a git directory of the upstream repository (a bare clone or a ``.git`` folder); files are
read with ``git show HEAD:PATH``, so the commit recorded in each SOURCE.md is the one ``HEAD`` points
to. Only the fields the loaders in ``claimwatch/realdata.py`` use are kept; labels are kept exactly
as upstream wrote them (the loaders map them). Output is gzip (level 9, mtime 0, no file name), one
JSON object per line, keys sorted, so a re-run on the same commit gives the same bytes. Prints the
sha256 of every upstream file read and of every (decompressed) file written: they go in SOURCE.md
and in ``claimwatch.realdata.SHA256``.

Standard library only; CI never runs it (the extracted files are committed).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import json
import subprocess
from pathlib import Path
from typing import Any, Iterable, Iterator

HERE = Path(__file__).resolve().parent


def git_show(repo: str, path: str) -> bytes:
    return subprocess.run(["git", "-C", repo, "show", f"HEAD:{path}"], check=True, capture_output=True).stdout


def git_head(repo: str) -> str:
    return subprocess.run(
        ["git", "-C", repo, "rev-parse", "HEAD"], check=True, capture_output=True, text=True
    ).stdout.strip()


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def write_jsonl_gz(path: Path, rows: Iterable[dict[str, Any]]) -> tuple[int, str]:
    """Write rows as deterministic gzip JSONL; return (rows, sha256 of the decompressed bytes)."""
    text = "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in rows).encode("utf-8")
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, compresslevel=9, mtime=0) as gz:
        gz.write(text)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(buf.getvalue())
    return text.count(b"\n"), sha(text)


def report(name: str, repo: str, upstream: dict[str, bytes], written: dict[str, tuple[int, str]]) -> None:
    print(f"== {name}: commit {git_head(repo)}")
    for p, data in upstream.items():
        print(f"  upstream {p}: {len(data)} bytes, sha256 {sha(data)}")
    for p, (n, digest) in written.items():
        print(f"  wrote {p}: {n} rows, sha256 (decompressed) {digest}")


def factcheck_gpt(repo: str) -> None:
    """One row per claim of the 94 ChatGPT responses: the claim, its 5 retrieved passages and their stances."""
    path = "factcheck-GPT-benchmark.jsonl"
    raw = git_show(repo, path)
    rows = []
    for r_i, line in enumerate(raw.decode("utf-8").splitlines()):
        if not line.strip():
            continue
        resp = json.loads(line)
        for s_key, sent in resp["sentences"].items():
            for c_i, claim in enumerate(sent["claims"]):
                rows.append(
                    {
                        "id": f"fcgpt-r{r_i}-{s_key}-c{c_i}",
                        "response": r_i,
                        "prompt": resp["prompt"],
                        "claim": claim.strip(),
                        "evidence": [str(e) for e in sent["auto_evidence"][c_i]],
                        "stances": [str(s) for s in sent["stance_claim_autoEvid"][c_i]],
                    }
                )
    written = {"factcheck-gpt/claims.jsonl.gz": write_jsonl_gz(HERE / "factcheck-gpt" / "claims.jsonl.gz", rows)}
    report("factcheck-gpt", repo, {path: raw}, written)


def summedits(repo: str) -> None:
    """Documents once (docs.jsonl.gz), summaries pointing at them (summaries.jsonl.gz)."""
    listing = subprocess.run(
        ["git", "-C", repo, "ls-tree", "--name-only", "HEAD", "data/summedits/"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    upstream: dict[str, bytes] = {}
    docs: dict[str, dict[str, Any]] = {}
    summaries = []
    for path in sorted(listing):
        try:
            raw = git_show(repo, path)
        except subprocess.CalledProcessError:
            print(f"  skipped {path}: not in the snapshot")
            continue
        upstream[path] = raw
        domain = Path(path).stem.removeprefix("summedits_")
        for row in json.loads(raw):
            doc_id = f"{domain}-{sha(row['doc'].encode('utf-8'))[:12]}"
            docs.setdefault(doc_id, {"doc_id": doc_id, "domain": domain, "doc": row["doc"]})
            summaries.append(
                {
                    "id": row["id"],
                    "doc_id": doc_id,
                    "domain": domain,
                    "summary": row["summary"],
                    "label": row["label"],
                    "edit_types": list(row.get("edit_types") or []),
                }
            )
    written = {
        "summedits/docs.jsonl.gz": write_jsonl_gz(HERE / "summedits" / "docs.jsonl.gz", docs.values()),
        "summedits/summaries.jsonl.gz": write_jsonl_gz(HERE / "summedits" / "summaries.jsonl.gz", summaries),
    }
    report("summedits", repo, upstream, written)


def _passage(evidence: str) -> str:
    """ExpertQA evidence is ``[n] URL\\n\\npassage``; keep the passage (empty when it is only a URL)."""
    head, sep, rest = evidence.partition("\n")
    return rest.strip() if sep and head.lstrip().startswith("[") else ""


def jsonl_rows(repo: str, path: str, upstream: dict[str, bytes]) -> Iterator[dict[str, Any]]:
    """The JSON rows of one upstream JSONL file at the snapshot (kept in ``upstream`` for the provenance report)."""
    raw = git_show(repo, path)
    upstream[path] = raw
    for line in raw.decode("utf-8").splitlines():
        if line.strip():
            yield json.loads(line)


def expertqa(repo: str) -> None:
    """One row per (question, system) answer of the lfqa val/test files, deduplicated across the two splits."""
    upstream: dict[str, bytes] = {}
    answers: dict[tuple[str, str], dict[str, Any]] = {}
    for split in ("domain_test", "domain_val", "rand_test", "rand_val"):
        path = f"data/lfqa/{split}.jsonl"
        for row in jsonl_rows(repo, path, upstream):
            for system, ans in row["answers"].items():
                key = (row["question"], system)
                if key in answers:
                    continue
                answers[key] = {
                    "id": f"eqa-{sha((row['question'] + '|' + system).encode('utf-8'))[:12]}",
                    "question": row["question"],
                    "system": system,
                    "field": (row.get("metadata") or {}).get("field") or "",
                    "answer": ans["answer_string"],
                    "claims": [
                        {
                            "claim": c["claim_string"],
                            "evidence": [p for p in (_passage(e) for e in (c.get("evidence") or [])) if p],
                            "support": c.get("support"),
                        }
                        for c in ans["claims"]
                    ],
                }
    rows = sorted(answers.values(), key=lambda r: r["id"])
    written = {"expertqa/answers.jsonl.gz": write_jsonl_gz(HERE / "expertqa" / "answers.jsonl.gz", rows)}
    report("expertqa", repo, upstream, written)


def wice(repo: str) -> None:
    """One row per claim of the claim-level dev and test files (train is not in the snapshot)."""
    upstream: dict[str, bytes] = {}
    rows = []
    for split in ("dev", "test"):
        path = f"data/entailment_retrieval/claim/{split}.jsonl"
        for row in jsonl_rows(repo, path, upstream):
            meta = row.get("meta") or {}
            rows.append(
                {
                    "id": f"wice-{meta['id']}",
                    "title": meta.get("claim_title") or "",
                    "claim": row["claim"],
                    "evidence": row["evidence"],
                    "label": row["label"],
                    "upstream_split": split,
                }
            )
    written = {"wice/claims.jsonl.gz": write_jsonl_gz(HERE / "wice" / "claims.jsonl.gz", rows)}
    report("wice", repo, upstream, written)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--factcheck-gpt")
    ap.add_argument("--summedits")
    ap.add_argument("--expertqa")
    ap.add_argument("--wice")
    args = ap.parse_args(argv)
    for name, fn in (
        ("factcheck_gpt", factcheck_gpt),
        ("summedits", summedits),
        ("expertqa", expertqa),
        ("wice", wice),
    ):
        repo = getattr(args, name)
        if repo:
            fn(repo)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
