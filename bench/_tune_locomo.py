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
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import _locomo  # noqa: E402

from ikario_rag import search, text, validate  # noqa: E402
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
    memory.flush()  # the vectors are written behind the add


def answers(memory: Memory, conv, tuning: search.Tuning) -> list[tuple[int, float, float]]:
    """(category, recall@5, recall@10) of each question of one conversation."""
    out = []
    for q in conv.questions:
        found = search.search(
            memory, f"locomo-{conv.name}", q.question, 10, search.Filters(), "hybrid", tuning
        )["results"]
        sources = [r["metadata"]["source"] for r in found]
        out.append(
            (
                q.category,
                _locomo.recall(sources, q.evidence, 5),
                _locomo.recall(sources, q.evidence, 10),
            )
        )
    return out


def summary(rows: list[tuple[int, float, float]]) -> tuple[float, float, dict]:
    by_cat: dict[int, list[float]] = {}
    for category, _, r10 in rows:
        by_cat.setdefault(category, []).append(r10)
    return (
        sum(r[1] for r in rows) / len(rows),
        sum(r[2] for r in rows) / len(rows),
        {c: round(sum(v) / len(v), 3) for c, v in sorted(by_cat.items())},
    )


def evaluate(memory: Memory, convs, tuning: search.Tuning) -> tuple[float, float, dict]:
    return summary([row for conv in convs for row in answers(memory, conv, tuning)])


def cross_validate(memory: Memory, convs, tunings: list[search.Tuning]) -> None:
    """Leave one conversation out: the setting with the best R@5 + R@10 on the other four
    is scored on the fifth; the five held-out conversations' questions pooled at the end."""
    table = {
        (pos, conv.name): [answers(memory, conv, t) for t in tunings]
        for pos, conv in enumerate(convs)
    }
    pooled: list[tuple[int, float, float]] = []
    for held_out in table:
        train = [k for k in table if k != held_out]

        def fit(index: int, train=train) -> float:
            rows = [row for k in train for row in table[k][index]]
            r5, r10, _ = summary(rows)
            return r5 + r10

        best = max(range(len(tunings)), key=fit)
        tr5, tr10, _ = summary([row for k in train for row in table[k][best]])
        rows = table[held_out][best]
        pooled.extend(rows)
        r5, r10, cats = summary(rows)
        print(
            f"held out {held_out[1]}: chose {tunings[best]} (train R@5={tr5:.3f} R@10={tr10:.3f})"
            f" -> held-out R@5={r5:.3f} R@10={r10:.3f} by category {cats}",
            flush=True,
        )
    r5, r10, cats = summary(pooled)
    print(f"cross-validated (pooled held-out): R@5={r5:.3f} R@10={r10:.3f} by category {cats}")


def timing(memory: Memory, convs, before: search.Tuning, after: search.Tuning) -> None:
    """Per-query time of two settings, interleaved question by question (two rounds), for
    the questions by how many speakers of their conversation they name (0, 1, 2)."""
    spent: dict[tuple[str, int], list[float]] = {}
    for _ in range(2):
        for conv in convs:
            speakers = {text.speaker_of(t.content) for t in conv.turns} - {None}
            for q in conv.questions:
                said = set(text.tokens(q.question))
                names = sum(set(s.split()) <= said for s in speakers)
                for name, tuning in (("before", before), ("after", after)):
                    started = time.perf_counter()
                    search.search(
                        memory,
                        f"locomo-{conv.name}",
                        q.question,
                        10,
                        search.Filters(),
                        "hybrid",
                        tuning,
                    )
                    elapsed = (time.perf_counter() - started) * 1000
                    spent.setdefault((name, names), []).append(elapsed)
    for names in (0, 1, 2):
        medians = {}
        for name in ("before", "after"):
            values = sorted(spent.get((name, names), []))
            if not values:
                continue
            medians[name] = statistics.median(values)
            print(
                f"{name} (question names {names} speakers): median {medians[name]:.2f} ms,"
                f" p95 {values[int(len(values) * 0.95)]:.2f} ms ({len(values)} searches)"
            )
        if len(medians) == 2:
            print(f"  after / before (medians): {medians['after'] / medians['before']:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rebuild", action="store_true")
    parser.add_argument("--grid", default="default")
    parser.add_argument("--folds", action="store_true", help="leave-one-conversation-out")
    parser.add_argument(
        "--timing", action="store_true", help="time the default against the rules switched off"
    )
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
        # The ranking before the speaker rules (issue 11's last figures): 0.653 / 0.768.
        "before": [search.Tuning(speaker=1.0)],
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
        "unnamed": [
            search.Tuning(speaker=f, unnamed_vector=u, unnamed_as=w)
            for f in (1.0, 0.5, 0.4, 0.3)
            for u, w in ((False, ""), (True, "they"), (True, "someone"), (True, "I"))
        ],
        "refit": [
            search.Tuning(text_weight=w, neighbours=n, rrf_k=k)
            for w in (0.8, 1.0, 1.25)
            for n in (0.4, 0.6, 0.8)
            for k in (5, 10)
        ],
        "first": [
            search.Tuning(first_named=b, speaker=f) for b in (False, True) for f in (0.4, 0.6)
        ],
        "final": [
            search.Tuning(speaker=f, unnamed_vector=u, first_named=n)
            for f in (1.0, 0.6, 0.5, 0.4, 0.3)
            for u in (False, True)
            for n in (False, True)
            if f < 1.0 or not (u or n)
        ],
        "weights": [
            search.Tuning(text_weight=w, rrf_k=k, neighbours=n)
            for w in (0.8, 1.0, 1.2)
            for k in (5, 20)
            for n in (0.0, 0.5)
        ],
    }
    if args.timing:
        timing(memory, convs, search.Tuning(speaker=1.0), search.Tuning())
        return
    if args.folds:
        cross_validate(memory, convs, grids[args.grid])
        return
    for tuning in grids[args.grid]:
        t = time.time()
        r5, r10, cats = evaluate(memory, convs, tuning)
        print(
            f"{tuning}: R@5={r5:.3f} R@10={r10:.3f} by category {cats} ({time.time() - t:.1f}s)",
            flush=True,
        )


if __name__ == "__main__":
    main()
