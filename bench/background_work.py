"""Background work beside the chat: does a busy worker slow replies, and how fast does it save?

1. Reply latency, worker idle vs busy: the chat WebSocket consumer runs a streamed turn
   (60-word answer from the fake Messages API), memory off and memory on (auto-recall
   searches the same ikario_rag the worker writes to), while the worker is idle, while it
   is saving a 60-exchange conversation to the real ikario_rag (each busy sample starts once
   that job is RUNNING), and idle again: six cases a round, in a shuffled order. Every
   sample creates such a conversation just before its reply, an idle one then waits as long
   as a claim takes (uniformly within TASKS_WORKER_INTERVAL); only the busy one has it saved.
   The worker and the memory server run as `make run` runs them: `manage.py db_worker
   --nice 10` on this bench's SQLite file, and ikario_rag over streamable HTTP, which this
   process (the web app) and the worker both reach by its URL.
   Target: no measurable difference at the median. Measurable here means: the 95 %
   bootstrap interval of busy/idle at the median (rounds resampled whole) leaves out 1.0.
   The A/A control (idle again / idle) shows how wide this machine makes that interval.
2. Throughput, extraction off: exchanges saved per second by the auto-save job
   (save_conversation through the worker: grouping, tags, add_thoughts batches, records),
   committed (the job's end), and with their vectors (ikario_rag writes them behind the add).

Usage: .venv/bin/python bench/background_work.py [turns] [exchanges-per-conversation]
       [claim|saving]    (when a busy sample's reply starts: as the job is claimed, the
                          default, or once it has recorded its first batch)
"""

import asyncio
import contextlib
import random
import statistics
import sys
import tempfile
import time
import uuid

from _setup import (
    ROOT,
    db_worker_process,
    django_on_temp_db,
    median_ratio,
    shared_memory_server,
    summary,
    wait_indexed,
)

sys.path.insert(0, str(ROOT))
from tests.fixtures.fake_anthropic import FakeAnthropic  # noqa: E402

ANSWER = " ".join(f"word{n}" for n in range(60))
# When a busy sample's reply starts: as the worker claims the save job ("claim": the reply
# meets the job's start-up, its first reads and first batch), or once the job has recorded
# its first batch ("saving": the reply meets a save under way).
BUSY_FROM = "claim"


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
    from memory.learning.conversations import save_conversation
    from memory.worker import database

    committed, indexed = [], []
    for r in range(rounds):
        chat = conversation(user, n, f"t{r}")
        save_conversation.enqueue(chat.pk)
        start = time.perf_counter()
        database.run_ready_tasks()
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


# The cases of a round: the worker idle, busy, and idle again (the A/A control: two samples
# of the same case tell how far apart this machine puts them, i.e. what is "measurable").
CASES = ("idle", "busy", "idle again")


async def latency(user, turns, n, seed=0):
    """({(case, memory): [ms]}, overlapped): the six cases in a shuffled order each round
    (a fixed order would favour whichever comes first after the last busy sample)."""
    from asgiref.sync import sync_to_async
    from django.conf import settings
    from django_tasks_db.models import DBTaskResult

    from memory.learning.conversations import save_conversation
    from memory.models import SavedExchange

    async def wait_status(result_id, statuses, *, until=None):
        """Until the task has one of `statuses` (or the monotonic time `until` comes)."""
        while not await DBTaskResult.objects.filter(id=result_id, status__in=statuses).aexists():
            if until is not None and time.monotonic() >= until:
                return
            await asyncio.sleep(0.005)

    async def wait_as_for_a_claim():
        """What a busy sample does before its reply, without a job: poll the same way for
        as long as a claim takes (the worker looks at its queue every
        TASKS_WORKER_INTERVAL s, so a claim comes uniformly within one interval). Measured,
        a reply after such a wait, memory on, was 1.035x one started at once (the memory
        server's threads idle meanwhile): without it, that was counted as the worker's."""
        claimed = time.monotonic() + order.uniform(0, settings.TASKS_WORKER_INTERVAL)
        await wait_status(uuid.uuid4(), ["RUNNING"], until=claimed)  # a task nobody has

    samples = {(c, m): [] for c in CASES for m in (False, True)}
    order = random.Random(seed)
    overlapped = 0
    settled = sync_to_async(wait_indexed)
    for i in range(turns + 1):
        cases = list(samples)
        order.shuffle(cases)
        for case, memory in cases:
            busy = case == "busy"
            job = None
            # Every sample starts with the memory server's indexer idle: the busy one then
            # has the save job's whole work (commit in the worker, vectors in ikario_rag).
            await settled()
            # Every sample makes the same conversation first (the bench's own work before a
            # reply: its rows and objects, ~3-4 ms of an idle reply here), and waits as long
            # as a claim takes; only the busy sample has the worker save it.
            chat = await sync_to_async(conversation)(user, n, f"l{i}{case}{memory}")
            if not busy:
                await wait_as_for_a_claim()
            else:
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
                samples[(case, memory)].append(elapsed)
                overlapped += bool(job is not None and running)
    return samples, overlapped


@contextlib.contextmanager
def chat_with_memory():
    """The app on a temporary database (a file: a worker process shares it) and index, the
    fake Messages API answering ANSWER, the memory server (over HTTP) ready: yields (a user,
    the index directory)."""
    index = tempfile.mkdtemp(prefix="ikario-bench-index-")
    with FakeAnthropic() as fake:
        fake.default_reply = ANSWER
        django_on_temp_db(
            ANTHROPIC_BASE_URL=fake.base_url,
            ANTHROPIC_API_KEY="sk-bench",
            MCP_MEMORY_ENABLED="true",
            IKARIO_INDEX_DIR=index,
            MEMORY_EXTRACTION="false",
        )
        from django.contrib.auth import get_user_model

        from memory.client import services

        with shared_memory_server(index):
            services.wait_until_ready(300)
            yield get_user_model().objects.create_user("bench"), index


def main():
    global BUSY_FROM
    turns = int(sys.argv[1]) if len(sys.argv) > 1 else 40
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 60
    words = sys.argv[3:]
    if set(words) - {"claim", "saving"}:
        sys.exit("after the numbers: 'claim' or 'saving'")
    BUSY_FROM = "saving" if "saving" in words else "claim"
    with chat_with_memory() as (user, _):
        committed, indexed = throughput(user, n)
        with db_worker_process():
            samples, overlapped = asyncio.run(latency(user, turns, n))
    print(
        f"reply latency (streamed 60-word turn), {turns} samples per case, shuffled rounds, "
        f"busy from the job's {BUSY_FROM}, worker process at nice 10"
    )
    for memory in (False, True):
        idle, busy, again = (samples[(c, memory)] for c in CASES)
        label = "memory on (auto-recall)" if memory else "memory off"
        print(f"  {label}:")
        for case, taken in zip(CASES, (idle, busy, again), strict=True):
            s = summary(taken)
            print(f"    {case:10}: median {s['median']:.1f} ms (p95 {s['p95']:.1f})")
        # Busy against both idle samples of its round; the A/A control: idle again / idle.
        rounds = [([b], [i, a]) for i, b, a in zip(idle, busy, again, strict=True)]
        control = [([a], [i]) for i, a in zip(idle, again, strict=True)]
        for what, paired in (("busy/idle", rounds), ("idle again/idle (A/A)", control)):
            ratio, low, high = median_ratio(paired)
            # Measurable: the interval leaves out 1.0, i.e. no ratio this close to "the
            # same" is among the 95 % the rounds' own spread allows.
            seen = "measurable" if not low <= 1.0 <= high else "not measurable"
            print(
                f"    {what}: {ratio:.3f}x at the median "
                f"(95 % interval {low:.3f}-{high:.3f}: {seen})"
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
