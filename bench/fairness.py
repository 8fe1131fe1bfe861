"""Fair shares: bob's recall and chat while alice loads the memory with 50 threads.

    .venv/bin/python bench/fairness.py [--threads 50] [--turns 30] [--code DIR]

In one process, the app as it runs, minus the HTTP server: bob's chat turns go through the
real chat consumer (Channels' WebsocketCommunicator: his message saved, the automatic
recall with its real deadline, MEMORY_RETRIEVAL_TIMEOUT 2 s, the fake Claude streaming the
answer); alice's requests through the real views and middleware (Django's test Client, one
per thread): searches and adds on /api/memory/, imports of 200-memory files on
/memory/import, back to back, honouring a 429's Retry-After (at most 1 s) as a browser's
retry would. Both reach the one long-lived MCP client and the real ikario_rag server over
stdio, on a fresh index; the background worker is the child process the app starts beside
itself (`manage.py db_worker` at nice 10, reaching the server over its Unix socket).

Bob's turns run first with alice idle, then with her threads running. A recall "answered"
is a memory_retrievals row without an error. Printed: bob's recall success and median turn
and recall latency, idle and loaded, their ratio (target: >= 95 % answered, median turn
<= 2x idle), what alice's requests got, and whether alice's acknowledged writes are what
memory holds. `--code DIR` runs another checkout's app and server (the baseline: the
script needs nothing of this checkout's code).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import os
import random
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

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
        TASKS_WORKER_IN_PROCESS="false",
        TASKS_WORKER_MODE="process",
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

    def __init__(self, user, threads: int, import_size: int):
        self.user = user
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

        rng = random.Random(n)
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
                    if kind == "add" and response.status_code in (200, 201):
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
    from memory.models import MemoryRetrieval

    first = await MemoryRetrieval.objects.filter(user=user).order_by("-id").afirst()
    since = first.pk if first else 0
    spent = []
    for n in range(turns):
        ask = f"{BOB_ASKS[(offset + n) % len(BOB_ASKS)]} (turn {offset + n})"
        spent.append(await bob_turn(user, ask))
    rows = [r async for r in MemoryRetrieval.objects.filter(user=user, id__gt=since)]
    answered = [r for r in rows if not r.error]
    return {
        "turn_ms": statistics.median(spent),
        "recall_ms": statistics.median(r.latency_ms for r in answered) if answered else None,
        "answered": len(answered),
        "recalls": len(rows),
        "errors": collections.Counter(r.error for r in rows if r.error).most_common(3),
    }


def stored(user) -> int:
    from memory import services

    return services.memory_stats(user=user).get("total_memories") or 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=50)
    parser.add_argument("--turns", type=int, default=30)
    parser.add_argument("--import-size", type=int, default=200)
    parser.add_argument("--ramp", type=float, default=5.0, help="seconds of load before bob")
    parser.add_argument("--code", type=Path, default=Path(__file__).resolve().parents[1])
    args = parser.parse_args()
    code = args.code.resolve()
    sys.path.insert(0, str(code))
    from tests.fixtures.fake_anthropic import FakeAnthropic

    tmp = Path(tempfile.mkdtemp(prefix="ikario-fairness-"))
    with FakeAnthropic() as fake:
        fake.default_reply = "Here is an idea, based on what you told me."
        setup(code, tmp, fake.base_url)
        from django.contrib.auth import get_user_model

        from memory import services, worker_process

        print(f"code: {code}  index: {tmp / 'index'}", flush=True)
        print(f"memory server: {services.wait_until_ready(180)}", flush=True)
        users = get_user_model().objects
        alice = users.create_user("alice")
        bob = users.create_user("bob")
        services.add_thoughts(
            user=bob, items=[{"content": fact} for fact in BOB_FACTS], timeout=120
        )
        worker_process.start_beside_app()
        asyncio.run(bob_turns(bob, 3, 100))  # warm-up: imports, templates, query paths
        idle = asyncio.run(bob_turns(bob, args.turns, 0))
        print(f"idle: {idle}", flush=True)
        load = Alice(alice, args.threads, args.import_size)
        load.start()
        time.sleep(args.ramp)
        loaded = asyncio.run(bob_turns(bob, args.turns, args.turns))
        load.finish()
        print(f"loaded: {loaded}", flush=True)
        # Alice's writes: what she was told against what memory holds once the jobs ran.
        settle_until = time.monotonic() + 600
        held = stored(alice)
        while time.monotonic() < settle_until:
            time.sleep(5)
            now = stored(alice)
            if now == held:
                break
            held = now

    share = loaded["answered"] / max(loaded["recalls"], 1)
    ratio = loaded["turn_ms"] / idle["turn_ms"]
    print(f"\nbob beside alice at {args.threads} threads ({args.turns} turns each phase)")
    print(
        f"  recall answered : idle {idle['answered']}/{idle['recalls']}, "
        f"loaded {loaded['answered']}/{loaded['recalls']} ({share:.0%}; target >= 95 %)"
    )
    print(
        f"  chat turn median: idle {idle['turn_ms']:.0f} ms, loaded {loaded['turn_ms']:.0f} ms "
        f"({ratio:.2f}x; target <= 2x)"
    )
    recall_idle, recall_loaded = idle["recall_ms"], loaded["recall_ms"]
    if recall_idle and recall_loaded:
        print(
            f"  recall median   : idle {recall_idle:.0f} ms, loaded {recall_loaded:.0f} ms "
            f"(answered ones)"
        )
    if loaded["errors"]:
        print(f"  bob's errors    : {loaded['errors']}")
    print(
        "  alice got       : "
        + ", ".join(f"{k} {s}: {n}" for (k, s), n in sorted(load.got.items()))
    )
    print(f"  alice's writes  : {load.acknowledged} acknowledged, {held} stored")


if __name__ == "__main__":
    main()
