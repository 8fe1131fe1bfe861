"""ikario_rag latency and ingest on LoCoMo-shaped data, through the real MCP server over stdio
(`make bench-memory`, part 2).

    .venv/bin/python bench/memory_latency.py [--sizes 10000,100000] [--queries 200]
    .venv/bin/python bench/memory_latency.py --baseline DIR [--sizes 10000]

For each size N, one namespace is filled with N dated conversation turns built from the
LoCoMo dev conversations (LOCOMO_DIR): the 2,760 turns repeated as often as needed, each
round with other speaker names and its dates moved years later, so that every turn is a new
text in a session of its own; stored as the web app and the recall benchmark store them:
`add_thoughts`, one call per session, kind "conversation", the session's date (each turn is
indexed with the turns before and after it). Then, on that namespace:
- ingest: the fill's dated turns per second (target >= 150/s), twice: committed (the
  add_thoughts calls: records durable and found by text) and indexed (until every vector,
  written behind the add by the server's indexer thread, is in: memory_stats' `unindexed`
  is 0);
- add_thought: 100 single dated turns, each continuing its session (so the stored turn
  before it is re-indexed too), p50 (target <= 10 ms); one after the other, the indexer
  working behind them; then the time until their vectors are written;
- search_memories: LoCoMo questions (categories 1-4, each asked once), n_results 10, in
  hybrid, semantic and text modes, p50/p95 (target hybrid p95 <= 15 ms at 10k, <= 25 ms at
  100k).
Beside every timed call, a get_memories call on one id is timed in the same loop: the
stdio + JSON-RPC round-trip floor, printed next to each figure with the ratio.

With --baseline DIR (another checkout, e.g. `git archive main | tar -x -C /tmp/main`), a
server of this checkout and one of DIR get the same turns (filled session by session in
alternating order) and every timed call goes to both, alternately first: the machine's noise
falls on both alike, and the median of the per-call ratios (this / baseline) is the figure to
trust on a shared machine. Vectors written behind the add must not slow the other server
down, so there the fill goes in chunks of about CHUNK turns, alternately first, and each
server's chunk is timed until its vectors are all written (before the other's chunk starts);
each add_thought is followed, untimed, by the writing of its vectors.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _locomo import DATA_DIR, load  # noqa: E402
from _stdio import ROOT, call, memory_server, wait_indexed  # noqa: E402

# Turns per fill chunk of the paired run (see the docstring).
CHUNK = 500

FIRST_NAMES = [
    *("Amara", "Bruno", "Chiara", "Dmitri", "Elif", "Farah", "Goran", "Hana", "Ismael"),
    *("Jana", "Kofi", "Lucia", "Mateo", "Nadia", "Oskar", "Priya", "Quentin", "Rosa"),
    *("Samir", "Tala", "Umar", "Vera", "Wes", "Ximena", "Yusuf", "Zoe"),
]


def speakers_of(conversations) -> list[str]:
    names = []
    for conversation in conversations:
        for turn in conversation.turns:
            name = turn.content.split(":", 1)[0]
            if name not in names:
                names.append(name)
    return names


def sessions(size: int, first_round: int = 0) -> list[list[dict]]:
    """`size` dated turns as add_thoughts items, grouped by session (a session = one date)."""
    conversations = load()
    speakers = speakers_of(conversations)
    out: list[list[dict]] = []
    total, round_ = 0, first_round
    while total < size:
        for c_pos, conversation in enumerate(conversations):
            current: list[dict] = []
            last_date = None
            for turn in conversation.turns:
                if total >= size:
                    break
                speaker, said = turn.content.split(":", 1)
                if round_:
                    # Another person each round: the same words, a different memory.
                    pick = (speakers.index(speaker) * 7 + round_ * 3 + c_pos) % len(FIRST_NAMES)
                    speaker = f"{FIRST_NAMES[pick]} {round_}"
                moved = datetime.fromisoformat(turn.date)
                moved = moved.replace(year=moved.year + 4 * round_)
                if last_date is not None and moved != last_date and current:
                    out.append(current)
                    current = []
                last_date = moved
                current.append(
                    {
                        "content": f"{speaker}:{said}",
                        "context": {"kind": "conversation", "date": moved.isoformat()},
                    }
                )
                total += 1
            if current:
                out.append(current)
            if total >= size:
                break
        round_ += 1
    return out


def questions(count: int) -> list[str]:
    asked = [q.question for c in load() for q in c.questions]
    return [asked[i % len(asked)] for i in range(count)]


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def line(name: str, values: list[float], floor: list[float], target: str) -> str:
    p50, p95 = statistics.median(values), pct(values, 95)
    f50, f95 = statistics.median(floor), pct(floor, 95)
    return (
        f"{name}: p50 {p50:.1f} ms, p95 {p95:.1f} ms | floor (get_memories) p50 {f50:.1f} ms, "
        f"p95 {f95:.1f} ms | p50 {p50 / f50:.1f}x floor | {target}"
    )


async def timed(coro) -> tuple[float, dict]:
    started = time.perf_counter()
    result = await coro
    return (time.perf_counter() - started) * 1000, result


def describe_run(args: argparse.Namespace) -> None:
    """What a re-run on a quiet machine needs to know."""
    try:
        commit = subprocess.run(
            ["git", "-C", str(ROOT), "describe", "--always", "--dirty"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
    except OSError:
        commit = "?"
    import onnxruntime

    print(f"command: {' '.join([Path(sys.executable).name, *sys.argv])}")
    print(
        f"checkout {ROOT} at {commit}; baseline {args.baseline or '-'}; LOCOMO_DIR={DATA_DIR}; "
        f"python {platform.python_version()}, onnxruntime {onnxruntime.__version__}"
    )
    threads = {
        name: os.environ.get(name, "default")
        for name in ("IKARIO_QUERY_THREADS", "IKARIO_BATCH_THREADS")
    }
    print(
        f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} at start; {threads}; "
        f"sizes {args.sizes}, {args.queries} questions per mode",
        flush=True,
    )


async def run(index_dir: Path, sizes: list[int], queries: int) -> None:
    async with memory_server(index_dir) as client:
        # The first call waits for the model; keep it out of every figure.
        await call(client, "search_memories", query="warm up", namespace="warm")
        for size in sizes:
            namespace = f"locomo-{size}"
            started = time.perf_counter()
            stored = 0
            for session in sessions(size):
                out = await call(client, "add_thoughts", items=session, namespace=namespace)
                stored += out["created"]
            elapsed = time.perf_counter() - started
            behind = await wait_indexed(client, namespace)
            print(
                f"N={size}: ingest {stored / elapsed:.0f} dated turns/s committed ({stored} "
                f"turns in {elapsed:.1f} s, one add_thoughts per session); every vector "
                f"written {behind:.1f} s later: {stored / (elapsed + behind):.0f} turns/s "
                "indexed | target >= 150/s",
                flush=True,
            )
            one = (await call(client, "get_recent_memories", limit=1, namespace=namespace))[
                "memories"
            ][0]["id"]

            async def floor_call(memory_id: str = one, ns: str = namespace) -> float:
                ms, _ = await timed(call(client, "get_memories", ids=[memory_id], namespace=ns))
                return ms

            singles = [item for s in sessions(100, first_round=99) for item in s][:100]
            adds, floor = [], []
            for item in singles:
                ms, _ = await timed(call(client, "add_thought", **item, namespace=namespace))
                adds.append(ms)
                floor.append(await floor_call())
            print(f"N={size}: " + line("add_thought", adds, floor, "target p50 <= 10 ms"))
            behind = await wait_indexed(client, namespace)
            print(f"N={size}: their vectors written {behind:.2f} s after the last add_thought")
            target = "target p95 <= 15 ms" if size <= 10000 else "target p95 <= 25 ms"
            for mode in ("hybrid", "semantic", "text"):
                times, floor = [], []
                for query in questions(queries):
                    ms, _ = await timed(
                        call(
                            client,
                            "search_memories",
                            query=query,
                            n_results=10,
                            mode=mode,
                            namespace=namespace,
                        )
                    )
                    times.append(ms)
                    floor.append(await floor_call())
                shown = target if mode == "hybrid" else ""
                print(f"N={size}: " + line(f"search {mode}", times, floor, shown), flush=True)


async def run_paired(index_dir: Path, baseline: Path, size: int, queries: int) -> None:
    namespace = f"locomo-{size}"
    async with (
        memory_server(index_dir / "this") as this,
        memory_server(index_dir / "baseline", root=baseline) as base,
    ):
        servers = {"this": this, "baseline": base}
        for client in servers.values():
            await call(client, "search_memories", query="warm up", namespace="warm")
        fill = {"this": 0.0, "this indexed": 0.0, "baseline": 0.0, "baseline indexed": 0.0}
        chunks: list[list[list[dict]]] = [[]]
        for session in sessions(size):
            if sum(len(s) for s in chunks[-1]) >= CHUNK:
                chunks.append([])
            chunks[-1].append(session)
        stored = 0
        for step, chunk in enumerate(chunks):
            names = ["this", "baseline"] if step % 2 else ["baseline", "this"]
            for name in names:
                started = time.perf_counter()
                for session in chunk:
                    await call(servers[name], "add_thoughts", items=session, namespace=namespace)
                fill[name] += time.perf_counter() - started
                # Each side's vectors are all written before the other side's chunk starts (a
                # baseline that writes them in the add is done at once).
                fill[f"{name} indexed"] += await wait_indexed(servers[name], namespace)
            stored += sum(len(s) for s in chunk)
        indexed = {name: fill[name] + fill[f"{name} indexed"] for name in servers}
        print(
            f"N={size}: ingest this {stored / fill['this']:.0f} turns/s committed, "
            f"{stored / indexed['this']:.0f} turns/s indexed | baseline "
            f"{stored / fill['baseline']:.0f} turns/s committed, "
            f"{stored / indexed['baseline']:.0f} turns/s indexed | ratio this/baseline "
            f"(throughput) committed {fill['baseline'] / fill['this']:.2f}x, indexed "
            f"{indexed['baseline'] / indexed['this']:.2f}x | target >= 150/s",
            flush=True,
        )
        ids = {
            name: (await call(client, "get_recent_memories", limit=1, namespace=namespace))[
                "memories"
            ][0]["id"]
            for name, client in servers.items()
        }

        async def both(step: int, tool: str, **arguments) -> dict[str, float]:
            names = ["this", "baseline"] if step % 2 else ["baseline", "this"]
            out = {}
            for name in names:
                out[name] = (await timed(call(servers[name], tool, **arguments)))[0]
                if tool == "add_thought":
                    await wait_indexed(servers[name], namespace)  # not on the other's time
                floor_ms, _ = await timed(
                    call(servers[name], "get_memories", ids=[ids[name]], namespace=namespace)
                )
                out[f"{name} floor"] = floor_ms
            return out

        def report(name: str, samples: list[dict[str, float]]) -> None:
            parts = []
            for side in ("this", "baseline"):
                values = [s[side] for s in samples]
                floor = [s[f"{side} floor"] for s in samples]
                parts.append(
                    f"{side} p50 {statistics.median(values):.1f} / p95 {pct(values, 95):.1f} ms "
                    f"(floor p50 {statistics.median(floor):.1f})"
                )
            ratio = statistics.median(s["this"] / s["baseline"] for s in samples)
            print(
                f"N={size}: {name}: {' | '.join(parts)} | median ratio this/baseline {ratio:.3f}",
                flush=True,
            )

        singles = [item for s in sessions(100, first_round=99) for item in s][:100]
        adds = [
            await both(step, "add_thought", **item, namespace=namespace)
            for step, item in enumerate(singles)
        ]
        report("add_thought", adds)
        for mode in ("hybrid", "semantic", "text"):
            samples = [
                await both(
                    step,
                    "search_memories",
                    query=query,
                    n_results=10,
                    mode=mode,
                    namespace=namespace,
                )
                for step, query in enumerate(questions(queries))
            ]
            report(f"search {mode}", samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sizes",
        default=os.environ.get("SIZES", "10000"),
        help="comma-separated, e.g. 10000,100000 (or SIZES=...)",
    )
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--index-dir", type=Path, default=None)
    parser.add_argument("--baseline", type=Path, default=None, help="a checkout to compare with")
    args = parser.parse_args()
    describe_run(args)
    sizes = [int(s) for s in args.sizes.split(",")]
    started = time.monotonic()
    if args.baseline is not None:
        with tempfile.TemporaryDirectory(prefix="ikario-latency-") as tmp:
            for size in sizes:
                asyncio.run(
                    run_paired(Path(tmp) / str(size), args.baseline.resolve(), size, args.queries)
                )
    elif args.index_dir is None:
        with tempfile.TemporaryDirectory(prefix="ikario-latency-") as tmp:
            asyncio.run(run(Path(tmp), sizes, args.queries))
    else:
        asyncio.run(run(args.index_dir, sizes, args.queries))
    print(
        f"done in {time.monotonic() - started:.0f} s; load average {os.getloadavg()[0]:.2f} "
        "at the end",
        flush=True,
    )


if __name__ == "__main__":
    main()
