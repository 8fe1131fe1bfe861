"""In-process LoCoMo tuning harness (not the benchmark): calls the search code directly.

    .venv/bin/python bench/_tune_locomo.py [--rebuild]

Populates one namespace per conversation in /tmp/ikario-locomo-tune (reused unless --rebuild)
and prints R@5/R@10 for a few fusion settings. The recorded figures come from
bench/locomo_recall.py, which goes through a real stdio MCP client.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import _locomo  # noqa: E402

from ikario_rag import search, validate  # noqa: E402
from ikario_rag.memory import Memory  # noqa: E402

INDEX = Path(os.environ.get("TUNE_INDEX", "/tmp/ikario-locomo-tune"))


def populate(memory: Memory, convs: list[_locomo.Conversation]) -> None:
    for conv in convs:
        items = [
            validate.new_memory(
                t.content, {"kind": "conversation", "source": t.dia_id, "date": t.date}
            )
            for t in conv.turns
        ]
        memory.add(f"locomo-{conv.name}", items)


def evaluate(memory: Memory, convs, tuning: search.Tuning) -> tuple[float, float, dict]:
    r5 = r10 = 0.0
    n = 0
    by_cat: dict[int, list[float]] = {}
    for conv in convs:
        for q in conv.questions:
            found = search.search(
                memory, f"locomo-{conv.name}", q.question, 10, search.Filters(), "hybrid", tuning
            )["results"]
            sources = [r["metadata"]["source"] for r in found]
            a = _locomo.recall(sources, q.evidence, 5)
            b = _locomo.recall(sources, q.evidence, 10)
            r5 += a
            r10 += b
            n += 1
            by_cat.setdefault(q.category, []).append(b)
    return r5 / n, r10 / n, {c: round(sum(v) / len(v), 3) for c, v in sorted(by_cat.items())}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rebuild", action="store_true")
    parser.add_argument("--grid", default="default")
    args = parser.parse_args()
    if args.rebuild and INDEX.exists():
        shutil.rmtree(INDEX)
    fresh = not INDEX.exists()
    memory = Memory(INDEX)
    if os.environ.get("TUNE_NO_CONTEXT"):
        # Baseline: every turn indexed alone, without the turns around it.
        memory._session_context = lambda ns, items: ([None] * len(items), [None] * len(items), {})
    memory.embedder.wait()
    memory.repaired.set()
    convs = _locomo.load()
    if fresh:
        t = time.time()
        populate(memory, convs)
        print(f"populated in {time.time() - t:.1f}s", flush=True)
    grids = {
        "default": [search.Tuning()],
        "baseline": [
            search.Tuning(rrf_k=20, text_weight=0.8, neighbours=0.0, date_boost=0.0),
            search.Tuning(rrf_k=5, text_weight=1.0, neighbours=0.0, date_boost=0.0),
            search.Tuning(neighbours=0.5, date_boost=0.0),
            search.Tuning(text_weight=0.0, neighbours=0.0, date_boost=0.0),
            search.Tuning(semantic_weight=0.0, neighbours=0.0, date_boost=0.0),
        ],
        "fine": [
            search.Tuning(neighbours=n, text_weight=w, rrf_k=k)
            for n, w, k in (
                (0.4, 1.0, 5),
                (0.6, 1.0, 5),
                (0.5, 1.1, 5),
                (0.5, 0.9, 5),
                (0.5, 1.0, 4),
                (0.5, 1.0, 7),
            )
        ],
        "dates": [
            search.Tuning(neighbours=0.5, date_boost=0.0),
            search.Tuning(neighbours=0.5, date_boost=0.5, date_slack_days=7),
            search.Tuning(neighbours=0.5),
            search.Tuning(date_boost=0.0),
            search.Tuning(),
        ],
        "speaker": [search.Tuning(speaker=f) for f in (1.0, 0.8, 0.6, 0.5, 0.4, 0.3, 0.2)],
        "weights": [
            search.Tuning(text_weight=w, rrf_k=k, neighbours=n)
            for w in (0.8, 1.0, 1.2)
            for k in (5, 20)
            for n in (0.0, 0.5)
        ],
    }
    for tuning in grids[args.grid]:
        t = time.time()
        r5, r10, cats = evaluate(memory, convs, tuning)
        print(
            f"{tuning}: R@5={r5:.3f} R@10={r10:.3f} by category {cats} ({time.time() - t:.1f}s)",
            flush=True,
        )


if __name__ == "__main__":
    main()
