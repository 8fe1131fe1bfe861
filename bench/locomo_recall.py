"""LoCoMo evidence recall through the real MCP server over stdio (`make bench-memory`, part 1).

    .venv/bin/python bench/locomo_recall.py [--index-dir DIR] [--modes hybrid,semantic,text]

Every dialog turn of the five conversations of the LoCoMo dev split (LOCOMO_DIR) is written as one
memory (kind conversation, source = its dia_id, date = its session's date), one namespace per
conversation, with add_thoughts (one call per session). Each question of categories 1-4 is then
searched with n_results 10; recall@k is the share of its evidence dia_ids among the top k
sources, averaged over questions. Targets: R@10 >= 0.80, R@5 >= 0.70.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _locomo  # noqa: E402
from _stdio import call, memory_server, wait_indexed  # noqa: E402

CATEGORIES = {1: "multi_hop", 2: "temporal", 3: "open_domain", 4: "single_hop"}


def load() -> list[_locomo.Conversation]:
    return _locomo.load()


async def store(client, convs: list[_locomo.Conversation]) -> None:
    """Every turn as one memory, one add_thoughts call per session."""
    started = time.perf_counter()
    for conv in convs:
        sessions: dict[str, list[_locomo.Turn]] = {}
        for turn in conv.turns:
            sessions.setdefault(turn.date, []).append(turn)
        for turns in sessions.values():
            await call(
                client,
                "add_thoughts",
                namespace=f"locomo-{conv.name}",
                items=[
                    {
                        "content": t.content,
                        "context": {"kind": "conversation", "source": t.dia_id, "date": t.date},
                    }
                    for t in turns
                ],
            )
    turns = sum(len(c.turns) for c in convs)
    print(f"stored {turns} turns in {time.perf_counter() - started:.1f}s", flush=True)
    for conv in convs:  # the vectors are written behind the add
        await wait_indexed(client, f"locomo-{conv.name}")
    print(f"every vector written {time.perf_counter() - started:.1f}s after the start", flush=True)


async def measure(client, convs: list[_locomo.Conversation], mode: str) -> dict[str, float]:
    """{R@5, R@10, R@10 per category} of one search mode."""
    at5 = at10 = 0.0
    count = 0
    by_category: dict[int, list[float]] = {}
    for conv in convs:
        for q in conv.questions:
            found = await call(
                client,
                "search_memories",
                query=q.question,
                n_results=10,
                mode=mode,
                namespace=f"locomo-{conv.name}",
            )
            sources = [r["metadata"]["source"] for r in found["results"]]
            at5 += _locomo.recall(sources, q.evidence, 5)
            r10 = _locomo.recall(sources, q.evidence, 10)
            at10 += r10
            by_category.setdefault(q.category, []).append(r10)
            count += 1
    figures = {"R@5": round(at5 / count, 3), "R@10": round(at10 / count, 3)}
    for category, values in sorted(by_category.items()):
        figures[f"R@10.{CATEGORIES[category]}"] = round(sum(values) / len(values), 3)
    return figures


async def run(index_dir: Path, modes: list[str]) -> None:
    convs = load()
    async with memory_server(index_dir) as client:
        await store(client, convs)
        for mode in modes:
            started = time.perf_counter()
            figures = await measure(client, convs, mode)
            shown = " ".join(f"{k}={v:.3f}" for k, v in figures.items())
            print(f"mode={mode}: {shown} | {time.perf_counter() - started:.1f}s", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index-dir", type=Path, default=None)
    parser.add_argument("--modes", default="hybrid,semantic,text")
    args = parser.parse_args()
    if args.index_dir is None:
        with tempfile.TemporaryDirectory(prefix="ikario-locomo-") as tmp:
            asyncio.run(run(Path(tmp), args.modes.split(",")))
    else:
        asyncio.run(run(args.index_dir, args.modes.split(",")))


if __name__ == "__main__":
    main()
