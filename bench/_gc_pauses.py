"""The garbage collector's pauses inside searches, with and without the start-up heap frozen.

    .venv/bin/python bench/_gc_pauses.py --index DIR [--namespace locomo-10000] [--queries 600]

In-process on a filled index (bench/_profile_search.py --index DIR fills one). LoCoMo
questions are searched (hybrid, n_results 10) in blocks of 50, alternately with what was
alive before the first search frozen (gc.freeze(), what the server does once its model is
warm: ikario_rag/preload.py) and not; every collection is timed by gc.callbacks. Printed
per case: collections per generation, their total and longest pause, and the searches'
p50 / p95.
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

BLOCK = 50


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--namespace", default="locomo-10000")
    parser.add_argument("--queries", type=int, default=600)
    args = parser.parse_args()
    memory = Memory(args.index)
    memory.repair()
    memory.wait_ready()
    asked = questions(args.queries + 20)
    for query in asked[:20]:  # warm up: imports, caches, the sessions' first runs
        search.search(memory, args.namespace, query, 10, search.Filters(), "hybrid")
    pauses = {case: {0: [], 1: [], 2: []} for case in ("as started", "frozen")}
    searches: dict[str, list[float]] = {case: [] for case in pauses}
    case, began = "as started", [0.0]

    def timed(phase: str, info: dict) -> None:
        if phase == "start":
            began[0] = time.perf_counter()
        else:
            pauses[case][info["generation"]].append((time.perf_counter() - began[0]) * 1000)

    gc.callbacks.append(timed)
    try:
        for start in range(20, len(asked), BLOCK):
            case = "frozen" if (start // BLOCK) % 2 else "as started"
            if case == "frozen":
                gc.freeze()
            for query in asked[start : start + BLOCK]:
                started = time.perf_counter()
                search.search(memory, args.namespace, query, 10, search.Filters(), "hybrid")
                searches[case].append((time.perf_counter() - started) * 1000)
            gc.unfreeze()
    finally:
        gc.callbacks.remove(timed)
        memory.close()
    for name, by_generation in pauses.items():
        times = searches[name]
        parts = [
            f"gen{g} {len(v)} x, {sum(v):.1f} ms in all, longest {max(v, default=0):.2f} ms"
            for g, v in by_generation.items()
        ]
        print(
            f"{name}: {len(times)} searches p50 {statistics.median(times):.2f} / p95 "
            f"{pct(times, 95):.2f} ms | " + " | ".join(parts)
        )


if __name__ == "__main__":
    main()
