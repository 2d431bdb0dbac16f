"""`claimwatch label --html`: the labelling page in headless Chromium writes the terminal's label lines."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

from claimwatch.calibration import load_labeled_claims
from claimwatch.labeling import main
from claimwatch.labeling.sample import draw_plan, label_record, plan_path, population
from tests.fakes.chromium import chromium


def _results(path: Path) -> None:
    recs = []
    for i in range(6):
        verdict = "SUPPORTED" if i % 2 else "CONTRADICTED"
        recs.append(
            {
                "trace_id": f"t{i}",
                "judge": "j",
                "slices": {"release": "v1"},
                "question": f"q{i}?",
                "claims": [
                    {
                        "id": "c0",
                        "text": f"claim {i} </script><b>not bold</b>",
                        "verdict": verdict,
                        "confidence": 0.9,
                        "context_excerpt": f"chunk {i}",
                    }
                ],
            }
        )
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))


def _dom(page: Path, keys: str, tmp_path: Path) -> str:
    run = chromium(tmp_path, "--dump-dom", page.as_uri() + "#keys=" + keys)
    assert [ln for ln in run.stderr.splitlines() if "Uncaught" in ln] == []
    return run.stdout


def test_page_labels_with_keys_and_imports_into_the_labels_file(tmp_path):
    """Keys s/k/b/c/u in Chromium give the terminal's label lines; --import appends them and resumes the session."""
    results, labels, page = tmp_path / "r.jsonl", tmp_path / "labels.jsonl", tmp_path / "label.html"
    _results(results)
    assert main(["--results", str(results), "--out", str(labels), "--n", "6", "--plan-only"]) == 0
    assert main(["--out", str(labels), "--html", str(page), "--labeller", "ann"]) == 0
    text = page.read_text()
    assert "<b>not bold</b>" not in text  # claim text is data, never markup
    dom = _dom(page, "skbcu", tmp_path)
    assert "[4/6]" in dom  # three answers kept (skip, back undid it, then c and u)
    assert "&lt;b&gt;not bold&lt;/b&gt;" in dom  # shown as text
    m = re.search(r'<pre id="out">(.*?)</pre>', dom, re.S)
    assert m is not None
    out = html.unescape(m.group(1))
    downloaded = tmp_path / "labels-new.jsonl"
    downloaded.write_text(out + "\n")
    lines = [json.loads(x) for x in out.splitlines()]
    assert [r["label"] for r in lines] == ["SUPPORTED", "CONTRADICTED", "UNSUPPORTED"]
    plan = json.loads(plan_path(labels).read_text())
    expected = label_record(plan["items"][0], "SUPPORTED", labeller="ann", at=0.0)
    got = lines[0]
    assert got["source"].pop("labelled_at") > 0 and expected["source"].pop("labelled_at") == 0.0
    assert got == expected  # the same line the terminal writes
    assert main(["--out", str(labels), "--import", str(downloaded)]) == 0
    assert main(["--out", str(labels), "--import", str(downloaded)]) == 0  # twice: nothing added
    assert len(load_labeled_claims(labels)) == 3
    again = tmp_path / "again.html"
    assert main(["--out", str(labels), "--html", str(again)]) == 0
    assert '"done": 3' in again.read_text()


def test_plan_items_render_for_answers_too(tmp_path):
    """An answer plan renders its answer and claims (the page is unit-aware)."""
    from claimwatch.labeling.html import page_data
    from claimwatch.labeling.sample import population_answers

    recs = [
        {
            "trace_id": "a1",
            "judge": "j",
            "question": "q?",
            "answer": "A. B.",
            "claims": [{"id": "c0", "text": "A.", "verdict": "SUPPORTED"}],
        }
    ]
    data = page_data(draw_plan(population_answers(recs), 1, unit="answer"), tmp_path / "x.jsonl")
    assert data["unit"] == "answer" and data["keys"] == {"f": "faithful", "h": "hallucinated"}
    assert data["items"][0]["view"]["claims"][0]["text"] == "A."
    assert data["items"][0]["record"]["unit"] == "answer"
    assert population([]) == []
