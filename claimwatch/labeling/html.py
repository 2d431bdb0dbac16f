"""``claimwatch label --html PAGE``: the same plan as a self-contained HTML page (no network, no server).

The page shows one item at a time with the same keys as the terminal (s/u/c or f/h, k, b), keeps its answers in
the browser's localStorage (closing the tab loses nothing) and offers the new label lines as a download;
``claimwatch label --out LABELS --import DOWNLOADED`` appends them to the labels file (ids already there are
kept as they are), so terminal and browser sessions resume each other. The label lines are built here, in
Python, with the terminal's own record functions: the page only fills in the label, the time and the labeller.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

from claimwatch.labeling.sample import answer_label_record, label_record
from claimwatch.labeling.session import ANSWER_KEYS, KEYS, _append, _ids, skipped_path

LABEL_SLOT = "__LABEL__"


def page_data(
    plan: Mapping[str, Any], labels_path: str | Path, *, blind: bool = False, labeller: str | None = None
) -> dict[str, Any]:
    """What the page needs: the items not labelled or skipped yet, each with its view and its record template."""
    answers = plan.get("unit") == "answer"
    record = answer_label_record if answers else label_record
    done = set(_ids(Path(labels_path))) | set(_ids(skipped_path(labels_path)))
    items = []
    for it in plan["items"]:
        if it["id"] in done:
            continue
        view = {
            k: it.get(k)
            for k in (
                "stratum",
                "stratum_share",
                "population_total",
                "question",
                "claim",
                "answer",
                "evidence",
                "context_excerpt",
                "context_source",
                "context_id",
                "slices",
            )
        }
        if answers:
            view["claims"] = [
                {
                    k: c.get(k)
                    for k in ("id", "text", "context_excerpt", "evidence")
                    + (() if blind else ("verdict", "confidence"))
                }
                for c in it.get("claims") or []
            ]
        if not blind:
            view.update(
                judge_verdict=it.get("judge_verdict"),
                judge_confidence=it.get("judge_confidence"),
                reason=it.get("reason"),
            )
        items.append({"id": it["id"], "view": view, "record": record(it, LABEL_SLOT, labeller=None, at=0.0)})
    return {
        "unit": plan.get("unit", "claim"),
        "keys": ANSWER_KEYS if answers else KEYS,
        "total": len(plan["items"]),
        "done": len(plan["items"]) - len(items),
        "items": items,
        "labeller": labeller,
        "storage_key": f"claimwatch-label:{plan.get('source')}:{plan.get('seed')}:{plan.get('n')}",
    }


def render_page(
    plan: Mapping[str, Any], labels_path: str | Path, *, blind: bool = False, labeller: str | None = None
) -> str:
    """The page for the plan's items not labelled yet (``</`` escaped inside the embedded JSON)."""
    data = json.dumps(page_data(plan, labels_path, blind=blind, labeller=labeller), ensure_ascii=False)
    data = data.replace("</", "<\\/")
    return PAGE.replace("/*DATA*/", data)


def import_labels(labels_path: str | Path, downloaded: str | Path) -> tuple[int, int]:
    """Append the downloaded label lines whose ids are not in the labels file yet; (added, already there)."""
    labels = Path(labels_path)
    have = set(_ids(labels)) | set(_ids(skipped_path(labels)))
    added = kept = 0
    for line in Path(downloaded).read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        rec = json.loads(line)
        if rec.get("id") in have:
            kept += 1
            continue
        _append(skipped_path(labels) if rec.get("skipped") else labels, rec)
        have.add(rec["id"])
        added += 1
    return added, kept


PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>claimwatch label</title>
<style>
body{font:15px/1.45 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#222}
.k{display:inline-block;border:1px solid #999;border-radius:3px;padding:0 .35rem;font-family:monospace}
.f{margin:.4rem 0}.f b{display:inline-block;width:6.5rem;color:#555}
.claim{font-size:1.15rem;background:#fff7d6;padding:.5rem}.chunk{background:#f3f3f3;padding:.5rem;white-space:pre-wrap}
#progress{font-weight:bold}#out{display:none}
</style></head><body>
<h1>claimwatch label</h1>
<p><span id="progress"></span> &middot; <span id="help"></span> &middot;
<a id="download" href="#" download="labels-new.jsonl">download new labels</a>
(then <code>claimwatch label --out LABELS --import labels-new.jsonl</code>)</p>
<div id="item"></div>
<pre id="out"></pre>
<script id="data" type="application/json">/*DATA*/</script>
<script>
"use strict";
const D = JSON.parse(document.getElementById("data").textContent);
const HELP = D.unit === "answer" ? "f faithful, h hallucinated" : "s supported, u unsupported, c contradicted";
let answers = [];
try { answers = JSON.parse(localStorage.getItem(D.storage_key) || "[]"); } catch (e) { answers = []; }
const known = new Set(D.items.map(i => i.id));
answers = answers.filter(a => known.has(a.id));
function el(tag, cls, text) { const e = document.createElement(tag); if (cls) e.className = cls;
  if (text !== undefined && text !== null) e.textContent = String(text); return e; }
function field(name, text, cls) { const d = el("div", "f"); d.appendChild(el("b", null, name));
  d.appendChild(el("span", cls || null, text)); return d; }
function lines() { return answers.map(a => { const it = D.items.find(i => i.id === a.id);
  if (a.label === null) return JSON.stringify({id: a.id, skipped: true, stratum: it.record.stratum,
    skipped_at: a.at});
  const r = JSON.parse(JSON.stringify(it.record)); r.label = a.label;
  r.source.labelled_at = a.at; r.source.labeller = D.labeller; return JSON.stringify(r); }).join("\\n"); }
function save() { try { localStorage.setItem(D.storage_key, JSON.stringify(answers)); } catch (e) {}
  const text = lines(); document.getElementById("out").textContent = text;
  document.getElementById("download").href = "data:application/x-ndjson;charset=utf-8," +
    encodeURIComponent(text + (text ? "\\n" : "")); }
function show() {
  const box = document.getElementById("item"); box.replaceChildren();
  const i = answers.length;
  document.getElementById("help").textContent = HELP + ", k skip, b back";
  if (i >= D.items.length) { document.getElementById("progress").textContent =
    "done: " + (D.done + answers.length) + "/" + D.total; box.appendChild(el("p", null,
    "Every item of the plan is labelled: download the new labels and import them.")); return; }
  document.getElementById("progress").textContent = "[" + (D.done + i + 1) + "/" + D.total + "]";
  const v = D.items[i].view;
  box.appendChild(field("stratum", v.stratum + " (" + Math.round(100 * (v.stratum_share || 0)) + "% of " +
    v.population_total + ")"));
  box.appendChild(field("question", v.question || "(not kept)"));
  if (D.unit === "answer") {
    box.appendChild(field("answer", v.answer, "claim"));
    for (const c of v.claims || []) {
      box.appendChild(field(c.id, c.text + (c.verdict ? "  [" + c.verdict + "]" : "")));
      box.appendChild(field("", c.context_excerpt || c.evidence || "(no chunk kept)", "chunk")); }
  } else {
    box.appendChild(field("claim", v.claim, "claim"));
    if (v.evidence) box.appendChild(field("evidence", v.evidence));
    box.appendChild(field("chunk", v.context_excerpt || "(no chunk kept)", "chunk"));
  }
  if (v.judge_verdict) box.appendChild(field("judge", v.judge_verdict +
    (v.judge_confidence != null ? " (" + Number(v.judge_confidence).toFixed(2) + ")" : "") +
    (v.reason ? "  why: " + v.reason : "")));
}
function press(key) {
  const i = answers.length, now = Math.round(Date.now()) / 1000;
  if (key === "b") { answers.pop(); }
  else if (i >= D.items.length) { return; }
  else if (key === "k") { answers.push({id: D.items[i].id, label: null, at: now}); }
  else if (Object.prototype.hasOwnProperty.call(D.keys, key)) {
    answers.push({id: D.items[i].id, label: D.keys[key], at: now}); }
  else { return; }
  save(); show();
}
document.addEventListener("keydown", e => { if (!e.ctrlKey && !e.metaKey && !e.altKey) press(e.key.toLowerCase()); });
save(); show();
if (location.hash.startsWith("#keys=")) {  // scripted sessions (tests): real key events, one per character
  for (const ch of decodeURIComponent(location.hash.slice(6)))
    document.dispatchEvent(new KeyboardEvent("keydown", {key: ch}));
}
</script></body></html>
"""
