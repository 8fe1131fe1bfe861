"""The garbage collector's pauses inside searches, with or without the start-up heap frozen.

    .venv/bin/python bench/_gc_pauses.py --index DIR [--freeze] [--namespace locomo-10000]
                                         [--queries 600]

In-process on a filled index (bench/_profile_search.py --index DIR fills one): the index
opens, the model loads and, with --freeze, what is alive then is frozen (gc.freeze(), what
the server does once its model is warm: ikario_rag/preload.py); then LoCoMo questions are
searched (hybrid, n_results 10), every collection timed by gc.callbacks from the first
search on. Printed: collections per generation, their total and longest pause, and the
searches' p50 / p95. Run it with and without --freeze, in turn (each its own process).
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from memory_latency import pct, questions  # noqa: E402

from ikario_rag import search  # noqa: E402
from ikario_rag.memory import Memory  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--namespace", default="locomo-10000")
    parser.add_argument("--queries", type=int, default=600)
    parser.add_argument("--freeze", action="store_true")
    args = parser.parse_args()
    memory = Memory(args.index)
    memory.repair()
    memory.wait_ready()
    if args.freeze:
        gc.freeze()
    pauses: dict[int, list[float]] = {0: [], 1: [], 2: []}
    began = [0.0]

    def timed(phase: str, info: dict) -> None:
        if phase == "start":
            began[0] = time.perf_counter()
        else:
            pauses[info["generation"]].append((time.perf_counter() - began[0]) * 1000)

    searches: list[float] = []
    gc.callbacks.append(timed)
    try:
        for query in questions(args.queries):
            started = time.perf_counter()
            search.search(memory, args.namespace, query, 10, search.Filters(), "hybrid")
            searches.append((time.perf_counter() - started) * 1000)
    finally:
        gc.callbacks.remove(timed)
        memory.close()
    parts = [
        f"gen{g} {len(v)} x, {sum(v):.1f} ms in all, longest {max(v, default=0):.2f} ms"
        for g, v in pauses.items()
    ]
    print(
        f"{'frozen' if args.freeze else 'as started'}: {len(searches)} searches p50 "
        f"{statistics.median(searches):.2f} / p95 {pct(searches, 95):.2f} ms | " + " | ".join(parts)
    )


if __name__ == "__main__":
    main()
