"""A search's query texts on the int8 model: one after the other, or side by side.

    .venv/bin/python bench/query_forms.py --index DIR [--namespace locomo-10000]
        [--queries 300]

In-process, on a filled index (bench/_profile_search.py --index DIR fills one with 10,000
dated LoCoMo turns). For each LoCoMo question, the texts a hybrid search embeds (the
question, and its forms with a speaker it names said as "I": ikario_rag/search.py) are
embedded with the index's model, the query cache emptied first, both ways in a random
order: on this thread one after the other, and side by side (the second text on the
embedder's query partner thread, as ikario_rag runs them). Printed: p50 / p95 of each, for
the questions with more than one text, and the median of the per-question ratios.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from memory_latency import pct, questions  # noqa: E402

from ikario_rag import search  # noqa: E402
from ikario_rag.memory import Memory  # noqa: E402


def timed(memory: Memory, texts: list[str]) -> float:
    memory.embedder._query_cache.clear()
    started = time.perf_counter()
    memory.embedder.query_vectors(texts, quantised=memory.quantised)
    return (time.perf_counter() - started) * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--index", required=True)
    parser.add_argument("--namespace", default="locomo-10000")
    parser.add_argument("--queries", type=int, default=300)
    args = parser.parse_args()
    memory = Memory(args.index)
    memory.repair()  # what a server does at start: the index checked, then ready
    memory.wait_ready()
    partner = memory.embedder._query_partner
    if partner is None:
        sys.exit("one core: the texts always run one after the other")
    spent: dict[str, list[float]] = {"in turn": [], "side by side": []}
    ratios = []
    rng = random.Random(7)
    asked = questions(args.queries)
    for question in asked[:20]:  # warm-up: sessions, caches, the partner thread
        forms = search._unnamed_forms(memory, args.namespace, question, search.DEFAULT_TUNING)
        timed(memory, [question, *forms.values()])
    for question in asked:
        forms = search._unnamed_forms(memory, args.namespace, question, search.DEFAULT_TUNING)
        texts = [question, *forms.values()]
        if len(texts) < 2:
            continue
        got = {}
        for way in rng.sample(list(spent), 2):
            memory.embedder._query_partner = partner if way == "side by side" else None
            got[way] = timed(memory, texts)
            spent[way].append(got[way])
        ratios.append(got["side by side"] / got["in turn"])
    memory.embedder._query_partner = partner
    memory.close()
    print(f"{len(ratios)} of {len(asked)} questions embed more than one text, int8 model")
    for way, values in spent.items():
        print(f"  {way}: p50 {pct(values, 50):.2f} / p95 {pct(values, 95):.2f} ms")
    print(f"  median ratio side by side / in turn: {statistics.median(ratios):.3f}")


if __name__ == "__main__":
    main()
