"""Where a search's time goes, in-process (not the benchmark: no stdio, no JSON-RPC).

    .venv/bin/python bench/_profile_search.py [--size 10000] [--queries 200] [--adds 50]

Fills one namespace with `size` LoCoMo-shaped dated turns (bench/memory_latency.py's data;
the index is reused when DIR already holds it), then times each step of a hybrid search
for LoCoMo questions: median and p95 per step, and the whole call. With --adds N, N single
dated turns (each continuing its session, as memory_latency.py's add_thought calls) are
stored first, with the same split. --index DIR keeps the filled index between runs.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from memory_latency import pct, questions, sessions  # noqa: E402

from ikario_rag import search, validate  # noqa: E402
from ikario_rag.memory import Memory  # noqa: E402

SPENT: dict[str, list[float]] = defaultdict(list)


def timed(name, fn):
    def wrapper(*args, **kwargs):
        started = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            SPENT[name].append((time.perf_counter() - started) * 1000)

    return wrapper


def time_adds(memory: Memory, namespace: str, count: int, round_: int) -> None:
    items = [i for s in sessions(count, first_round=round_) for i in s][:count]
    encode, upsert = memory.embedder.encode, memory.vectors.upsert
    memory.embedder.encode = timed("add: embed", encode)
    memory.vectors.upsert = timed("add: chroma upsert", upsert)
    for item in items:
        new = validate.new_memory(item["content"], item["context"])
        started = time.perf_counter()
        memory.add(namespace, [new])
        SPENT["add (whole)"].append((time.perf_counter() - started) * 1000)
    started = time.perf_counter()
    memory.flush()  # what the indexer thread does behind the adds (if not done already)
    SPENT["flush (vectors written behind)"].append((time.perf_counter() - started) * 1000)
    memory.embedder.encode, memory.vectors.upsert = encode, upsert
    report(len(items))
    SPENT.clear()


def report(calls: int) -> None:
    for name, values in SPENT.items():
        print(
            f"{name:22s} median {statistics.median(values):6.2f} ms  p95 {pct(values, 95):6.2f} ms"
            f"  ({len(values) / calls:.0f} per call)",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=10000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--index", type=Path, default=Path("/tmp/ikario-profile-search"))
    parser.add_argument("--mode", default="hybrid")
    parser.add_argument("--adds", type=int, default=0)
    # Turns of a round not stored yet (a turn stored twice would come back as a duplicate).
    parser.add_argument("--round", type=int, default=90)
    args = parser.parse_args()
    memory = Memory(args.index)
    memory.repair()  # what the server's start does; writes wait for it
    memory.wait_ready()
    namespace = f"locomo-{args.size}"
    if memory.store.count_records(namespace) < args.size:
        started = time.perf_counter()
        for session in sessions(args.size):
            items = [validate.new_memory(i["content"], i["context"]) for i in session]
            memory.add(namespace, items)
        memory.flush()  # the vectors are written behind the add
        print(f"filled {args.size} in {time.perf_counter() - started:.1f} s", flush=True)
    if args.adds:
        time_adds(memory, namespace, args.adds, args.round)
    memory.embedder.encode_query = timed("embed", memory.embedder.encode_query)
    memory.embedder.encode_queries = timed("embed (several)", memory.embedder.encode_queries)
    memory.vectors.query_many = timed("chroma query", memory.vectors.query_many)
    memory.store.speakers = timed("sql speakers", memory.store.speakers)
    memory.vectors.vectors = timed("chroma get vectors", memory.vectors.vectors)
    memory.store.text_search = timed("fts text_search", memory.store.text_search)
    memory.store.by_ids = timed("sql by_ids (x2)", memory.store.by_ids)
    memory.store.neighbours = timed("sql neighbours", memory.store.neighbours)
    asked = questions(args.queries)
    for q in asked[:10]:
        search.search(memory, namespace, q, 10, search.Filters(), args.mode)
    SPENT.clear()
    for q in asked:
        started = time.perf_counter()
        out = search.search(memory, namespace, q, 10, search.Filters(), args.mode)
        SPENT["search (whole)"].append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        json.dumps(out)
        SPENT["json.dumps"].append((time.perf_counter() - started) * 1000)
    report(len(asked))
    memory.close()


if __name__ == "__main__":
    main()
