"""Fit relevance_score's weights on the auto-recall dev set (not the benchmark).

    .venv/bin/python bench/_fit_relevance.py [--verbose]

In process, no MCP: every (message, stored memory) pair of bench/quality/recall_dev.json
gets ikario_rag.relevance's features (the memory's vector is its text's, as stored), and a
logistic regression (scikit-learn, class weight 3 for the rarer relevant pairs) is fitted
twice: with the semantic feature (hybrid and semantic modes) and without (text mode). It
prints the weights to copy into ikario_rag/relevance.py and what the app's decision
(threshold 0.5, at most 4 memories) gives on the dev set and on the held-out slice. The
figures to report come from bench/quality.py, through the real path.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from ikario_rag import relevance  # noqa: E402
from ikario_rag.embed import Embedder  # noqa: E402

NAMES = ("names", "relations", "specific", "generic", "coverage", "link", "conversation")


def pairs(embedder, file: str, baseline: bool = True):
    """(case key, memory id, needed?, case needs any?, features) for every pair."""
    from memory.recall.follow_up import query_for  # the app's rule, kept in one place

    data = json.loads((HERE / "quality" / file).read_text())
    out = []
    for profile in data["profiles"]:
        memories = [(f["id"], f["content"], f["kind"]) for f in profile["facts"]]
        memories += [(f"noise{n}", t, "conversation") for n, t in enumerate(profile["noise"])]
        vectors = embedder.encode([m[1] for m in memories])
        baselines = relevance.BASELINES.of(embedder, vectors)
        for n, case in enumerate(profile["cases"]):
            asked = query_for(case["m"], case.get("h", []))
            query = relevance.read_query(asked)
            qv = embedder.encode([asked])[0]
            stored = zip(memories, vectors, baselines, strict=True)
            for (mid, content, kind), vector, base in stored:
                # Without the neutral baseline: the raw cosine less one constant (ablation).
                semantic = float(vector @ qv) - (float(base) if baseline else 0.3)
                found = relevance.features(query, content, kind, semantic)
                out.append(
                    {
                        "lang": _language(case["m"], profile["name"]),
                        "case": (profile["name"], n),
                        "message": case["m"],
                        "memory": mid,
                        "needed": mid in case["need"],
                        "needs": bool(case["need"]),
                        "meaningless": query.meaningless,
                        "features": found,
                    }
                )
    return out


def _language(message: str, profile: str) -> str:
    from memory.recall.prompts import detect_language

    return detect_language(message) or profile.split("-")[0]


def fit(rows, names):
    from sklearn.linear_model import LogisticRegression

    x = np.array([[r["features"][n] for n in names] for r in rows if not r["meaningless"]])
    y = np.array([r["needed"] for r in rows if not r["meaningless"]], dtype=int)
    model = LogisticRegression(C=10.0, class_weight={0: 1, 1: 3}, max_iter=1000).fit(x, y)
    weights = {n: round(float(w), 2) for n, w in zip(names, model.coef_[0], strict=True)}
    return weights, round(float(model.intercept_[0]), 2)


def decide(rows, weights, bias, verbose, label):
    by_case: dict = {}
    for r in rows:
        by_case.setdefault(r["case"], []).append(r)
    hits = needs = wrong = none = 0
    for case_rows in by_case.values():
        first = case_rows[0]
        scored = []
        if not first["meaningless"]:
            for r in case_rows:
                z = bias + sum(weights[n] * r["features"][n] for n in weights)
                scored.append((1 / (1 + np.exp(-z)), r))
        chosen = sorted([s for s in scored if s[0] >= 0.5], key=lambda s: -s[0])[:4]
        if first["needs"]:
            needs += 1
            hit = any(r["needed"] for _, r in chosen)
            hits += hit
            if verbose and not hit:
                best = [(r["memory"], round(p, 2)) for p, r in sorted(scored, key=lambda s: -s[0])]
                print(f"  {label} miss {first['message']!r}: {best[:2]}")
        else:
            none += 1
            wrong += bool(chosen)
            if verbose and chosen:
                shown = [(r["memory"], round(p, 2)) for p, r in chosen]
                print(f"  {label} false {first['message']!r}: {shown}")
    return hits / needs, wrong / none


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--verbose", action="store_true")
    parser.add_argument("--link", type=float, nargs="*", help="link weights to try")
    parser.add_argument(
        "--french", action="store_true", help="what the French measures bring, by language"
    )
    args = parser.parse_args()
    sys.path.insert(0, str(HERE))
    embedder = Embedder().start()
    embedder.wait(600)
    if args.french:
        french(embedder)
        return
    dev = pairs(embedder, "recall_dev.json")
    held = pairs(embedder, "recall_heldout.json")
    for label, names in (("with vectors", ("semantic", *NAMES)), ("text mode", NAMES)):
        weights, bias = fit(dev, names)
        print(f"{label}: WEIGHTS = {weights}, BIAS = {bias}")
        for name, rows in (("dev", dev), ("held-out", held)):
            recall, false = decide(rows, weights, bias, args.verbose and name == "dev", name)
            print(f"  {name}: recall {recall:.3f}, false recall {false:.3f}")
        # The pairwise fit weighs every unneeded memory of a message that needs one as an
        # error; the decision only counts what reaches the prompt. The link is the rarest and
        # most precise feature: the weight the decision wants for it, on the dev set.
        for link in args.link or []:
            tried = {**weights, "link": link}
            recall, false = decide(dev, tried, bias, False, "dev")
            print(f"  link {link}: dev recall {recall:.3f}, false recall {false:.3f}")


def french(embedder) -> None:
    """The shipped weights on the dev set, by language: as shipped, without the lexicon's
    synonyms and French->English terms (CANON), without the neutral-sentence baseline."""
    from ikario_rag import lexicon

    def run(label, baseline=True):
        rows = pairs(embedder, "recall_dev.json", baseline=baseline)
        for lang in ("en", "fr"):
            mine = [r for r in rows if r["lang"] == lang]
            recall, false = decide(mine, relevance.WEIGHTS, relevance.BIAS, False, lang)
            print(f"{label}: {lang} recall {recall:.3f}, false recall {false:.3f}")

    run("as shipped")
    run("raw cosine (no baseline)", baseline=False)
    kept = dict(lexicon.CANON)
    lexicon.CANON.clear()
    lexicon.CANON.update({w: t for w, t in kept.items() if w == t})
    for cached in (lexicon.term, lexicon._domain_terms, lexicon._constraint_terms):
        cached.cache_clear()
    lexicon._not_food_terms.cache_clear()
    relevance._read_memory.cache_clear()
    relevance._generic_terms.cache_clear()
    run("no lexicon (synonyms, French->English)")


if __name__ == "__main__":
    main()
