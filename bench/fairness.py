"""Fair shares through Daphne: bob's pages, searches and chat turns (HTTP and the socket)
while alice runs 50 threads against the same web process.

    .venv/bin/python bench/fairness.py [--threads 50] [--rounds 3] [--turns 8] [--flood]
                                       [--code DIR]

The app as `make run` runs it: Daphne serving ikario_clone.asgi:application, the worker
(`manage.py db_worker --nice 10`), the real ikario_rag over streamable HTTP on a fresh
index, Claude = the fake Messages API (tests/fixtures/fake_anthropic.py), all on this
machine. Alice is another process on the same machine (her 50 threads never share a
GIL with bob's client): each thread sends, back to back, memory API searches and adds,
the memory page's htmx search and "add a fact" form, chat turns over HTTP, page loads and
imports of 200 memories; on a 429 it waits its Retry-After (at most 1 s) as a browser's
retry would, or not at all with --flood.

Rounds of bob's requests at a person's pace (PAUSE before each, within his own share),
first with alice idle, then with her threads running (her queued jobs end before the next
round): a conversation page, a memory search
(/api/memory/search), a chat turn over HTTP (/api/conversations/<id>/messages) and one
over the socket (/ws/conversations/<id>/, until the turn says it is done). Printed: bob's
median of each, idle and loaded, their ratio with a 95 % interval over the rounds
(target: <= 3x), bob's recalls answered, and what alice's requests got. `--code DIR` runs
another checkout's app and server (the baseline: the script needs nothing of this
checkout's code but tests/fixtures/fake_anthropic.py and bench/_setup.py).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import json
import multiprocessing
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

from _setup import db_worker_process, median_ratio, shared_memory_server

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
]
BOB_ASKS = [
    "What could I cook for my sister this weekend?",
    "Any tips for my half-marathon training?",
    "Which music should I practise before Thursday?",
    "What should my dog eat?",
    "What do I need for my daughter's first school day?",
    "Where should I eat tonight?",
]
KINDS = ("page", "search", "turn over HTTP", "turn over the socket")
# Bob at a person's pace, within his own share (WEB_USER_RATE, 5 a second): a pause before
# each of his requests (a socket turn is two: its opening and its message).
PAUSE = 0.25
# Django takes a CSRF secret sent back as is (cookie and header alike): no page to read it from.
CSRF_SECRET = uuid.uuid4().hex
CSRF_HEADER = {"X-CSRFToken": CSRF_SECRET}


def setup(code: Path, tmp: Path, fake_url: str) -> None:
    sys.path.insert(0, str(code))
    os.environ.update(
        DJANGO_SETTINGS_MODULE="ikario_clone.settings",
        DEBUG="true",
        ALLOWED_HOSTS="127.0.0.1,localhost",
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


def signed_in(username: str) -> tuple[object, str]:
    """A user and a session of hers, made in the database (as a login would)."""
    from django.contrib.auth import (
        BACKEND_SESSION_KEY,
        HASH_SESSION_KEY,
        SESSION_KEY,
        get_user_model,
    )
    from django.contrib.sessions.backends.db import SessionStore

    user = get_user_model().objects.create_user(username, password=uuid.uuid4().hex)
    session = SessionStore()
    session[SESSION_KEY] = str(user.pk)
    session[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
    session[HASH_SESSION_KEY] = user.get_session_auth_hash()
    session.create()
    return user, session.session_key


@contextlib.contextmanager
def daphne(code: Path):
    """`code`'s app under Daphne as the Procfile's web line runs it: yields its URL."""
    from tests.net import serve_on_a_free_port, stop

    binary = Path(sys.executable).with_name("daphne")
    log = Path(tempfile.mkdtemp(prefix="ikario-bench-daphne-")) / "daphne.log"

    def start(port: int) -> subprocess.Popen:
        return subprocess.Popen(
            [str(binary), "-b", "127.0.0.1", "-p", str(port), "ikario_clone.asgi:application"],
            cwd=code,
            env=dict(os.environ),
            stdout=subprocess.DEVNULL,
            stderr=log.open("w"),
        )

    process, port = serve_on_a_free_port(start, timeout=120)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        stop(process)


def export_file(n: int, rng: random.Random) -> bytes:
    memories = [
        {"content": " ".join(rng.choice(WORDS) for _ in range(12)) + f" ({rng.random():.12f})"}
        for _ in range(n)
    ]
    return json.dumps({"format": "ikario-memories", "version": 1, "memories": memories}).encode()


def alice(url, session, csrf, conversations, threads, flood, seed, stop, results) -> None:
    """Alice's process: `threads` clients of hers back to back until `stop` is set."""
    import httpx

    got: collections.Counter = collections.Counter()
    lock = threading.Lock()

    def run(n: int) -> None:
        rng = random.Random(seed * 1000 + n)
        cookies = {"sessionid": session, "csrftoken": csrf}
        with httpx.Client(base_url=url, cookies=cookies, timeout=60) as client:
            headers = {"X-CSRFToken": csrf}
            while not stop.is_set():
                pick = rng.random()
                words = " ".join(rng.choice(WORDS) for _ in range(3))
                try:
                    if pick < 0.25:
                        kind = "api search"
                        body = {"query": words, "n_results": 10}
                        response = client.post("/api/memory/search", json=body, headers=headers)
                    elif pick < 0.40:
                        kind = "api add"
                        body = {"content": f"{words} {rng.random():.12f}"}
                        response = client.post("/api/memory/add", json=body, headers=headers)
                    elif pick < 0.55:
                        kind = "htmx search"
                        response = client.get(
                            "/memory/", params={"q": words}, headers={"HX-Request": "true"}
                        )
                    elif pick < 0.65:
                        kind = "htmx add"
                        response = client.post(
                            "/memory/facts/add",
                            data={"content": f"{words} {rng.random():.12f}", "kind": "fact"},
                            headers={**headers, "HX-Request": "true"},
                        )
                    elif pick < 0.80:
                        kind = "chat turn"
                        response = client.post(
                            f"/api/conversations/{rng.choice(conversations)}/messages",
                            json={"content": f"Tell me about the {words}"},
                            headers={**headers, "Idempotency-Key": uuid.uuid4().hex},
                        )
                    elif pick < 0.95:
                        kind = "page"
                        response = client.get(f"/c/{rng.choice(conversations)}/")
                    else:
                        kind = "import"
                        files = {"file": ("m.json", export_file(200, rng), "application/json")}
                        response = client.post("/memory/import", files=files, headers=headers)
                except httpx.HTTPError as exc:
                    with lock:
                        got[("error", type(exc).__name__)] += 1
                    continue
                with lock:
                    got[(kind, response.status_code)] += 1
                if response.status_code == 429 and not flood:
                    stop.wait(min(float(response.headers.get("Retry-After") or 1), 1.0))

    workers = [threading.Thread(target=run, args=(n,), daemon=True) for n in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    results.put(dict(got))


async def socket_turn(url: str, session: str, conversation: int, ask: str) -> float:
    import websockets

    address = url.replace("http://", "ws://") + f"/ws/conversations/{conversation}/"
    cookie = {"Cookie": f"sessionid={session}"}
    async with websockets.connect(address, origin=url, additional_headers=cookie) as socket:
        started = time.perf_counter()
        await socket.send(json.dumps({"content": ask}))
        while 'data-busy="0"' not in await asyncio.wait_for(socket.recv(), 60):
            pass
        return (time.perf_counter() - started) * 1000


def bob_round(url: str, bob, session: str, turns: int, offset: int) -> dict:
    """`turns` of each of bob's requests, interleaved: their times and his recalls."""
    import httpx
    import websockets

    from chat.models import Conversation
    from memory.models import MemoryRetrieval

    last = MemoryRetrieval.objects.filter(user=bob).order_by("-id").first()
    since = last.pk if last else 0
    spent: dict[str, list[float]] = {kind: [] for kind in KINDS}
    refused: collections.Counter = collections.Counter()
    cookies = {"sessionid": session, "csrftoken": CSRF_SECRET}
    with httpx.Client(base_url=url, cookies=cookies, timeout=60) as client:
        for n in range(turns):
            ask = f"{BOB_ASKS[(offset + n) % len(BOB_ASKS)]} (turn {offset + n})"
            page = Conversation.objects.create(user=bob).pk
            requests = [
                ("page", "GET", f"/c/{page}/", {}),
                ("search", "POST", "/api/memory/search", {"query": ask, "n_results": 5}),
                ("turn over HTTP", "POST", f"/api/conversations/{page}/messages", {"content": ask}),
            ]
            for kind, method, path, body in requests:
                headers = {"Idempotency-Key": uuid.uuid4().hex} if method == "POST" else {}
                time.sleep(PAUSE)
                started = time.perf_counter()
                try:
                    response = client.request(
                        method, path, json=body or None, headers={**CSRF_HEADER, **headers}
                    )
                except httpx.HTTPError as exc:
                    refused[(kind, type(exc).__name__)] += 1
                    continue
                if response.status_code >= 400:
                    refused[(kind, response.status_code)] += 1
                else:
                    spent[kind].append((time.perf_counter() - started) * 1000)
            conversation = Conversation.objects.create(user=bob).pk
            time.sleep(2 * PAUSE)
            try:
                spent["turn over the socket"].append(
                    asyncio.run(socket_turn(url, session, conversation, ask))
                )
            except (OSError, TimeoutError, websockets.WebSocketException) as exc:
                refused[("turn over the socket", type(exc).__name__)] += 1
    rows = list(MemoryRetrieval.objects.filter(user=bob, id__gt=since))
    return {
        "spent": spent,
        "refused": refused,
        "recalls": len(rows),
        "answered": sum(1 for r in rows if not r.error),
    }


def settled(user, most: float = 600.0) -> None:
    """Alice's queued imports run to their end (the next idle phase is idle)."""
    from memory.models import MemoryJob

    until = time.monotonic() + most
    while time.monotonic() < until:
        if not MemoryJob.objects.filter(user=user, state__in=("queued", "running")).exists():
            return
        time.sleep(1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--turns", type=int, default=8, help="each of bob's requests per phase")
    parser.add_argument("--ramp", type=float, default=5.0, help="seconds of load before bob")
    parser.add_argument("--flood", action="store_true", help="alice ignores Retry-After")
    parser.add_argument("--code", type=Path, default=Path(__file__).resolve().parents[1])
    args = parser.parse_args()
    code = args.code.resolve()
    sys.path.insert(0, str(code))
    from tests.fixtures.fake_anthropic import FakeAnthropic

    tmp = Path(tempfile.mkdtemp(prefix="ikario-fairness-"))
    rounds: dict[str, list[tuple[list[float], list[float]]]] = {kind: [] for kind in KINDS}
    recalls = {"idle": [0, 0], "loaded": [0, 0]}
    refused: collections.Counter = collections.Counter()
    got: collections.Counter = collections.Counter()
    spawn = multiprocessing.get_context("spawn")
    with FakeAnthropic() as fake, contextlib.ExitStack() as stack:
        fake.default_reply = "Here is an idea, based on what you told me."
        setup(code, tmp, fake.base_url)
        from chat.models import Conversation
        from memory.client import services

        stack.enter_context(shared_memory_server(tmp / "index", code))
        print(f"code: {code}  index: {tmp / 'index'}", flush=True)
        print(f"memory server: {services.wait_until_ready(180)}", flush=True)
        alice_user, alice_session = signed_in("alice")
        bob, bob_session = signed_in("bob")
        services.add_thoughts(user=bob, items=[{"content": f} for f in BOB_FACTS], timeout=120)
        conversations = [Conversation.objects.create(user=alice_user).pk for _ in range(5)]
        stack.enter_context(db_worker_process(code))
        url = stack.enter_context(daphne(code))
        print(f"daphne: {url}", flush=True)
        bob_round(url, bob, bob_session, 2, 1000)  # warm-up: imports, templates, the model
        for round_no in range(args.rounds):
            offset = 2 * round_no * args.turns
            idle = bob_round(url, bob, bob_session, args.turns, offset)
            stop, results = spawn.Event(), spawn.Queue()
            load = spawn.Process(
                target=alice,
                args=(url, alice_session, CSRF_SECRET, conversations, args.threads, args.flood)
                + (round_no, stop, results),
            )
            load.start()
            try:
                time.sleep(args.ramp)
                loaded = bob_round(url, bob, bob_session, args.turns, offset + args.turns)
            finally:
                stop.set()
            got.update(results.get(timeout=300))
            load.join(60)
            settled(alice_user)
            for kind in KINDS:
                rounds[kind].append((loaded["spent"][kind], idle["spent"][kind]))
            for name, phase in (("idle", idle), ("loaded", loaded)):
                recalls[name][0] += phase["answered"]
                recalls[name][1] += phase["recalls"]
                refused.update({(name, *key): n for key, n in phase["refused"].items()})
            line = ", ".join(
                f"{kind} {statistics.median(idle['spent'][kind]):.0f} -> "
                f"{statistics.median(loaded['spent'][kind]):.0f} ms"
                for kind in KINDS
                if idle["spent"][kind] and loaded["spent"][kind]
            )
            print(f"round {round_no + 1}: {line}", flush=True)

    mode = "ignoring Retry-After" if args.flood else "honouring Retry-After (<= 1 s)"
    print(
        f"\nbob beside alice at {args.threads} threads ({mode}); {args.rounds} rounds of "
        f"{args.turns} of each request idle, then {args.turns} loaded"
    )
    for kind in KINDS:
        pairs = [(a, b) for a, b in rounds[kind] if a and b]
        if not pairs:
            print(f"  {kind:<22}: no answers to compare")
            continue
        ratio, low, high = median_ratio(pairs)
        idle_ms = statistics.median([x for _, b in pairs for x in b])
        loaded_ms = statistics.median([x for a, _ in pairs for x in a])
        print(
            f"  {kind:<22}: idle {idle_ms:.0f} ms, loaded {loaded_ms:.0f} ms: "
            f"{ratio:.2f}x ({low:.2f}-{high:.2f}; target <= 3x)"
        )
    print(
        f"  bob's recalls answered: idle {recalls['idle'][0]}/{recalls['idle'][1]}, "
        f"loaded {recalls['loaded'][0]}/{recalls['loaded'][1]}"
    )
    if refused:
        print("  bob not served        : " + ", ".join(f"{k}: {n}" for k, n in refused.items()))
    total = sum(got.values())
    print(f"  alice's requests      : {total} in {args.rounds} loaded phases")
    counts = sorted(got.items(), key=str)
    print("  alice got             : " + ", ".join(f"{k} {s}: {n}" for (k, s), n in counts))


if __name__ == "__main__":
    main()
