"""Importing a 10,000-conversation ChatGPT export: how long, in how much memory, what it
learns, and whether another user's chat notices.

One user's export (bench-written, ChatGPT-shaped: tree branches, tool calls, a zip) is
imported by `manage.py import_history` in a process of its own (the web upload's job, run
inline: check, store, learn oldest first), on this bench's SQLite file and the real
ikario_rag over HTTP; extraction by the rules (no API key: the offline responder answers
chats). Measured:
- the import's wall time, and its process's peak resident memory (getrusage of the child),
  beside the export's size: bounded means the peak stays flat as the export grows;
- facts learnt, and secrets kept out (the job's summary);
- a second user's chat reply (a turn through the WebSocket consumer, memory on: auto-recall
  searches the memory server the import writes to): --turns before the import, one every
  --every seconds all along it, --turns after; during/idle at the median with its 95 %
  bootstrap interval (bench/_setup.py median_ratio), and the A/A control after/before.

Usage: .venv/bin/python bench/history_import.py [--conversations 10000] [--turns 15]
       [--every 20] [--read-only]
"""

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from pathlib import Path

from _setup import ROOT, django_on_temp_db, median_ratio, shared_memory_server, summary

sys.path.insert(0, str(ROOT))


def write_export(folder: Path, count: int) -> Path:
    from tests.fixtures.exports import many_chatgpt_conversations, write_json, write_zip

    conversations = write_json(folder / "conversations.json", many_chatgpt_conversations(count))
    export = write_zip(folder / "chatgpt-export.zip", {"conversations.json": conversations})
    conversations.unlink()
    return export


async def turn(user) -> float:
    """One reply through the WebSocket consumer, memory on, in ms (bench/chat_turn.py's)."""
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
    start = time.perf_counter()
    await communicator.send_to(text_data=json.dumps({"content": "What do I like cooking?"}))
    while 'data-busy="0"' not in await communicator.receive_from(timeout=60):
        pass
    elapsed = time.perf_counter() - start
    await communicator.disconnect()
    return elapsed * 1000


READ = """
import sys, django
django.setup()
from memory.history import opening
export = opening.open_export(sys.argv[1])
print(sum(len(chat.messages) for chat in opening.chats(export)))
"""


def reading_peak(export: Path) -> float:
    """Peak resident MB of a process that reads the whole export (the job's check pass)."""
    process = subprocess.Popen(
        [sys.executable, "-c", READ, str(export)],
        cwd=ROOT,
        env=dict(os.environ),
        stdout=subprocess.DEVNULL,
    )
    _, status, usage = os.wait4(process.pid, 0)
    if status:
        sys.exit("reading the export failed")
    return usage.ru_maxrss / 1024


def import_in_a_process(export: Path) -> tuple[subprocess.Popen, float]:
    # At nice 10, as the worker that runs an uploaded export's job (Procfile: db_worker --nice 10).
    process = subprocess.Popen(
        ["nice", "-n", "10", sys.executable, str(ROOT / "manage.py"), "import_history"]
        + ["--user", "importer"]
        + [str(export)],
        cwd=ROOT,
        env=dict(os.environ),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    return process, time.perf_counter()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--conversations", type=int, default=10_000)
    parser.add_argument("--turns", type=int, default=15, help="replies before and after")
    parser.add_argument("--every", type=float, default=20.0, help="s between replies during")
    parser.add_argument(
        "--read-only", action="store_true", help="only the reading's peak memory, 1/10 and whole"
    )
    args = parser.parse_args()
    index = tempfile.mkdtemp(prefix="ikario-bench-index-")
    folder = Path(tempfile.mkdtemp(prefix="ikario-bench-export-"))
    django_on_temp_db(
        ANTHROPIC_API_KEY="",
        MCP_MEMORY_ENABLED="true",
        IKARIO_INDEX_DIR=index,
        MEMORY_LIMITS_ENABLED="false",
    )
    from django.contrib.auth import get_user_model

    from memory.client import services
    from memory.models import MemoryJob

    users = get_user_model().objects
    importer, chatter = users.create_user("importer"), users.create_user("chatter")
    started = time.perf_counter()
    export = write_export(folder, args.conversations)
    written = time.perf_counter() - started
    tenth = write_export(Path(tempfile.mkdtemp()), args.conversations // 10)
    print(
        f"reading the export whole (a stream): peak RSS {reading_peak(tenth):.0f} MB for "
        f"{args.conversations // 10:,} conversations ({tenth.stat().st_size / 2**20:.1f} MB "
        f"zipped), {reading_peak(export):.0f} MB for {args.conversations:,} "
        f"({export.stat().st_size / 2**20:.1f} MB zipped)"
    )
    if args.read_only:
        return
    with shared_memory_server(index):
        services.wait_until_ready(300)
        services.add_thought(user=chatter, content="The user loves cooking Thai curries.")
        asyncio.run(turn(chatter))  # warm: the first turn pays imports and connections
        before = [asyncio.run(turn(chatter)) for _ in range(args.turns)]
        process, t0 = import_in_a_process(export)
        ended, waited = threading.Event(), {}

        def reap():  # the child's own resource use, once it ends
            waited["status"], waited["usage"] = os.wait4(process.pid, 0)[1:]
            ended.set()

        threading.Thread(target=reap, daemon=True).start()
        during = []
        while not ended.is_set():  # a reply every --every seconds, all along the import
            during.append(asyncio.run(turn(chatter)))
            ended.wait(timeout=args.every)
        status, usage = waited["status"], waited["usage"]
        took = time.perf_counter() - t0
        out, err = process.stdout.read(), process.stderr.read()
        after = [asyncio.run(turn(chatter)) for _ in range(args.turns)]
    if status:
        sys.exit(f"the import failed ({status}): {err[-2000:]}")
    job = MemoryJob.objects.get(user=importer)
    o = job.outcome
    size = export.stat().st_size
    with zipfile.ZipFile(export) as archive:
        unpacked = archive.getinfo("conversations.json").file_size
    print(
        f"export: {args.conversations:,} ChatGPT conversations, {size / 2**20:.1f} MB zipped, "
        f"{unpacked / 2**20:.1f} MB of conversations.json (written in {written:.0f} s)"
    )
    print(
        f"import (manage.py import_history, one process): {took:.0f} s wall, "
        f"{took / max(o.get('chats', 1), 1) * 1000:.1f} ms per chat; peak RSS "
        f"{usage.ru_maxrss / 1024:.0f} MB"
    )
    print(
        f"  {o.get('chats', 0):,} chats ({o.get('added', 0):,} new), {o.get('facts', 0):,} "
        f"facts learnt, {o.get('secrets', 0):,} kept out as secrets"
    )
    print(f"  {out.strip().splitlines()[-1] if out.strip() else ''}")
    for label, taken in (("before", before), ("during", during), ("after", after)):
        s = summary(taken)
        print(
            f"second user's reply {label:6}: median {s['median']:.0f} ms "
            f"(p95 {s['p95']:.0f}, n {s['n']})"
        )
    n = len(before)
    rounds = [([d], [before[i % n], after[i % n]]) for i, d in enumerate(during)]
    control = [([a], [b]) for b, a in zip(before, after, strict=False)]
    for what, paired in (("during/idle", rounds), ("after/before (A/A)", control)):
        ratio, low, high = median_ratio(paired)
        seen = "measurable" if not low <= 1.0 <= high else "not measurable"
        print(f"  {what}: {ratio:.2f}x at the median (95 % interval {low:.2f}-{high:.2f}: {seen})")


if __name__ == "__main__":
    main()
