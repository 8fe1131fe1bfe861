"""ikario_rag latency through the real MCP server over stdio (`make bench-memory`, part 2).

    .venv/bin/python bench/memory_latency.py [--sizes 10000,100000] [--queries 200]
    .venv/bin/python bench/memory_latency.py --baseline /tmp/before [--sizes 10000]

For each size N: fill one namespace with N synthetic memories via add_thoughts (batches of
500; throughput in memories/s), time 100 single add_thought calls, then time search_memories
(n_results 10) for distinct queries in hybrid, semantic and text modes. Beside every timing,
a get_memories call on one id is timed in the same loop: the stdio round-trip floor, so the
ratio says what the search itself costs. Targets: search p95 <= 25 ms at 10k and <= 50 ms at
100k; add_thoughts >= 100 memories/s; add_thought p50 <= 30 ms.

With --baseline DIR (another checkout, e.g. `git worktree add /tmp/before <commit>`), the
same memories go into a server of this checkout and one of DIR, and every timed call goes to
both, in an order that alternates call by call: the machine's noise falls on both alike, and
the median of the per-call ratios (this / baseline) is the figure to trust.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _stdio import call, memory_server  # noqa: E402

PEOPLE = [
    "Alice",
    "Bruno",
    "Chloe",
    "David",
    "Emma",
    "Farid",
    "Gaelle",
    "Hugo",
    "Ines",
    "Jules",
    "Karim",
    "Lea",
    "Mickael",
    "Nora",
]
VERBS = [
    "went hiking in",
    "bought a new bike in",
    "started a pottery class in",
    "moved to",
    "visited a museum in",
    "adopted a dog in",
    "ran a half marathon in",
    "found a new job in",
    "cooked a curry for friends in",
    "painted a mural in",
    "lost a wallet in",
    "celebrated a birthday in",
]
PLACES = [
    "Paris",
    "Lyon",
    "Naxos",
    "Berlin",
    "Oslo",
    "Madrid",
    "Lisbon",
    "Quebec",
    "Kyoto",
    "Nairobi",
    "Lima",
    "Porto",
    "Turin",
]
TOPICS = [
    "it was tiring but worth it",
    "the weather was terrible",
    "everyone loved it",
    "they want to do it again next year",
    "it cost more than expected",
    "a friend came along",
]


def sentence(rng: random.Random, serial: int) -> str:
    return (
        f"{rng.choice(PEOPLE)} {rng.choice(VERBS)} {rng.choice(PLACES)} in "
        f"{rng.randint(2015, 2026)}; {rng.choice(TOPICS)} (note {serial})"
    )


def question(rng: random.Random) -> str:
    verb = rng.choice(VERBS).rsplit(" ", 1)[0]
    return f"When did {rng.choice(PEOPLE)} {verb} {rng.choice(PLACES)}?"


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def line(name: str, values: list[float], floor: list[float]) -> str:
    p50, p95 = statistics.median(values), pct(values, 95)
    f50, f95 = statistics.median(floor), pct(floor, 95)
    return (
        f"{name}: p50 {p50:.1f} ms, p95 {p95:.1f} ms | round-trip floor (get_memories) "
        f"p50 {f50:.1f} ms, p95 {f95:.1f} ms | ratio p50 {p50 / f50:.1f}x"
    )


async def timed(coro) -> tuple[float, dict]:
    started = time.perf_counter()
    result = await coro
    return (time.perf_counter() - started) * 1000, result


async def run(index_dir: Path, sizes: list[int], queries: int) -> None:
    rng = random.Random(7)
    serial = 0
    async with memory_server(index_dir) as client:
        # The first call waits for the model; keep it out of every figure.
        await call(client, "search_memories", query="warm up", namespace="warm")
        for size in sizes:
            namespace = f"bench-{size}"
            started = time.perf_counter()
            stored = 0
            while stored < size:
                batch = min(500, size - stored)
                items = [
                    {"content": sentence(rng, serial + i), "context": {"kind": "note"}}
                    for i in range(batch)
                ]
                serial += batch
                out = await call(client, "add_thoughts", items=items, namespace=namespace)
                stored += out["created"]
            elapsed = time.perf_counter() - started
            print(f"N={size}: add_thoughts {size / elapsed:.0f} memories/s ({elapsed:.1f}s)")
            one = (await call(client, "get_recent_memories", limit=1, namespace=namespace))[
                "memories"
            ][0]["id"]

            async def floor_call(memory_id: str = one, ns: str = namespace) -> float:
                ms, _ = await timed(call(client, "get_memories", ids=[memory_id], namespace=ns))
                return ms

            adds, floor = [], []
            for _ in range(100):
                serial += 1
                ms, _ = await timed(
                    call(
                        client,
                        "add_thought",
                        content=sentence(rng, serial),
                        context={"kind": "note"},
                        namespace=namespace,
                    )
                )
                adds.append(ms)
                floor.append(await floor_call())
            print(f"N={size}: " + line("add_thought", adds, floor))
            for mode in ("hybrid", "semantic", "text"):
                times, floor = [], []
                for _ in range(queries):
                    ms, _ = await timed(
                        call(
                            client,
                            "search_memories",
                            query=question(rng) + f" {rng.randint(0, 10**6)}",
                            n_results=10,
                            mode=mode,
                            namespace=namespace,
                        )
                    )
                    times.append(ms)
                    floor.append(await floor_call())
                print(f"N={size}: " + line(f"search_memories {mode}", times, floor), flush=True)


async def run_paired(index_dir: Path, baseline: Path, size: int, queries: int) -> None:
    rng = random.Random(7)
    namespace = f"bench-{size}"
    async with (
        memory_server(index_dir / "this") as this,
        memory_server(index_dir / "baseline", root=baseline) as base,
    ):
        servers = {"this": this, "baseline": base}
        for client in servers.values():
            await call(client, "search_memories", query="warm up", namespace="warm")
        for start in range(0, size, 500):
            items = [
                {"content": sentence(rng, start + i), "context": {"kind": "note"}}
                for i in range(min(500, size - start))
            ]
            for client in servers.values():
                await call(client, "add_thoughts", items=items, namespace=namespace)
        print(f"N={size}: both servers filled", flush=True)

        async def both(step: int, tool: str, **arguments) -> dict[str, float]:
            names = ["this", "baseline"] if step % 2 else ["baseline", "this"]
            return {n: (await timed(call(servers[n], tool, **arguments)))[0] for n in names}

        def report(name: str, samples: list[dict[str, float]]) -> None:
            mine = [s["this"] for s in samples]
            theirs = [s["baseline"] for s in samples]
            ratio = statistics.median(s["this"] / s["baseline"] for s in samples)
            print(
                f"N={size}: {name}: this p50 {statistics.median(mine):.1f} / p95 "
                f"{pct(mine, 95):.1f} ms | baseline p50 {statistics.median(theirs):.1f} / p95 "
                f"{pct(theirs, 95):.1f} ms | median ratio this/baseline {ratio:.3f}",
                flush=True,
            )

        adds = [
            await both(step, "add_thought", content=sentence(rng, size + step), namespace=namespace)
            for step in range(100)
        ]
        report("add_thought", adds)
        for mode in ("hybrid", "semantic", "text"):
            samples = []
            for step in range(queries):
                query = question(rng) + f" {rng.randint(0, 10**6)}"
                samples.append(
                    await both(
                        step,
                        "search_memories",
                        query=query,
                        n_results=10,
                        mode=mode,
                        namespace=namespace,
                    )
                )
            report(f"search_memories {mode}", samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000", help="comma-separated, e.g. 10000,100000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--index-dir", type=Path, default=None)
    parser.add_argument("--baseline", type=Path, default=None, help="a checkout to compare with")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.baseline is not None:
        with tempfile.TemporaryDirectory(prefix="ikario-latency-") as tmp:
            for size in sizes:
                asyncio.run(
                    run_paired(Path(tmp) / str(size), args.baseline.resolve(), size, args.queries)
                )
        return
    if args.index_dir is None:
        with tempfile.TemporaryDirectory(prefix="ikario-latency-") as tmp:
            asyncio.run(run(Path(tmp), sizes, args.queries))
    else:
        asyncio.run(run(args.index_dir, sizes, args.queries))


if __name__ == "__main__":
    main()
