"""What the rule-based extractor (memory/learning/offline_facts.py) learns with no key, per
language.

On bench/quality/learning_dev.json (or, with --heldout, learning_heldout.json, measured once
at the end, never tuned on):
- captured (recall): statements said in passing whose expected fact is given (a fact holding
  every one of the statement's keys);
- precision: of the facts given on the whole set (statements and non-facts), those that are
  an expected fact;
- junk rate: sentences that must give nothing (questions, hypotheticals, requests, the
  assistant's words, restated memories, small talk) that gave a fact (target <= 5 %);
- kind and expiry: of the captured facts, those with the expected kind, and with a ttl
  exactly when the statement is a passing state.

    .venv/bin/python bench/learning.py [--heldout] [--show]
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from memory.learning.offline_facts import facts_in, fold  # noqa: E402

HERE = Path(__file__).resolve().parent / "quality"
TODAY = date(2026, 11, 27)  # a fixed day: expiries are measured from it


def _holds(fact: dict, keys: list[str]) -> bool:
    content = fold(fact["content"])
    return all(fold(key) in content for key in keys)


def measure(data: dict, show: bool = False) -> dict:
    rows = {}
    for lang in ("en", "fr", "all"):
        rows[lang] = dict.fromkeys(
            ("statements", "captured", "given", "right", "non_facts", "junk", "kind", "expiry"), 0
        )
    for case in data["statements"]:
        facts = facts_in(case["text"], today=TODAY)
        hit = next((f for f in facts if _holds(f, case["keys"])), None)
        for lang in (case["lang"], "all"):
            row = rows[lang]
            row["statements"] += 1
            row["given"] += len(facts)
            row["right"] += sum(_holds(f, case["keys"]) for f in facts)
            if hit is not None:
                row["captured"] += 1
                row["kind"] += hit["context"]["kind"] == case["kind"]
                row["expiry"] += ("ttl" in hit["context"]) == case["expires"]
        if show and (hit is None or hit["context"]["kind"] != case["kind"]):
            got = [(f["content"], f["context"]["kind"], f["context"].get("ttl")) for f in facts]
            print(f"  missed/kind  {case['text']!r} -> {got}")
        elif show and ("ttl" in hit["context"]) != case["expires"]:
            print(f"  expiry       {case['text']!r} -> {hit['context'].get('ttl')}")
    for case in data["non_facts"]:
        facts = facts_in(case["text"], today=TODAY)
        for lang in (case["lang"], "all"):
            row = rows[lang]
            row["non_facts"] += 1
            row["given"] += len(facts)
            row["junk"] += bool(facts)
        if show and facts:
            print(f"  junk ({case['why']})  {case['text']!r} -> {[f['content'] for f in facts]}")
    return rows


def _pct(n: int, d: int) -> str:
    return f"{100 * n / d:5.1f} %" if d else "    -  "


def report(name: str, rows: dict) -> None:
    print(f"\n{name}")
    print("lang  captured (recall)   precision        junk rate        kind ok   expiry ok")
    for lang, r in rows.items():
        print(
            f"{lang:<5} {r['captured']:>3}/{r['statements']:<3}"
            f" {_pct(r['captured'], r['statements'])}"
            f"   {r['right']:>3}/{r['given']:<3} {_pct(r['right'], r['given'])}"
            f"   {r['junk']:>3}/{r['non_facts']:<3} {_pct(r['junk'], r['non_facts'])}"
            f"   {_pct(r['kind'], r['captured'])}  {_pct(r['expiry'], r['captured'])}"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--heldout", action="store_true", help="measure the held-out set too")
    parser.add_argument("--show", action="store_true", help="list misses and junk (dev only)")
    args = parser.parse_args()
    dev = measure(json.loads((HERE / "learning_dev.json").read_text()), show=args.show)
    report("dev (bench/quality/learning_dev.json)", dev)
    junk_ok = dev["all"]["junk"] <= 0.05 * dev["all"]["non_facts"]
    if args.heldout:
        held = measure(json.loads((HERE / "learning_heldout.json").read_text()))
        report("held out (bench/quality/learning_heldout.json)", held)
    print(f"\njunk rate target <= 5 % on dev: {'met' if junk_ok else 'NOT met'}")
    return 0 if junk_ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
