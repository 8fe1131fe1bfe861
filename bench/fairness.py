"""Fair shares: bob's recall and chat while alice loads the memory with 50 threads.

    .venv/bin/python bench/fairness.py [--threads 50] [--rounds 3] [--turns 10] [--code DIR]

In one process, the app as it runs, minus the HTTP server: bob's chat turns go through the
real chat consumer (Channels' WebsocketCommunicator: his message saved, the automatic
recall with its real deadline, MEMORY_RETRIEVAL_TIMEOUT 2 s, the fake Claude streaming the
answer); alice's requests through the real views and middleware (Django's test Client, one
per thread): searches and adds on /api/memory/, imports of 200-memory files on
/memory/import, back to back, honouring a 429's Retry-After (at most 1 s) as a browser's
retry would. Both reach the one long-lived MCP client and the real ikario_rag server, on a
fresh index, over streamable HTTP as `make run` runs it; the background worker is
`manage.py db_worker` at nice 10, reaching the same server by its URL.

Rounds of bob's turns, first with alice idle, then with her threads running (her queued
work ends before the next round). A recall "answered" is a memory_retrievals row without
an error. Printed: bob's recall success and median turn
and recall latency, idle and loaded, their ratio (target: >= 95 % answered, median turn
<= 2x idle), what alice's requests got, and whether alice's acknowledged writes are what
memory holds. `--code DIR` runs another checkout's app and server (the baseline: the
script needs nothing of this checkout's code).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import json
import os
import random
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

from _setup import db_worker_process, shared_memory_server

WORDS = [
    *("garden", "river", "piano", "winter", "coffee", "mountain", "letter", "summer"),
    *("market", "violin", "harbour", "train", "orchard", "lantern", "bicycle", "museum"),
    *("festival", "kitchen", "village", "island", "meadow", "library", "castle"),
]
BOB_FACTS = [
    "My sister Léa is a nurse in Lyon.",
    "I play the cello in a quartet on Thursdays.",
    "I am allergic to peanuts.",
    "My dog Biscuit is a beagle.",
    "I am training for the Paris half-marathon in April.",
    "My favourite restaurant is a Lebanese place near the station.",
    "I work as a structural engineer on bridges.",
    "My daughter Zoé starts school in September.",
    "I grow tomatoes and basil on the balcony.",
    "I learned Portuguese while living in Porto.",
]
BOB_ASKS = [
    "What could I cook for my sister this weekend?",
    "Any tips for my half-marathon training?",
    "Which music should I practise before Thursday?",
    "What should my dog eat?",
    "What do I need for my daughter's first school day?",
    "Ideas for my balcony garden?",
    "Where should I eat tonight?",
    "Help me plan a trip to Portugal.",
]


def setup(code: Path, tmp: Path, fake_url: str) -> None:
    sys.path.insert(0, str(code))
    os.environ.update(
        DJANGO_SETTINGS_MODULE="ikario_clone.settings",
        DEBUG="true",
        DATABASE_URL=f"sqlite:///{tmp}/bench.sqlite3",
        IKARIO_INDEX_DIR=str(tmp / "index"),
        MCP_MEMORY_ENABLED="true",
        ANTHROPIC_BASE_URL=fake_url,
        ANTHROPIC_API_KEY="sk-bench",
        LOG_LEVEL="ERROR",
        PYTHONPATH=str(code),
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        ANONYMIZED_TELEMETRY="False",
    )
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def export_file(n: int, rng: random.Random) -> bytes:
    memories = [
        {"content": " ".join(rng.choice(WORDS) for _ in range(12)) + f" ({rng.random():.12f})"}
        for _ in range(n)
    ]
    return json.dumps(
        {"format": "ikario-memories", "version": 1, "count": n, "memories": memories}
    ).encode()


class Alice:
    """`threads` clients of alice's, each sending searches, adds and imports back to back."""

    def __init__(self, user, threads: int, import_size: int, round_no: int = 0):
        self.user = user
        self.round_no = round_no  # each round's texts are new: no duplicate is skipped
        self.threads = threads
        self.import_size = import_size
        self.stop = threading.Event()
        self.got: collections.Counter = collections.Counter()
        self.acknowledged = 0  # memories the app said it stored (or queued to store)
        self.lock = threading.Lock()
        self.workers = [
            threading.Thread(target=self.run, args=(n,), daemon=True) for n in range(threads)
        ]

    def start(self) -> None:
        for worker in self.workers:
            worker.start()

    def finish(self) -> None:
        self.stop.set()
        for worker in self.workers:
            worker.join(120)

    def run(self, n: int) -> None:
        from django.core.files.uploadedfile import SimpleUploadedFile
        from django.db import close_old_connections
        from django.test import Client

        rng = random.Random(self.round_no * 1000 + n)
        client = Client(raise_request_exception=False)
        client.force_login(self.user)
        try:
            while not self.stop.is_set():
                pick = rng.random()
                if pick < 0.5:
                    kind = "search"
                    query = " ".join(rng.choice(WORDS) for _ in range(3))
                    response = client.post(
                        "/api/memory/search",
                        json.dumps({"query": query, "n_results": 10}),
                        content_type="application/json",
                    )
                elif pick < 0.9:
                    kind = "add"
                    text = " ".join(rng.choice(WORDS) for _ in range(10))
                    response = client.post(
                        "/api/memory/add",
                        json.dumps({"content": f"{text} {rng.random():.12f}"}),
                        content_type="application/json",
                    )
                else:
                    kind = "import"
                    upload = SimpleUploadedFile(
                        "export.json", export_file(self.import_size, rng), "application/json"
                    )
                    response = client.post("/memory/import", {"file": upload})
                with self.lock:
                    self.got[(kind, response.status_code)] += 1
                    if kind == "add" and response.status_code == 201:  # 200: a duplicate
                        self.acknowledged += 1
                    if kind == "import" and response.status_code in (200, 202):
                        self.acknowledged += self.import_size
                if response.status_code == 429:
                    wait = float(response.get("Retry-After") or 1)
                    self.stop.wait(min(wait, 1.0))
        finally:
            close_old_connections()


async def bob_turn(user, ask: str) -> float:
    from channels.routing import URLRouter
    from channels.testing import WebsocketCommunicator

    from chat.models import Conversation
    from chat.routing import websocket_urlpatterns

    conversation = await Conversation.objects.acreate(user=user)
    communicator = WebsocketCommunicator(
        URLRouter(websocket_urlpatterns), f"/ws/conversations/{conversation.pk}/"
    )
    communicator.scope["user"] = user
    await communicator.connect()
    started = time.perf_counter()
    await communicator.send_to(text_data=json.dumps({"content": ask}))
    while 'data-busy="0"' not in await communicator.receive_from(timeout=60):
        pass
    elapsed = (time.perf_counter() - started) * 1000
    await communicator.disconnect()
    return elapsed


async def bob_turns(user, turns: int, offset: int) -> dict:
    """`turns` chat turns of bob's: their times, and his recalls' (answered or not)."""
    from memory.models import MemoryRetrieval

    first = await MemoryRetrieval.objects.filter(user=user).order_by("-id").afirst()
    since = first.pk if first else 0
    spent = []
    for n in range(turns):
        ask = f"{BOB_ASKS[(offset + n) % len(BOB_ASKS)]} (turn {offset + n})"
        spent.append(await bob_turn(user, ask))
    rows = [r async for r in MemoryRetrieval.objects.filter(user=user, id__gt=since)]
    return {
        "turn_ms": spent,
        "recall_ms": [r.latency_ms for r in rows if not r.error],
        "recalls": len(rows),
        "errors": [r.error for r in rows if r.error],
    }


def stored(user) -> int:
    from memory import services

    return services.memory_stats(user=user).get("total_memories") or 0


def settled(user, most: float = 600.0) -> int:
    """Alice's memories once her queued work has run (the count stops moving)."""
    until = time.monotonic() + most
    from memory import models

    jobs = getattr(models, "MemoryJob", None)  # imports as background jobs (not the baseline)
    while jobs is not None and time.monotonic() < until:
        if not jobs.objects.filter(user=user, state__in=("queued", "running")).exists():
            break
        time.sleep(1)
    held = stored(user)
    while time.monotonic() < until:
        time.sleep(5)
        now = stored(user)
        if now == held:
            break
        held = now
    return held


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--turns", type=int, default=10, help="bob's turns per phase")
    parser.add_argument("--import-size", type=int, default=200)
    parser.add_argument("--ramp", type=float, default=5.0, help="seconds of load before bob")
    parser.add_argument("--code", type=Path, default=Path(__file__).resolve().parents[1])
    args = parser.parse_args()
    code = args.code.resolve()
    sys.path.insert(0, str(code))
    from tests.fixtures.fake_anthropic import FakeAnthropic

    tmp = Path(tempfile.mkdtemp(prefix="ikario-fairness-"))
    phases = {"idle": collections.defaultdict(list), "loaded": collections.defaultdict(list)}
    got: collections.Counter = collections.Counter()
    acknowledged = held = 0
    with FakeAnthropic() as fake:
        fake.default_reply = "Here is an idea, based on what you told me."
        setup(code, tmp, fake.base_url)
        from django.contrib.auth import get_user_model

        from memory import services

        stack = contextlib.ExitStack()
        stack.enter_context(shared_memory_server(tmp / "index", code))

        print(f"code: {code}  index: {tmp / 'index'}", flush=True)
        print(f"memory server: {services.wait_until_ready(180)}", flush=True)
        users = get_user_model().objects
        alice = users.create_user("alice")
        bob = users.create_user("bob")
        services.add_thoughts(
            user=bob, items=[{"content": fact} for fact in BOB_FACTS], timeout=120
        )
        stack.enter_context(db_worker_process(code))
        asyncio.run(bob_turns(bob, 3, 1000))  # warm-up: imports, templates, query paths
        # Rounds of idle then loaded, side by side: a change in the machine's own load (it
        # is shared) weighs on both phases of a round.
        for round_no in range(args.rounds):
            offset = 2 * round_no * args.turns
            idle = asyncio.run(bob_turns(bob, args.turns, offset))
            load = Alice(alice, args.threads, args.import_size, round_no)
            load.start()
            time.sleep(args.ramp)
            loaded = asyncio.run(bob_turns(bob, args.turns, offset + args.turns))
            load.finish()
            got.update(load.got)
            acknowledged += load.acknowledged
            held = settled(alice)  # her queued work done before the next idle phase
            for name, phase in (("idle", idle), ("loaded", loaded)):
                for key, value in phase.items():
                    phases[name][key] += value if isinstance(value, list) else [value]
            print(
                f"round {round_no + 1}: turn median idle "
                f"{statistics.median(idle['turn_ms']):.0f} ms, loaded "
                f"{statistics.median(loaded['turn_ms']):.0f} ms; recalls answered loaded "
                f"{len(loaded['recall_ms'])}/{loaded['recalls']}",
                flush=True,
            )
        stack.close()  # the worker, then the memory server

    idle, loaded = phases["idle"], phases["loaded"]
    asked = sum(loaded["recalls"])
    share = len(loaded["recall_ms"]) / max(asked, 1)
    turn_idle, turn_loaded = (
        statistics.median(idle["turn_ms"]),
        statistics.median(loaded["turn_ms"]),
    )
    print(
        f"\nbob beside alice at {args.threads} threads ({args.rounds} rounds of "
        f"{args.turns} turns idle, then {args.turns} loaded)"
    )
    print(
        f"  recall answered : idle {len(idle['recall_ms'])}/{sum(idle['recalls'])}, "
        f"loaded {len(loaded['recall_ms'])}/{asked} ({share:.0%}; target >= 95 %)"
    )
    print(
        f"  chat turn median: idle {turn_idle:.0f} ms, loaded {turn_loaded:.0f} ms "
        f"({turn_loaded / turn_idle:.2f}x; target <= 2x)"
    )
    if idle["recall_ms"] and loaded["recall_ms"]:
        print(
            f"  recall median   : idle {statistics.median(idle['recall_ms']):.0f} ms, loaded "
            f"{statistics.median(loaded['recall_ms']):.0f} ms (answered ones)"
        )
    if loaded["errors"]:
        print(f"  bob's errors    : {collections.Counter(loaded['errors']).most_common(3)}")
    print("  alice got       : " + ", ".join(f"{k} {s}: {n}" for (k, s), n in sorted(got.items())))
    print(f"  alice's writes  : {acknowledged} acknowledged, {held} stored")


if __name__ == "__main__":
    main()
