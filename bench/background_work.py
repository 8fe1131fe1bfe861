"""Background work beside the chat: does a busy worker slow replies, and how fast does it save?

1. Reply latency, worker idle vs busy, interleaved: the chat WebSocket consumer runs a
   streamed turn (60-word answer from the fake Messages API), memory off and memory on
   (auto-recall searches the same ikario_rag the worker writes to), while the worker is
   idle, then while it is saving a 60-exchange conversation to the real ikario_rag (each
   busy sample starts once that job is RUNNING). Both samples create such a conversation
   just before their reply; the idle one leaves it unsaved. The worker runs as `make run` runs it:
   a child `manage.py db_worker` at a lower CPU priority on this bench's SQLite file,
   using this process's memory server (memory/worker_process.py; "process", the default),
   or a thread of this process (memory/worker.py; "thread", TASKS_WORKER_MODE=thread).
   Target: no measurable difference at the median.
2. Throughput, extraction off: exchanges saved per second by the auto-save job
   (save_conversation through the worker: grouping, tags, add_thoughts batches, records),
   committed (the job's end), and with their vectors (ikario_rag writes them behind the add).

Usage: .venv/bin/python bench/background_work.py [turns] [exchanges-per-conversation]
       [claim|saving]    (when a busy sample's reply starts: as the job is claimed, the
                          default, or once it has recorded its first batch)
       [process|thread]  (how the worker runs beside the app: a child process, the
                          default, or a thread of the app's process)
"""

import asyncio
import contextlib
import statistics
import sys
import tempfile
import time

from _setup import ROOT, django_on_temp_db, summary, wait_indexed

sys.path.insert(0, str(ROOT))
from tests.fixtures.fake_anthropic import FakeAnthropic  # noqa: E402

ANSWER = " ".join(f"word{n}" for n in range(60))
# When a busy sample's reply starts: as the worker claims the save job ("claim": the reply
# meets the job's start-up, its first reads and first batch), or once the job has recorded
# its first batch ("saving": the reply meets a save under way).
BUSY_FROM = "claim"
MODES = ("process", "thread")


def conversation(user, n, seed):
    from tests.fixtures.builders import make_conversation

    said = []
    for i in range(n):
        said.append(
            f"Run {seed} question {i}: how should I plan the {i}th hike near Grenoble? " * 4
        )
        said.append(f"Run {seed} answer {i}: start early, carry water and check the weather. " * 6)
    return make_conversation(user, f"Hikes {seed}", *said)


def throughput(user, n, rounds=3):
    from memory import worker
    from memory.autosave import save_conversation

    committed, indexed = [], []
    for r in range(rounds):
        chat = conversation(user, n, f"t{r}")
        save_conversation.enqueue(chat.pk)
        start = time.perf_counter()
        worker.run_ready_tasks()
        committed.append(n / (time.perf_counter() - start))
        wait_indexed()  # the vectors are written behind the add: until then only text finds them
        indexed.append(n / (time.perf_counter() - start))
    return committed, indexed


async def turn(user, *, memory: bool) -> float:
    """One streamed reply through the WebSocket consumer, in ms (as bench/chat_turn.py)."""
    import json

    from channels.routing import URLRouter
    from channels.testing import WebsocketCommunicator

    from chat.models import Conversation, ConversationSettings
    from chat.routing import websocket_urlpatterns

    conversation = await Conversation.objects.acreate(user=user)
    await ConversationSettings.objects.acreate(conversation=conversation, enable_memory=memory)
    communicator = WebsocketCommunicator(
        URLRouter(websocket_urlpatterns), f"/ws/conversations/{conversation.pk}/"
    )
    communicator.scope["user"] = user
    await communicator.connect()
    start = time.perf_counter()
    await communicator.send_to(text_data=json.dumps({"content": "Tell me about hiking."}))
    while 'data-busy="0"' not in await communicator.receive_from(timeout=30):
        pass
    elapsed = time.perf_counter() - start
    await communicator.disconnect()
    return elapsed * 1000


async def latency(user, turns, n):
    """{(busy, memory): [ms]}: the four cases interleaved, one of each per round."""
    from asgiref.sync import sync_to_async
    from django_tasks_db.models import DBTaskResult

    from memory.autosave import save_conversation
    from memory.models import SavedExchange

    async def wait_status(result_id, statuses):
        while not await DBTaskResult.objects.filter(id=result_id, status__in=statuses).aexists():
            await asyncio.sleep(0.005)

    samples = {(b, m): [] for b in (False, True) for m in (False, True)}
    overlapped = 0
    settled = sync_to_async(wait_indexed)
    for i in range(turns + 1):
        for busy, memory in samples:
            job = None
            # Every sample starts with the memory server's indexer idle: the busy one then
            # has the save job's whole work (commit in the worker, vectors in ikario_rag).
            await settled()
            # Both samples make the same conversation first (the bench's own work before a
            # reply: its rows and objects, ~3-4 ms of an idle reply here); only the busy
            # sample has the worker save it.
            chat = await sync_to_async(conversation)(user, n, f"l{i}{busy}{memory}")
            if busy:
                job = await sync_to_async(save_conversation.enqueue)(chat.pk)
                await wait_status(job.id, ["RUNNING"])
                if BUSY_FROM == "saving":
                    # Mid-save: the job has recorded its first batch and goes on with the
                    # next ones (and ikario_rag embeds what it committed).
                    while not await SavedExchange.objects.filter(conversation=chat).aexists():
                        await asyncio.sleep(0.002)
            elapsed = await turn(user, memory=memory)
            if job is not None:
                running = await DBTaskResult.objects.filter(id=job.id, status="RUNNING").aexists()
                await wait_status(job.id, ["SUCCESSFUL", "FAILED"])
            if i >= 1:  # the first round warms up imports, pools and templates
                samples[(busy, memory)].append(elapsed)
                overlapped += bool(job is not None and running)
    return samples, overlapped


@contextlib.contextmanager
def chat_with_memory(mode: str = "process"):
    """The app on a temporary database (a file: a worker process shares it) and index, the
    fake Messages API answering ANSWER, the memory server ready, the worker to start as
    `mode` says: yields (a user, the index directory)."""
    index = tempfile.mkdtemp(prefix="ikario-bench-index-")
    with FakeAnthropic() as fake:
        fake.default_reply = ANSWER
        django_on_temp_db(
            ANTHROPIC_BASE_URL=fake.base_url,
            ANTHROPIC_API_KEY="sk-bench",
            MCP_MEMORY_ENABLED="true",
            IKARIO_INDEX_DIR=index,
            MEMORY_EXTRACTION="false",
            TASKS_WORKER_MODE=mode,
        )
        from django.contrib.auth import get_user_model

        from memory import services

        services.wait_until_ready(300)
        yield get_user_model().objects.create_user("bench"), index


def main():
    global BUSY_FROM
    turns = int(sys.argv[1]) if len(sys.argv) > 1 else 40
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 60
    words = sys.argv[3:]
    if set(words) - {"claim", "saving", *MODES}:
        sys.exit("after the numbers: 'claim' or 'saving', 'process' or 'thread'")
    BUSY_FROM = "saving" if "saving" in words else "claim"
    mode = "thread" if "thread" in words else "process"
    with chat_with_memory(mode) as (user, _):
        from memory import worker_process

        committed, indexed = throughput(user, n)
        # As the app starts it (ikario_clone/asgi.py): a child process, or a thread.
        worker_process.start_beside_app()
        samples, overlapped = asyncio.run(latency(user, turns, n))
    print(
        f"reply latency (streamed 60-word turn), {turns} samples per case, interleaved, "
        f"busy from the job's {BUSY_FROM}, worker as a {mode}"
    )
    for memory in (False, True):
        idle, busy = summary(samples[(False, memory)]), summary(samples[(True, memory)])
        label = "memory on (auto-recall) " if memory else "memory off              "
        print(
            f"  {label}: idle median {idle['median']:.1f} ms (p95 {idle['p95']:.1f}) | "
            f"busy median {busy['median']:.1f} ms (p95 {busy['p95']:.1f}) | "
            f"busy/idle {busy['median'] / idle['median']:.2f}x"
        )
    print(
        f"  busy samples whose save job was still running when the reply ended: "
        f"{overlapped}/{2 * turns}"
    )
    print(f"auto-save throughput, extraction off, {n}-exchange conversations:")
    for label, rates in (("committed", committed), ("with their vectors", indexed)):
        print(
            f"  {label}: {statistics.median(rates):.1f} exchanges/s median of "
            f"{[round(r, 1) for r in rates]}"
        )


if __name__ == "__main__":
    main()
