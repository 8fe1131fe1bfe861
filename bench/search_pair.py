"""Search latency through MCP stdio, this checkout against another, on copies of one index.

    .venv/bin/python bench/search_pair.py --index DIR --baseline CHECKOUT
        [--namespace locomo-10000] [--queries 400] [--mode hybrid]

DIR is an index directory already filled (bench/_profile_search.py --index DIR fills one
with 10,000 dated LoCoMo turns, as bench/memory_latency.py does); each server gets its own
copy of it, so neither writes into the other's. Both servers run at once; every LoCoMo
question (bench/memory_latency.py's, n_results 10) goes to both, alternately first, each
followed by a get_memories of one id (the stdio + JSON-RPC round-trip floor). Printed: p50 /
p95 of each side and of its floor, the median of the per-question ratios this / baseline
(the figure to trust on a shared machine), and how many questions got the same ten results
in the same order on both sides.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _stdio import ROOT, call, memory_server  # noqa: E402
from memory_latency import pct, questions  # noqa: E402


async def timed(client, tool: str, **arguments) -> tuple[float, dict]:
    started = time.perf_counter()
    out = await call(client, tool, **arguments)
    return (time.perf_counter() - started) * 1000, out


async def run(args: argparse.Namespace, work: Path) -> None:
    copies = {}
    for side in ("this", "baseline"):
        copies[side] = work / side
        shutil.copytree(args.index, copies[side])
    async with (
        memory_server(copies["this"]) as this,
        memory_server(copies["baseline"], root=args.baseline) as base,
    ):
        servers = {"this": this, "baseline": base}
        asked = questions(args.queries)
        one = {}
        for name, client in servers.items():
            await call(client, "search_memories", query="warm up", namespace="warm")
            for query in asked[:10]:  # warm each server on other texts than the timed ones
                warm = f"{query} (warm)"
                await call(client, "search_memories", query=warm, namespace=args.namespace)
            recent = await call(client, "get_recent_memories", limit=1, namespace=args.namespace)
            one[name] = recent["memories"][0]["id"]
        times = {name: [] for name in servers}
        floors = {name: [] for name in servers}
        ratios, same = [], 0
        for step, query in enumerate(asked):
            order = ["this", "baseline"] if step % 2 else ["baseline", "this"]
            found = {}
            for name in order:
                ms, out = await timed(
                    servers[name],
                    "search_memories",
                    query=query,
                    n_results=10,
                    mode=args.mode,
                    namespace=args.namespace,
                )
                times[name].append(ms)
                found[name] = [r["id"] for r in out["results"]]
                floor, _ = await timed(
                    servers[name], "get_memories", ids=[one[name]], namespace=args.namespace
                )
                floors[name].append(floor)
            ratios.append(times["this"][-1] / times["baseline"][-1])
            same += found["this"] == found["baseline"]
    for name in servers:
        print(
            f"{name}: search {args.mode} p50 {statistics.median(times[name]):.2f} / p95 "
            f"{pct(times[name], 95):.2f} ms | floor p50 {statistics.median(floors[name]):.2f} / "
            f"p95 {pct(floors[name], 95):.2f} ms"
        )
    print(
        f"median ratio this/baseline {statistics.median(ratios):.3f} over {len(asked)} "
        f"questions; same ten results in the same order: {same}/{len(asked)}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--baseline", type=Path, required=True, help="another checkout")
    parser.add_argument("--namespace", default="locomo-10000")
    parser.add_argument("--queries", type=int, default=400)
    parser.add_argument("--mode", default="hybrid", choices=["hybrid", "semantic", "text"])
    args = parser.parse_args()
    print(f"this = {ROOT}, baseline = {args.baseline}, index = {args.index}", flush=True)
    with tempfile.TemporaryDirectory(prefix="ikario-search-pair-") as work:
        asyncio.run(run(args, Path(work)))


if __name__ == "__main__":
    main()
