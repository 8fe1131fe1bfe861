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
- ingest: the fill's dated turns per second (target >= 150/s);
- add_thought: 100 single dated turns, each continuing its session (so the stored turn
  before it is re-indexed too), p50 (target <= 10 ms);
- search_memories: LoCoMo questions (categories 1-4, each asked once), n_results 10, in
  hybrid, semantic and text modes, p50/p95 (target hybrid p95 <= 15 ms at 10k, <= 25 ms at
  100k).
Beside every timed call, a get_memories call on one id is timed in the same loop: the
stdio + JSON-RPC round-trip floor, printed next to each figure with the ratio.

With --baseline DIR (another checkout, e.g. `git archive main | tar -x -C /tmp/main`), a
server of this checkout and one of DIR get the same turns (filled session by session in
alternating order) and every timed call goes to both, alternately first: the machine's noise
falls on both alike, and the median of the per-call ratios (this / baseline) is the figure to
trust on a shared machine.

With --prefilled DIR (an index directory already holding the namespace `locomo-N`, e.g. the
one bench/_profile_search.py fills, whose turns are the same), each server gets its own copy
of DIR and the fill (and its ingest figure) is skipped: a 10k run then takes minutes, not
the fill's half hour.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _locomo import DATA_DIR, load  # noqa: E402
from _stdio import ROOT, call, memory_server  # noqa: E402

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


async def run(
    index_dir: Path, sizes: list[int], queries: int, prefilled: bool = False, options=None
) -> None:
    adds_wanted, modes = _options(options)
    async with memory_server(index_dir) as client:
        # The first call waits for the model; keep it out of every figure.
        await call(client, "search_memories", query="warm up", namespace="warm")
        for size in sizes:
            namespace = f"locomo-{size}"
            if not prefilled:
                started = time.perf_counter()
                stored = 0
                for session in sessions(size):
                    out = await call(client, "add_thoughts", items=session, namespace=namespace)
                    stored += out["created"]
                elapsed = time.perf_counter() - started
                print(
                    f"N={size}: ingest {stored / elapsed:.0f} dated turns/s ({stored} turns in "
                    f"{elapsed:.1f} s, one add_thoughts per session) | target >= 150/s",
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
            for item in singles if adds_wanted else []:
                ms, _ = await timed(call(client, "add_thought", **item, namespace=namespace))
                adds.append(ms)
                floor.append(await floor_call())
            if adds:
                print(f"N={size}: " + line("add_thought", adds, floor, "target p50 <= 10 ms"))
            target = "target p95 <= 15 ms" if size <= 10000 else "target p95 <= 25 ms"
            for mode in modes:
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


async def run_paired(
    index_dir: Path, baseline: Path, size: int, queries: int, prefilled: bool = False, options=None
) -> None:
    adds_wanted, modes = _options(options)
    namespace = f"locomo-{size}"
    async with (
        memory_server(index_dir / "this") as this,
        memory_server(index_dir / "baseline", root=baseline) as base,
    ):
        servers = {"this": this, "baseline": base}
        for client in servers.values():
            await call(client, "search_memories", query="warm up", namespace="warm")
        fill = {"this": 0.0, "baseline": 0.0}
        stored = 0
        for step, session in enumerate([] if prefilled else sessions(size)):
            names = ["this", "baseline"] if step % 2 else ["baseline", "this"]
            for name in names:
                ms, _ = await timed(
                    call(servers[name], "add_thoughts", items=session, namespace=namespace)
                )
                fill[name] += ms / 1000
            stored += len(session)
        if stored:
            print(
                f"N={size}: ingest this {stored / fill['this']:.0f} turns/s | baseline "
                f"{stored / fill['baseline']:.0f} turns/s | ratio this/baseline (throughput) "
                f"{fill['baseline'] / fill['this']:.2f}x | target >= 150/s",
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
        if adds_wanted:
            adds = [
                await both(step, "add_thought", **item, namespace=namespace)
                for step, item in enumerate(singles)
            ]
            report("add_thought", adds)
        for mode in modes:
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


def _options(options: argparse.Namespace | None) -> tuple[bool, list[str]]:
    """(whether to time add_thought, the search modes to time)."""
    if options is None:
        return True, ["hybrid", "semantic", "text"]
    return not options.skip_adds, options.modes.split(",")


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
    parser.add_argument(
        "--prefilled", type=Path, default=None, help="an index holding locomo-N: copied, not filled"
    )
    parser.add_argument(
        "--skip-adds", action="store_true", help="no add_thought calls (searches only)"
    )
    parser.add_argument("--modes", default="hybrid,semantic,text", help="search modes to time")
    args = parser.parse_args()
    describe_run(args)
    sizes = [int(s) for s in args.sizes.split(",")]
    started = time.monotonic()
    prefilled = args.prefilled is not None
    if args.baseline is not None:
        with tempfile.TemporaryDirectory(prefix="ikario-latency-") as tmp:
            for size in sizes:
                place = Path(tmp) / str(size)
                if prefilled:
                    for side in ("this", "baseline"):
                        shutil.copytree(args.prefilled, place / side)
                asyncio.run(
                    run_paired(place, args.baseline.resolve(), size, args.queries, prefilled, args)
                )
    elif args.index_dir is None or prefilled:
        with tempfile.TemporaryDirectory(prefix="ikario-latency-") as tmp:
            if prefilled:
                shutil.copytree(args.prefilled, Path(tmp), dirs_exist_ok=True)
            asyncio.run(run(Path(tmp), sizes, args.queries, prefilled, args))
    else:
        asyncio.run(run(args.index_dir, sizes, args.queries, options=args))
    print(
        f"done in {time.monotonic() - started:.0f} s; load average {os.getloadavg()[0]:.2f} "
        "at the end",
        flush=True,
    )


if __name__ == "__main__":
    main()
