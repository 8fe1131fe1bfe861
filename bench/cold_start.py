"""ikario_rag cold start: from spawning the server to its first answered search.

    .venv/bin/python bench/cold_start.py [--runs 7] [--memories 10000] [--baseline DIR]

Each run spawns `python ikario_rag/server.py` over stdio (as the web app does) on an index
already holding --memories LoCoMo turns (built once, before the runs, by this checkout's
server; the build is not timed), and times: `initialize` answered, then the first
`search_memories` (hybrid, which waits for the embedding model and the vector index) answered.
With --baseline DIR (e.g. `git archive main | tar -x -C DIR`), each run also starts DIR's
server on its own copy of the same index, alternately first and second, so both see the same
machine load. Target: first search <= 5 s (median). With --index DIR the built index is
kept in DIR (built there on the first run, copied from it on the next ones); --namespace
names the namespace searched when DIR was filled otherwise (e.g. bench/_profile_search.py's
10k index, namespace locomo-10000).

Then, where the time goes: each heavy import timed alone in a fresh interpreter (median of
the runs), the ONNX model load, and Chroma opening the index.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _locomo import load  # noqa: E402
from _stdio import ROOT, call, memory_server, wait_indexed  # noqa: E402
from mcp import Client  # noqa: E402
from mcp.client.stdio import StdioServerParameters  # noqa: E402

IMPORTS = [
    "mcp.server.mcpserver",
    "numpy",
    "chromadb",
    "onnxruntime",
    "tokenizers",
    "torch",
    "sentence_transformers",
]


async def build_index(index_dir: Path, memories: int) -> None:
    """`memories` LoCoMo turns in one namespace (the conversations repeated, dates shifted)."""
    turns = [t for c in load() for t in c.turns]
    async with memory_server(index_dir) as client:
        stored, rounds = 0, 0
        while stored < memories:
            batch = []
            for turn in turns[: min(len(turns), memories - stored)]:
                year = int(turn.date[:4]) + rounds
                batch.append(
                    {
                        "content": turn.content,
                        "context": {"kind": "conversation", "date": f"{year}{turn.date[4:]}"},
                    }
                )
            for start in range(0, len(batch), 500):
                out = await call(
                    client, "add_thoughts", items=batch[start : start + 500], namespace="cold"
                )
                stored += len(out["ids"])
            rounds += 1
        await wait_indexed(client, "cold")  # else the next start's repair would index them


async def first_search(root: Path, index_dir: Path, namespace: str = "cold") -> tuple[float, float]:
    """(seconds to `initialize` answered, seconds to the first search answered)."""
    params = StdioServerParameters(
        command=sys.executable,
        args=[str(root / "ikario_rag" / "server.py")],
        env={
            "PATH": "/usr/bin:/bin",
            "HOME": str(Path.home()),
            "IKARIO_INDEX_DIR": str(index_dir),
            "HF_HUB_OFFLINE": "1",
            "IKARIO_LOG_LEVEL": "WARNING",
        },
        cwd="/",
    )
    started = time.perf_counter()
    async with Client(params, mode="legacy") as client:
        initialized = time.perf_counter() - started
        await call(client, "search_memories", query="When did Caroline paint?", namespace=namespace)
        searched = time.perf_counter() - started
    return initialized, searched


def import_seconds(module: str) -> float:
    code = f"import time; t = time.perf_counter(); import {module}; print(time.perf_counter() - t)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=str(ROOT), check=False
    )
    return float(out.stdout.strip()) if out.returncode == 0 else float("nan")


def parts(index_dir: Path) -> dict[str, float]:
    code = (
        "import sys, time; sys.path.insert(0, sys.argv[1]); t = time.perf_counter()\n"
        "from ikario_rag.embed import Embedder\n"
        "e = Embedder().start(); e.wait(600); m = time.perf_counter() - t\n"
        "t = time.perf_counter()\n"
        "from ikario_rag.index import VectorIndex\n"
        "v = VectorIndex(__import__('pathlib').Path(sys.argv[2]) / 'chroma')\n"
        "v.query('cold', e.encode(['x'])[0], 10); c = time.perf_counter() - t\n"
        "print(m, c)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(ROOT), str(index_dir)],
        capture_output=True,
        text=True,
        check=True,
    )
    model, chroma = (float(x) for x in out.stdout.split())
    return {"model load (imports included)": model, "Chroma open + first query": chroma}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--memories", type=int, default=10000)
    parser.add_argument("--baseline", type=Path, default=None)
    parser.add_argument("--index", type=Path, default=None, help="keep the built index here")
    parser.add_argument("--namespace", default="cold", help="the namespace searched")
    parser.add_argument("--skip-parts", action="store_true", help="no import/part timings")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ikario-cold-") as tmp:
        built = args.index or Path(tmp) / "built"
        if not (built / "memories.sqlite3").exists():
            asyncio.run(build_index(built, args.memories))
        roots = {"this": ROOT}
        if args.baseline is not None:
            roots["baseline"] = args.baseline.resolve()
        indexes = {}
        for name in roots:
            indexes[name] = Path(tmp) / name
            shutil.copytree(built, indexes[name])
        results: dict[str, list[tuple[float, float]]] = {name: [] for name in roots}
        for run in range(args.runs):
            order = list(roots) if run % 2 == 0 else list(reversed(roots))
            for name in order:
                results[name].append(
                    asyncio.run(first_search(roots[name], indexes[name], args.namespace))
                )
                init, search = results[name][-1]
                print(f"run {run + 1} {name}: initialize {init:.2f} s, first search {search:.2f} s")
        print(f"\ncold start, {args.memories} memories, median of {args.runs} runs:")
        for name, samples in results.items():
            inits = [s[0] for s in samples]
            searches = [s[1] for s in samples]
            print(
                f"  {name}: initialize {statistics.median(inits):.2f} s, first search "
                f"{statistics.median(searches):.2f} s (min {min(searches):.2f}, max "
                f"{max(searches):.2f})"
            )
        if "baseline" in results:
            ratio = statistics.median(
                a[1] / b[1] for a, b in zip(results["this"], results["baseline"], strict=True)
            )
            print(f"  median per-run ratio this/baseline (first search): {ratio:.2f}")
        if args.skip_parts:
            return
        print("\nwhere the time goes (this checkout's interpreter, median of 3 fresh processes):")
        for module in IMPORTS:
            seconds = statistics.median(import_seconds(module) for _ in range(3))
            print(f"  import {module}: {seconds:.2f} s")
        measured = [parts(indexes["this"]) for _ in range(3)]
        for key in measured[0]:
            print(f"  {key}: {statistics.median(m[key] for m in measured):.2f} s")


if __name__ == "__main__":
    main()
