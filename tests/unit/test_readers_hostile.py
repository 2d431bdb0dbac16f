"""Hostile or foreign result records and batch lines: escaped in the report, skipped with a count, never a traceback."""

from __future__ import annotations

import io
import json
import re
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from claimwatch.claims_query import read_results_file
from claimwatch.cli import main
from claimwatch.gate import counts_from_results
from claimwatch.report import build_report, render_html
from tests.fakes.chromium import chromium

PWN = '<img src=x onerror=document.title="PWNED">'


def _record(i: int, release: str, verdict: str = "SUPPORTED", **extra) -> dict:
    rec = {
        "trace_id": f"{release}-{i:04d}",
        "judge": "heuristic",
        "outcome": "evaluated",
        "slices": {"release": release, "route": "r1"},
        "claims": [{"id": "c1", "text": "The fee is 10 dollars.", "verdict": verdict, "confidence": 0.9}],
        "counts": {"SUPPORTED": int(verdict == "SUPPORTED"), "UNSUPPORTED": 0, "CONTRADICTED": 0, "ERROR": 0}
        | {verdict: 1},
        "evaluated_at": 1_700_000_000 + i,
    }
    rec.update(extra)
    return rec


def _good(n: int = 60) -> list[dict]:
    return [_record(i, "b") for i in range(n)] + [_record(i, "c") for i in range(n)]


#: one record of each foreign shape (as JSONL lines), and the reason it is skipped for
HOSTILE_LINES: dict[str, bytes] = {
    "not JSON (nested too deeply)": b"[" * 100_000 + b"]" * 100_000,
    "'slices' is not an object": json.dumps(_record(900, "c", slices=["c"])).encode(),
    "'claims' is not a list": json.dumps(_record(901, "c", claims=3)).encode(),
    "a claim's 'confidence' is not a number": json.dumps(
        _record(902, "c", claims=[{"verdict": "CONTRADICTED", "confidence": "high"}])
    ).encode(),
    "'evaluated_at' is not a number": json.dumps(_record(903, "c", evaluated_at="2024-05-01T00:00:00Z")).encode(),
    "a 'counts' value is not a count": json.dumps(_record(904, "c", counts={"SUPPORTED": "many"})).encode(),
    "a 'slices' value is not a string": json.dumps(_record(905, "c", slices={"release": "c", "route": 5})).encode(),
    "not a JSON object": b"[1, 2]",
    "not JSON": b"\xff\xfe not utf-8 {",
    "no 'trace_id' string": json.dumps({k: v for k, v in _record(906, "c").items() if k != "trace_id"}).encode(),
}


def _write(path: Path, records: list[dict], extra_lines: list[bytes] = ()) -> Path:
    lines = [json.dumps(r).encode() for r in records] + list(extra_lines)
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def _run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


# -- bug 5: HTML injection in the report ------------------------------------------------------------------------


def _hostile_report(tmp_path: Path) -> str:
    hostile = _record(
        7,
        "c",
        "CONTRADICTED",
        trace_id='t"><script>document.title="PWNED"</script>',
        judge="</script><script>document.title='PWNED'</script>",
        slices={"release": "c", "route": PWN, PWN: "v</script><script>document.title='PWNED'</script>"},
        claims=[
            {
                "id": "c1",
                "text": PWN,
                "verdict": "CONTRADICTED",
                "confidence": 1.0,
                "reason": "<script>document.title='PWNED'</script>",
                "evidence": "<b onmouseover=x>",
                "context_excerpt": 'ctx <b onmouseover=x> "quoted"',
                "context_source": '"><img src=x onerror=document.title="PWNED">',
                "context_id": "<svg onload=document.title='PWNED'>",
            }
        ],
    )
    report = build_report(_good() + [hostile], "b", "c", slice_label="route", trust_judge=True)
    return render_html(report, trace_url_template="{trace_id}")


def test_report_escapes_every_record_text_keys_included(tmp_path):
    """Slice keys and values, claim text, reason, evidence, source and trace id reach the page as text, not markup."""
    page = _hostile_report(tmp_path)
    lowered = page.lower()
    assert "<img" not in lowered and "<script" not in lowered and "<svg onload" not in lowered
    assert "<b onmouseover" not in lowered and "href=" not in lowered  # a trace link only for an http(s) URL
    assert "&lt;img src=x onerror=document.title=&quot;PWNED&quot;&gt;=v&lt;/script&gt;" in page  # key=value
    assert "route=&lt;img src=x onerror=document.title=&quot;PWNED&quot;&gt;" in page
    assert "<mark>&lt;b onmouseover=x&gt;</mark>" in page


def test_hostile_report_runs_no_script_in_headless_chromium(tmp_path):
    """Chromium loads the page of hostile records: the title is the report's and no <img>/<script> is in the DOM."""
    page = tmp_path / "hostile.html"
    page.write_text(_hostile_report(tmp_path), encoding="utf-8")
    run = chromium(tmp_path, "--virtual-time-budget=2000", "--dump-dom", page.as_uri())
    title = re.search(r"<title>(.*?)</title>", run.stdout, re.S)
    assert title is not None and title.group(1).startswith("claimwatch release report")
    assert "PWNED" not in title.group(1)
    assert "<img" not in run.stdout.lower() and "<script" not in run.stdout.lower()


def test_report_of_a_record_with_a_non_string_slice_value_is_no_crash():
    """A slice value that is a number (a foreign record) is skipped and said on the page, not an AttributeError."""
    bad = _record(8, "c", "CONTRADICTED", slices={"release": "c", "route": 5})
    report = build_report(_good() + [bad], "b", "c", trust_judge=True)
    page = render_html(report)  # the old code raised here: html.escape(5)
    assert report.answers == {"b": 60, "c": 60}
    assert report.left_out == ("skipped 1 malformed result record(s) (1 a 'slices' value is not a string)",)
    assert "skipped 1 malformed result record(s)" in page


# -- bug 6: malformed or foreign result records ---------------------------------------------------------------


def test_results_file_reader_skips_each_foreign_shape_with_its_reason(tmp_path):
    """Every hostile line is left out and counted by reason; the good records are all read."""
    from claimwatch.gate.counts import ResultSkips

    path = _write(tmp_path / "r.jsonl", _good(), list(HOSTILE_LINES.values()))
    skips = ResultSkips()
    got = list(read_results_file(path, skips))
    assert len(got) == 120
    assert dict(skips.malformed) == dict.fromkeys(HOSTILE_LINES, 1)
    assert skips.duplicates == 0


@pytest.mark.parametrize("reason", sorted(HOSTILE_LINES))
def test_report_and_gate_on_a_results_file_skip_a_foreign_record(tmp_path, reason):
    """report --results and gate --results: the decision of the good records (exit 0), and the skip said."""
    path = _write(tmp_path / "r.jsonl", _good(), [HOSTILE_LINES[reason]])
    code, out, err = _run(
        ["report", "--results", str(path), "--baseline", "b", "--candidate", "c", "--out", str(tmp_path / "r.html")]
    )
    assert code == 0, err[-500:]
    assert "claimwatch report: PROMOTE" in out and f"skipped 1 malformed result record(s) (1 {reason})" in out
    assert f"(1 {reason})" in (tmp_path / "r.html").read_text(encoding="utf-8").replace("&#x27;", "'")
    code, out, err = _run(["gate", "--results", str(path), "--baseline", "b", "--candidate", "c"])
    assert code == 0, err[-500:]
    assert "PROMOTE" in out and f"skipped 1 malformed result record(s) (1 {reason})" in err


def test_counts_from_results_skips_a_non_numeric_count_instead_of_raising():
    """A record whose counts hold a word is left out of the gate's counts (counted), the others are counted."""
    from claimwatch.gate.counts import ResultSkips

    skips = ResultSkips()
    got = counts_from_results(_good() + [_record(999, "c", counts={"UNSUPPORTED": "many"})], ["b", "c"], skips=skips)
    assert got["b"].answers == got["c"].answers == 60
    assert dict(skips.malformed) == {"a 'counts' value is not a count": 1}


def test_skips_are_logged_once_a_minute_per_kind_and_all_counted():
    """500 bad records: every one counted, one log line until a minute has passed, then one with the rest."""
    from claimwatch.gate.counts import ResultSkips

    now = [0.0]
    skips = ResultSkips(clock=lambda: now[0])
    with capture_logs() as logs:
        for i in range(500):
            skips.malformed_record("not JSON", f"f:{i}")
        now[0] = 61.0
        skips.malformed_record("not JSON", "f:500")
    assert skips.skipped == 501
    assert [(e["event"], e["suppressed"]) for e in logs] == [
        ("results_record_skipped", 0),
        ("results_record_skipped", 499),
    ]
    assert all("where" in e and "record" not in e for e in logs)  # where it was, never its bytes


def test_a_file_with_no_result_record_is_a_clear_error(tmp_path):
    """gate --results on a file none of whose lines is a result record: a ConfigError naming the file, no traceback."""
    path = tmp_path / "not-results.jsonl"
    path.write_bytes(b"[" * 50_000 + b"]" * 50_000 + b"\n[1, 2]\n")
    code, _, err = _run(["gate", "--results", str(path), "--baseline", "b", "--candidate", "c"])
    assert code != 0 and "no line is a JSON result record" in err
    assert "RecursionError" not in err and "Traceback" not in err


# -- bug 8: ids unique across files, and duplicates counted ---------------------------------------------------


def test_concatenated_score_outputs_keep_both_releases(tmp_path):
    """Two files scored separately (lines without trace_id) then concatenated: the gate counts both releases."""
    outs = []
    for release in ("b", "c"):
        src = tmp_path / f"{release}.jsonl"
        lines = [
            {"question": "Fee?", "answer": f"The fee is {10 + i % 3} dollars.", "contexts": ["The fee is 10 dollars."]}
            | {"slices": {"release": release}}
            for i in range(6)
        ]
        src.write_text("".join(json.dumps(x) + "\n" for x in lines))
        out = tmp_path / f"{release}.out.jsonl"
        code, _, err = _run(["score", str(src), "--judge", "heuristic", "-o", str(out)])
        assert code == 0, err[-500:]
        outs.append(out.read_text())
    both = tmp_path / "both.jsonl"
    both.write_text("".join(outs))
    ids = [json.loads(x)["trace_id"] for x in both.read_text().splitlines()]
    assert len(set(ids)) == 12 and all(re.fullmatch(r"line-\d+-[0-9a-f]{12}", i) for i in ids)
    got = counts_from_results(read_results_file(both), ["b", "c"])
    assert got["b"].answers + got["c"].answers == 12 and got["c"].answers > 0


def test_duplicates_of_another_release_are_counted_and_said(tmp_path):
    """Old line-N ids shared by two releases: gate --results says how many were dropped and why they may be."""
    recs = [_record(i, "b", trace_id=f"line-{i}") for i in range(60)] + [
        _record(i, "c", trace_id=f"line-{i}") for i in range(60)
    ]
    path = _write(tmp_path / "r.jsonl", recs)
    code, out, err = _run(["gate", "--results", str(path), "--baseline", "b", "--candidate", "c"])
    assert code == 2 and "HOLD" in out
    assert "dropped 60 duplicate result record(s)" in err and "60 of them with other slices" in err


def test_report_counts_duplicates_it_drops():
    """build_report on a list with a redelivered record: one counted, the duplicate said in left_out."""
    records = _good() + [_record(3, "c")]
    report = build_report(records, "b", "c", trust_judge=True)
    assert report.answers == {"b": 60, "c": 60}
    assert report.left_out == ("dropped 1 duplicate result record(s) (a record key read again; one kept)",)


# -- bug 7 and the minor one: batch input -----------------------------------------------------------------------


def test_score_skips_a_deeply_nested_line_and_scores_the_rest(tmp_path):
    """A line nested 100k deep is a counted, skipped line; the lines after it are scored."""
    good = json.dumps({"question": "q", "answer": "The canal opened in 1825.", "contexts": ["It opened in 1825."]})
    src = tmp_path / "deep.jsonl"
    src.write_text("\n".join([good, "[" * 100_000 + "]" * 100_000, good]) + "\n")
    out = tmp_path / "out.jsonl"
    code, _, err = _run(["score", str(src), "--judge", "heuristic", "-o", str(out)])
    assert code == 0
    assert len(out.read_text().splitlines()) == 2
    assert "line 2: skipped: not JSON: nested too deeply" in err and "skipped 1 bad lines" in err


def test_verify_skips_a_deeply_nested_line_and_verifies_the_rest(tmp_path):
    """verify: the deep line is skipped (counted), the claims before and after it are verified."""
    good = json.dumps({"claim": "It opened in 1825.", "context": ["It opened in 1825."]})
    src = tmp_path / "deepv.jsonl"
    src.write_text("\n".join([good, "[" * 100_000 + "]" * 100_000, good]) + "\n")
    out = tmp_path / "out.jsonl"
    code, _, err = _run(["verify", str(src), "--judge", "heuristic", "-o", str(out)])
    assert code == 0
    assert len(out.read_text().splitlines()) == 2 and "skipped 1 bad lines" in err


def test_score_counts_lines_with_invalid_utf8(tmp_path):
    """Invalid UTF-8 is replaced by U+FFFD and the number of such lines is said, with their line numbers."""
    src = tmp_path / "badutf.jsonl"
    good = json.dumps({"question": "q", "answer": "It opened in 1825.", "contexts": ["It opened in 1825."]})
    src.write_bytes(good.encode() + b"\n" + good.encode().replace(b"1825.", b"1825.\xff\xfe", 1) + b"\n")
    code, _, err = _run(["score", str(src), "--judge", "heuristic", "-o", str(tmp_path / "out.jsonl")])
    assert code == 0
    assert "1 line(s) had invalid UTF-8, replaced by U+FFFD before scoring (line 2)" in err


def test_only_the_first_skipped_lines_are_listed(tmp_path):
    """A file of 200 bad lines lists the first 50, says the rest are counted, and counts all 200."""
    src = tmp_path / "bad.jsonl"
    src.write_text("not json\n" * 200)
    code, _, err = _run(["score", str(src), "--judge", "heuristic", "-o", str(tmp_path / "out.jsonl")])
    assert code != 0  # nothing scored
    assert err.count(": skipped: ") == 50 and "line 51: skipped" not in err
    assert "further skipped lines are counted, not listed" in err and "skipped 200 bad lines" in err
