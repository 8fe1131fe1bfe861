"""Time auto-retrieval adds to a chat turn, for a user with 10,000 memories.

Through the real stack: memory.recall.turn.prepare_turn -> memory.client.services ->
the long-lived MCP client -> the real ikario_rag subprocess over stdio (hybrid search:
MiniLM embedding of the message + Chroma + FTS5), plus the memory_retrievals log row.

Set-up: a throwaway SQLite DB and a fresh index; 10,000 varied memories are written for
one user with add_thoughts in batches (that time is reported too, but it is not the
figure). Then, interleaved in one process and one event loop, each of the same user
messages goes through prepare_turn three ways:
  off:      the conversation's enable_memory is off (what a turn without memory pays)
  tools:    memory on, auto_retrieve off (guide + tool definitions, no search)
  retrieve: memory on, auto_retrieve on (what every turn pays by default)
"Added" is retrieve - off per message. Target: p95 of added <= 40 ms
(a whole retrieval: 100 ms at most).

Usage: .venv/bin/python bench/auto_retrieval.py [iterations] [--memories N]
       [--index-dir DIR]  (reuse a populated index: populating takes minutes)
       [--mode hybrid|semantic|text]  (the search mode auto-retrieval asks for)
"""

import argparse
import asyncio
import os
import random
import sys
import tempfile
import time

from _setup import django_on_temp_db, memory_on, summary, wait_indexed


def _names(text):
    return text.split()


PEOPLE = _names("Marc Léa Sam Priya Tom Yuki Ana Omar Chloé Ben Nina Hugo Ines Raj Zoé Paul")
PLACES = _names(
    "Chamonix Lyon Kyoto Lisbon Oslo Marseille Berlin Montreal Nantes Seville Dakar "
    "Reykjavik Porto Annecy Bordeaux Krakow"
)
THINGS = [
    "the cello",
    "sourdough bread",
    "trail running",
    "a vegetable garden",
    "Japanese lessons",
    "a startup idea about bikes",
    "chess openings",
    "watercolour painting",
    "a broken shoulder",
    "a new job in data science",
    "the book Dune",
    "climbing in the Alps",
    "a cat named Miso",
    "jazz piano",
    "a trip by night train",
    "learning to sail",
]
PATTERNS = [
    "The user told me {p} is practising {t} in {c}.",
    "We talked about {t}; the user plans to go to {c} with {p}.",
    "The user prefers {t} over most hobbies, since a weekend in {c}.",
    "{p} gave the user advice about {t} during a visit to {c}.",
    "The user felt proud after a month of {t}; {p} noticed it first.",
    "Reminder from the user: call {p} about {t} before leaving {c}.",
    "A long discussion on why {t} matters, sparked by a museum in {c}.",
    "The user is worried about {t} and asked {p} for help.",
]
QUESTIONS = [
    "What do you remember about my trip to {c}?",
    "Did I tell you anything about {t}?",
    "How is {p} doing with {t}?",
    "Any advice for my weekend in {c}?",
    "Can you summarise what we said about {t}?",
    "Hello! How are you today?",
    "Write me a haiku about autumn.",
    "What should I cook tonight?",
]
CATEGORIES = ["fondatrice", "thematique", "contextuelle"]


def fill(pattern, rng):
    return pattern.format(p=rng.choice(PEOPLE), c=rng.choice(PLACES), t=rng.choice(THINGS))


def memories(count, rng):
    for n in range(count):
        yield {
            "content": f"{fill(rng.choice(PATTERNS), rng)} (note {n})",
            "context": {
                "category": rng.choice(CATEGORIES),
                "tags": rng.sample(THINGS, 2),
                "date": f"2026-{rng.randint(1, 10):02d}-{rng.randint(1, 28):02d}T10:00:00+00:00",
            },
        }


def populate(user, count, rng, batch=250):
    """Write `count` memories for `user` through the app's MCP client (add_thoughts)."""
    from memory.client import mcp as mcp_client
    from memory.client import services

    client = mcp_client.get_client()
    namespace = f"user-{user.pk}"
    deadline = time.monotonic() + 300
    while services.memory_status() != "connected":  # the client fails fast while starting
        if time.monotonic() > deadline:
            raise SystemExit(f"ikario_rag did not start: {client.last_error}")
        time.sleep(0.2)
    have = services.memory_stats(user=user).get("total_memories") or 0
    if have >= count:
        return have, 0.0
    started = time.perf_counter()
    items = list(memories(count - have, rng))
    for start in range(0, len(items), batch):
        client.call_tool(
            "add_thoughts",
            {"items": items[start : start + batch], "namespace": namespace},
            timeout=600,
        )
        done = have + start + batch
        print(f"  {min(done, count)} / {count} memories", file=sys.stderr, flush=True)
    return services.memory_stats(user=user)["total_memories"], time.perf_counter() - started


async def timed_turn(user, conversation, message):
    from memory.recall.turn import prepare_turn

    started = time.perf_counter()
    turn = await prepare_turn(user=user, conversation=conversation, user_message=message)
    return (time.perf_counter() - started) * 1000, turn


async def measure(user, iterations, rng):
    from chat.models import Conversation, ConversationSettings, Message
    from memory.models import MemoryRetrieval, MemorySettings

    async def conversation(title, enable_memory=True):
        conv = await Conversation.objects.acreate(user=user, title=title)
        await ConversationSettings.objects.acreate(conversation=conv, enable_memory=enable_memory)
        return conv

    off = await conversation("memory off", enable_memory=False)
    on = await conversation("memory on")
    settings_row = await MemorySettings.objects.aget(user=user)
    samples = {"off": [], "tools": [], "retrieve": [], "added": []}
    injected = []
    timeouts = 0
    for i in range(iterations + 10):
        text = fill(rng.choice(QUESTIONS), rng)
        message = await Message.objects.acreate(conversation=on, role="user", content=text)
        t_off, turn = await timed_turn(user, off, message)
        assert not turn.tools and not turn.system_blocks
        settings_row.auto_retrieve = False
        await settings_row.asave(update_fields=["auto_retrieve"])
        t_tools, turn = await timed_turn(user, on, message)
        assert turn.tools and len(turn.system_blocks) == 1
        settings_row.auto_retrieve = True
        await settings_row.asave(update_fields=["auto_retrieve"])
        t_retrieve, turn = await timed_turn(user, on, message)
        if i < 10:  # warm-up: first embeddings, query plans, connection set-up
            continue
        # A timed-out retrieval still counts (that turn paid the 2 s), and is reported.
        timeouts += (
            bool(turn.notices)
            or await MemoryRetrieval.objects.filter(conversation=on, message=message)
            .exclude(error="")
            .aexists()
        )
        injected.append(len(turn.system_blocks) - 1)
        samples["off"].append(t_off)
        samples["tools"].append(t_tools)
        samples["retrieve"].append(t_retrieve)
        samples["added"].append(t_retrieve - t_off)
    logs = [r async for r in MemoryRetrieval.objects.filter(conversation=on).order_by("-id")]
    server_ms = sorted(r.latency_ms for r in logs[:iterations])
    tokens = [r.tokens_added for r in logs[:iterations] if r.tokens_added]
    return samples, injected, server_ms, tokens, timeouts


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("iterations", nargs="?", type=int, default=200)
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--index-dir", default=None)
    parser.add_argument("--mode", choices=["hybrid", "semantic", "text"], default="hybrid")
    args = parser.parse_args()
    index_dir = args.index_dir or tempfile.mkdtemp(prefix="ikario-bench-index-")
    os.makedirs(index_dir, exist_ok=True)
    django_on_temp_db(
        MCP_MEMORY_ENABLED="true",
        DEBUG="false",
        MCP_CONNECT_TIMEOUT="180",
    )
    memory_on(index_dir)
    from django.conf import settings

    settings.MEMORY_RETRIEVAL_MODE = args.mode
    from django.contrib.auth import get_user_model

    from memory.client import mcp as mcp_client
    from memory.client import services
    from memory.models import MemorySettings

    rng = random.Random(3)
    user = get_user_model().objects.create_user("bench-memory")
    MemorySettings.for_user(user)  # defaults: 4 results, min score 0.5
    other = get_user_model().objects.create_user("bench-other")
    print(f"index: {index_dir}", file=sys.stderr)
    total, fill_seconds = populate(user, args.memories, rng)
    populate(other, 200, random.Random(4))  # another namespace in the same index
    wait_indexed()  # the vectors are written behind the add
    # The first search of a fresh server loads its index (up to seconds): not a turn's cost.
    started = time.perf_counter()
    services.search_memories(user=user, query="warm up the index", timeout=120)
    print(f"first search on this server: {time.perf_counter() - started:.1f} s", file=sys.stderr)
    samples, injected, server_ms, tokens, timeouts = asyncio.run(
        measure(user, args.iterations, rng)
    )
    mcp_client.close_client()

    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"\nauto-retrieval ({args.mode}), {total} memories for the user, {args.iterations} turns")
    print(f"machine load average (1/5/15 min): {load} on {os.cpu_count()} cores")
    if fill_seconds:
        print(f"populate: {total} memories with add_thoughts in {fill_seconds:.0f} s")
    print(f"{'prepare_turn':<34}{'median ms':>10}{'p95 ms':>10}")
    for name, label in [
        ("off", "memory off (conversation)"),
        ("tools", "memory on, auto-retrieve off"),
        ("retrieve", "memory on, auto-retrieve on"),
        ("added", "added by memory (on - off)"),
    ]:
        s = summary(samples[name])
        print(f"{label:<34}{s['median']:>10.1f}{s['p95']:>10.1f}")
    s = summary(server_ms)
    print(f"{'retrieval step alone (logged)':<34}{s['median']:>10.1f}{s['p95']:>10.1f}")
    on, off = summary(samples["retrieve"]), summary(samples["off"])
    print(f"ratio on/off (median): {on['median'] / off['median']:.1f}x")
    hits = sum(1 for n in injected if n)
    print(f"turns with memories injected: {hits}/{len(injected)}", end="")
    if tokens:
        print(f"; tokens added when injected: median {sorted(tokens)[len(tokens) // 2]}")
    else:
        print()
    print(f"retrievals that failed or timed out (2 s): {timeouts}")
    added = summary(samples["added"])["p95"]
    print(f"target p95 added <= 40 ms: {'met' if added <= 40 else 'MISSED'} ({added:.1f} ms)")


if __name__ == "__main__":
    main()
