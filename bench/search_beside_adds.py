"""Search latency in one memory server while it stores batches for another client.

    .venv/bin/python bench/search_beside_adds.py --index DIR [--namespace locomo-10000]
        [--queries 400] [--adds-into NAMESPACE]

What a reply's recall search meets when the background worker saves a conversation through
the same server: one server over stdio on a copy of DIR (a filled index, e.g. from
bench/_profile_search.py --index DIR), told that a reply is being written (the app's
signal, ikario_rag/foreground.py, held for the whole run) so that its indexer waits as it
does during a reply; LoCoMo questions are searched (hybrid, n_results 10) in blocks of 25,
every other block while add_thoughts calls (one LoCoMo session each, into namespaces of
their own, or with --adds-into all into one namespace, as one user's auto-save writes)
run back to back on the same connection. Printed: p50 / p95 of the searches with the adds
idle and running.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _stdio import call, memory_server  # noqa: E402
from memory_latency import pct, questions, sessions  # noqa: E402

from ikario_rag.client import tell_foreground  # noqa: E402

BLOCK = 25


async def run(args: argparse.Namespace, index: Path) -> None:
    # The hold lasts the whole run (the app renews it per reply).
    os.environ.update(IKARIO_FOREGROUND_HOLD="3600", IKARIO_FOREGROUND_MOST="3600")
    async with memory_server(index) as client:
        await call(client, "search_memories", query="warm up", namespace="warm")
        if not tell_foreground(index, busy=True):
            raise SystemExit("the server could not be told that a reply is being written")
        batches = sessions(3000, first_round=120)
        adding, stopping = asyncio.Event(), asyncio.Event()

        added = {"calls": 0, "items": 0}

        async def adder() -> None:
            done = 0
            while not stopping.is_set():
                await adding.wait()
                batch = batches[done % len(batches)]
                namespace = args.adds_into or f"saved-{done}"
                await call(client, "add_thoughts", items=batch, namespace=namespace)
                done += 1
                added["calls"] += 1
                added["items"] += len(batch)

        task = asyncio.create_task(adder())
        spent: dict[bool, list[float]] = {False: [], True: []}
        asked = questions(args.queries)
        for start in range(0, len(asked), BLOCK):
            busy = (start // BLOCK) % 2 == 1
            (adding.set if busy else adding.clear)()
            await asyncio.sleep(0.05)  # an add under way when the block changed ends first
            for query in asked[start : start + BLOCK]:
                started = time.perf_counter()
                await call(
                    client, "search_memories", query=query, namespace=args.namespace, n_results=10
                )
                spent[busy].append((time.perf_counter() - started) * 1000)
        stopping.set()
        adding.set()
        await task
    # The load the searches met: a store that lets adds through faster gives them more.
    busy_s = sum(spent[True]) / 1000
    print(
        f"adds: {added['calls']} add_thoughts calls, {added['items']} items, during"
        f" {busy_s:.1f} s of searches beside them ({added['calls'] / busy_s:.1f} calls/s)"
    )
    for busy, values in spent.items():
        label = "adds running" if busy else "adds idle   "
        print(
            f"{label}: {len(values)} searches p50 {statistics.median(values):.2f} / p95 "
            f"{pct(values, 95):.2f} ms"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--namespace", default="locomo-10000")
    parser.add_argument("--queries", type=int, default=400)
    parser.add_argument("--adds-into", default="", help="one namespace for every add")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ikario-beside-adds-") as work:
        index = Path(work) / "index"
        shutil.copytree(args.index, index)
        asyncio.run(run(args, index))


if __name__ == "__main__":
    main()
