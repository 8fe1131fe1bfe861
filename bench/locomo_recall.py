"""LoCoMo evidence recall through the real MCP server over stdio (`make bench-memory`, part 1).

    .venv/bin/python bench/locomo_recall.py [--index-dir DIR] [--mode hybrid]

Every dialog turn of the five conversations of the LoCoMo dev split (LOCOMO_DIR) is written as one
memory (kind conversation, source = its dia_id, date = its session's date), one namespace per
conversation, with add_thoughts (one call per session). Each question of categories 1-4 is then
searched with n_results 10; recall@k is the share of its evidence dia_ids among the top k
sources, averaged over questions. Targets: R@10 >= 0.75, R@5 >= 0.65.
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
from _stdio import call, memory_server  # noqa: E402


async def run(index_dir: Path, modes: list[str]) -> None:
    convs = _locomo.load()
    async with memory_server(index_dir) as client:
        started = time.perf_counter()
        for conv in convs:
            namespace = f"locomo-{conv.name}"
            sessions: dict[str, list[_locomo.Turn]] = {}
            for turn in conv.turns:
                sessions.setdefault(turn.date, []).append(turn)
            for turns in sessions.values():
                await call(
                    client,
                    "add_thoughts",
                    namespace=namespace,
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
        for mode in modes:
            at5 = at10 = 0.0
            count = 0
            by_category: dict[int, list[float]] = {}
            started = time.perf_counter()
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
            cats = ", ".join(
                f"cat{c} {sum(v) / len(v):.3f} (n={len(v)})" for c, v in sorted(by_category.items())
            )
            print(
                f"mode={mode}: questions={count} R@5={at5 / count:.3f} R@10={at10 / count:.3f}"
                f" | R@10 by category: {cats} | {time.perf_counter() - started:.1f}s",
                flush=True,
            )


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
