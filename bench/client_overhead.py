"""What the app adds to a memory search: /api/memory/search vs the same MCP call alone.

Three paths to one ikario_rag server, interleaved query by query (the order rotates) so
machine noise hits them alike:
  direct   the bare SDK call (ClientSession.call_tool over streamable HTTP), timed on the
           client's own event loop: no thread hop, no validation, no Django;
  service  memory.client.services.search_memories (validation + the long-lived client's thread hop);
  api      POST /api/memory/search through Django's test client (middleware, session auth,
           JSON in and out), as a browser's request would run in the app.
The overhead is api - direct at the median (target: <= 5 ms).

Run: make bench-client   (or: .venv/bin/python bench/client_overhead.py [--runs 300])
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
WORK = Path(tempfile.mkdtemp(prefix="ikario-bench-client-"))
os.environ["DATABASE_URL"] = f"sqlite:///{WORK / 'bench.sqlite3'}"
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ikario_clone.settings")
os.environ["DEBUG"] = "true"  # development settings: DEBUG off would mean production
os.environ["LOG_LEVEL"] = "WARNING"  # one log line per call would be timed too

import django  # noqa: E402

django.setup()

from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.test import Client  # noqa: E402

from memory.client import mcp, services  # noqa: E402

sys.path.insert(0, str(ROOT / "bench"))
from _setup import memory_on, wait_indexed  # noqa: E402

TOPICS = [
    "skiing in Chamonix",
    "sourdough baking",
    "jazz piano",
    "the cello",
    "tax returns",
    "a trip to Lisbon",
    "learning Japanese",
    "running a marathon",
    "the garden",
    "chess",
    "a new job",
    "moving flats",
    "the cat's vet visit",
    "birthday plans",
    "a book club",
]
QUERIES = [
    "what do I know about skiing",
    "bread recipes",
    "music lessons",
    "travel plans",
    "language learning progress",
    "sports training",
    "gardening",
    "work news",
    "pets and animals",
    "family events",
]


def _seed(user, count: int) -> None:
    items = [
        {
            "content": f"Memory {n}: a talk about {TOPICS[n % len(TOPICS)]}, detail {n * 7}",
            "context": {"category": ("fondatrice", "thematique", "contextuelle")[n % 3]},
        }
        for n in range(count)
    ]
    for start in range(0, count, 50):
        mcp.get_client().call_tool(
            "add_thoughts",
            {"items": items[start : start + 50], "namespace": f"user-{user.pk}"},
            timeout=600,
        )


def _summary(name: str, samples: list[float]) -> dict:
    ordered = sorted(samples)
    return {
        "path": name,
        "median_ms": statistics.median(ordered),
        "p95_ms": ordered[int(0.95 * (len(ordered) - 1))],
        "mean_ms": statistics.fmean(ordered),
    }


def _run(runs: int, warmup: int, user, http: Client) -> dict:
    client = mcp.get_client()
    namespace = f"user-{user.pk}"
    times: dict[str, list[float]] = {"direct": [], "service": [], "api": []}

    async def bare_call(query: str) -> float:
        # The SDK session's own call_tool, timed on the client's loop: the same server and
        # the same HTTP session as the other paths, minus everything the app adds.
        args = {"query": query, "n_results": 5, "namespace": namespace}
        started = time.perf_counter()
        result = await client._session.call_tool("search_memories", args)
        elapsed = time.perf_counter() - started
        assert not result.is_error and result.structured_content["results"]
        return elapsed

    def via_direct(query: str) -> float:
        return asyncio.run_coroutine_threadsafe(bare_call(query), client._loop).result(60)

    def via_service(query: str) -> float:
        started = time.perf_counter()
        found = services.search_memories(user=user, query=query, n_results=5)
        elapsed = time.perf_counter() - started
        assert found["results"], "the service found nothing"
        return elapsed

    def via_api(query: str) -> float:
        body = json.dumps({"query": query, "n_results": 5})
        started = time.perf_counter()
        response = http.post("/api/memory/search", body, content_type="application/json")
        elapsed = time.perf_counter() - started
        assert response.status_code == 200 and response.json()["results"], response.content
        return elapsed

    paths = {"direct": via_direct, "service": via_service, "api": via_api}
    # Connected and warmed up (the embedding model loaded) before any timing.
    assert services.wait_until_ready() == "connected"
    for n in range(warmup + runs):
        query = QUERIES[n % len(QUERIES)]
        order = list(paths)[n % 3 :] + list(paths)[: n % 3]  # nobody always goes first
        for name in order:
            elapsed = paths[name](query)
            if n >= warmup:
                times[name].append(elapsed * 1000)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--memories", type=int, default=300)
    options = parser.parse_args()

    call_command("migrate", verbosity=0)
    user = get_user_model().objects.create_user("bench")
    http = Client()
    http.force_login(user)

    print(f"seeding {options.memories} memories…", file=sys.stderr)
    try:
        memory_on(WORK / "index")
        assert services.wait_until_ready() == "connected", mcp.get_client().last_error
        _seed(user, options.memories)
        wait_indexed()  # the vectors are written behind the add
        times = _run(options.runs, options.warmup, user, http)
    finally:
        mcp.close_client()
        shutil.rmtree(WORK, ignore_errors=True)

    rows = [_summary(name, samples) for name, samples in times.items()]
    direct = rows[0]
    print(f"\nsearch_memories, {options.runs} runs each, {options.memories} memories, n_results=5")
    print("| path | median ms | p95 ms | median added vs direct | ratio |")
    print("|---|---|---|---|---|")
    for row in rows:
        added = row["median_ms"] - direct["median_ms"]
        ratio = row["median_ms"] / direct["median_ms"]
        print(
            f"| {row['path']} | {row['median_ms']:.2f} | {row['p95_ms']:.2f} "
            f"| {added:+.2f} ms | {ratio:.2f}x |"
        )
    paired = [a - d for a, d in zip(times["api"], times["direct"], strict=True)]
    print(f"\npaired (api - direct, same query): median {statistics.median(paired):+.2f} ms")
    verdict = "PASS" if statistics.median(paired) <= 5.0 else "FAIL"
    print(f"target <= 5 ms added at the median: {verdict}")


if __name__ == "__main__":
    main()
