"""The memory tier alone: how many searches one memory server answers, and two.

    .venv/bin/python bench/memory_tier.py [--users 40] [--seconds 30] [--memories 50] [--rounds 2]

A Chroma server and one, then two, memory servers over streamable HTTP with a token
(tests/fixtures/topology.py's commands, vectors in the Chroma server), reached by the app's
own MCP client (memory/client/mcp.py: one long-lived client per server, as a web or worker
process holds) from USERS threads, each a user of its own searching its memories (MEMORIES
each, added first) without a pause for SECONDS (hybrid mode, 5 results). The users are
spread over the servers by memory/client/shards.py. Rounds interleave one and two servers.

Reported: searches/s and the median and p95 of a search, for each; the ratio two/one. This
is the capacity of a server on this machine: the whole app under load is bench/scale_out.py.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time

from _setup import ROOT, django_on_temp_db

sys.path.insert(0, str(ROOT))

from tests.fixtures.topology import Topology  # noqa: E402

WORDS = ("ski", "piano", "Lisbon", "sister", "garden", "billing", "curry", "boots", "knee")


def namespace(user) -> str:
    return f"user-{user.pk}"


def run(users, seconds: float, memories: int, servers: int) -> dict:
    from django.conf import settings

    from memory.client import mcp, services

    town = Topology(memory_servers=servers)
    try:
        town.start_memory_tier()
        settings.MCP_MEMORY_ENABLED = True
        settings.IKARIO_TOKEN = town.token
        settings.MCP_IKARIO_SERVER_URLS = [town.memory_url(n) for n in range(1, servers + 1)]
        try:
            for user in users:
                items = [
                    {"content": f"{user.username} said {WORDS[k % len(WORDS)]} on day {k}"}
                    for k in range(memories)
                ]
                for start in range(0, len(items), 50):
                    services.add_thoughts(user=user, items=items[start : start + 50])
            # Vectors are written behind the adds: every one written before searching.
            clients = {id(c): c for c in map(mcp.get_client, map(namespace, users))}
            while any(
                (c.call_tool("memory_stats", {}).get("health") or {}).get("unindexed")
                for c in clients.values()
            ):
                time.sleep(0.5)
            took: list[float] = []
            stop_at = time.monotonic() + seconds

            def search(user) -> None:
                n = 0
                while time.monotonic() < stop_at:
                    began = time.monotonic()
                    services.search_memories(user=user, query=WORDS[n % len(WORDS)])
                    took.append(time.monotonic() - began)
                    n += 1

            threads = [threading.Thread(target=search, args=(u,)) for u in users]
            began = time.monotonic()
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            elapsed = time.monotonic() - began
        finally:
            mcp.close_client()
    finally:
        town.close()
    took.sort()
    return {
        "servers": servers,
        "searches/s": len(took) / elapsed,
        "median ms": 1000 * statistics.median(took),
        "p95 ms": 1000 * took[int(len(took) * 0.95)],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--users", type=int, default=40)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--memories", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    django_on_temp_db(HF_HUB_OFFLINE="1")
    from django.contrib.auth import get_user_model

    users = [get_user_model().objects.create_user(f"tier{n:03d}") for n in range(args.users)]
    runs = []
    for round_ in range(args.rounds):
        for servers in (1, 2) if round_ % 2 == 0 else (2, 1):
            runs.append(run(users, args.seconds, args.memories, servers))
            print(runs[-1], flush=True)
    print(f"\n{args.users} users searching for {args.seconds:g} s, {args.memories} memories "
          f"each, {args.rounds} rounds (medians)\n")  # fmt: skip
    print("| memory servers | searches/s | median ms | p95 ms |\n|---|---|---|---|")
    medians = {}
    for servers in (1, 2):
        mine = [r for r in runs if r["servers"] == servers]
        medians[servers] = {k: statistics.median(r[k] for r in mine) for k in mine[0]}
        m = medians[servers]
        print(f"| {servers} | {m['searches/s']:.1f} | {m['median ms']:.0f} | {m['p95 ms']:.0f} |")
    print(f"two / one, searches/s: {medians[2]['searches/s'] / medians[1]['searches/s']:.2f}")


if __name__ == "__main__":
    main()
