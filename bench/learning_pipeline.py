"""What the memory learns from one-exchange chats, through the whole pipeline
(`make bench-learning-pipeline`).

Offline, on bench/quality/learning_dev.json (lane extract26's development set): Django on
a throwaway database, a real ikario_rag, the chat's real turn, the task queue (django-tasks-db)
run by a worker thread polling every TASKS_WORKER_INTERVAL s as `manage.py db_worker` does,
and the real `anthropic` SDK against the fake Messages API
(tests/fixtures/fake_anthropic.py) playing a perfect extraction model: for a statement's
words it records the statement as the fact (its keys as subjects, an expiry for a passing
state), for a question that needs a fact it echoes that fact back, paraphrased (the mem0
loop: a model taking the recalled memory for something the user said).

- captured: one-exchange chats, each stating something in passing, whose fact is stored
  (a fact memory holding every key of the statement), with the model and with no key (the
  rules of memory/learning/offline_facts.py);
- recalled: new chats asking what needs the fact (the set's `chats`), whose turn got it in
  its <retrieved_memories> block; echoes: the paraphrased restatements written back;
- time from the answer to the fact being stored (median, p95), at MEMORY_LEARN_DELAY 0 and
  at its default: the pause learning waits for, plus the worker's polling and the work.

    .venv/bin/python bench/learning_pipeline.py [--set FILE] [--delay SECONDS] [--verbose]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

from _setup import ROOT, django_on_temp_db, wait_indexed

sys.path.insert(0, str(ROOT))
from tests.fixtures.fake_anthropic import FakeAnthropic  # noqa: E402
from tests.fixtures.scripted_extractor import ScriptedExtractor, fact  # noqa: E402

DATA = ROOT / "bench" / "quality"
FACT_KINDS = ["fact", "preference", "goal", "self"]
ECHO = "The user mentioned again: "
VERBOSE = "--verbose" in sys.argv
PAUSED = 12  # statements timed with the default pause (each waits for it)


def _fold(text: str) -> str:
    from memory.learning.offline_facts import fold

    return fold(text)


def _script(data: dict) -> ScriptedExtractor:
    facts = {}
    for statement in data["statements"]:
        expires = {"expires": "7d"} if statement.get("expires") else {}
        subjects = [key.lower() for key in statement["keys"]][:4]
        facts[statement["text"]] = [fact(statement["text"], statement["kind"], subjects, **expires)]
    for chat in data.get("chats", []):
        facts.setdefault(chat["question"], [fact(ECHO + chat["said"], "fact")])
    return ScriptedExtractor(facts, reply="Noted. Here is a short answer.")


class Worker(threading.Thread):
    """The task worker's loop: run what is due, sleep TASKS_WORKER_INTERVAL s."""

    def __init__(self):
        super().__init__(daemon=True)
        self.stopped = threading.Event()

    def run(self):
        from django.conf import settings
        from django.db import close_old_connections

        from memory.worker import database as worker

        while not self.stopped.is_set():
            worker.run_ready_tasks()
            close_old_connections()
            self.stopped.wait(settings.TASKS_WORKER_INTERVAL)


def _chat(user, text: str):
    """A new conversation where the user says `text`; returns (answer id, time answered)."""
    from chat.models import Conversation, Message
    from tests.fixtures.builders import send

    conversation = Conversation.objects.create(user=user, title="bench")
    asyncio.run(send(conversation, text))
    answered = time.time()
    answer = Message.objects.filter(conversation=conversation, role="assistant").last()
    return conversation, answer.pk, answered


def _stored(user) -> list[str]:
    from memory.client import services

    found = services.get_recent_memories(user=user, limit=100, kinds=FACT_KINDS)["memories"]
    return [_fold(m["content"]) for m in found]


def capture(user, statements: list[dict], delay: float) -> dict:
    """Each statement in a chat of its own, one at a time (the next once the last is read:
    a worker yields to a streaming answer, and the bench's own chats would hold it), or
    with a pause to wait for, all in a row (they are said before the first is due)."""
    from django.conf import settings

    from memory.models import LearntExchange

    settings.MEMORY_LEARN_DELAY = delay
    answered = {}
    for statement in statements:
        _, answer, at = _chat(user, statement["text"])
        answered[answer] = at
        if not delay:
            _wait_read(LearntExchange, [answer], 120)
    _wait_read(LearntExchange, list(answered), delay + 120)
    waits = [
        row.learnt_at.timestamp() - answered[row.answer_id]
        for row in LearntExchange.objects.filter(answer_id__in=answered)
    ]
    stored = _stored(user)
    captured = sum(
        any(all(_fold(k) in fact for k in s["keys"]) for fact in stored) for s in statements
    )
    return {"captured": captured, "n": len(statements), "waits": sorted(waits)}


def _wait_read(learnt, answers: list[int], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while learnt.objects.filter(answer_id__in=answers).count() < len(answers):
        if time.monotonic() > deadline:
            raise SystemExit("learning did not finish in time")
        time.sleep(0.05)


def recall(user, chats: list[dict]) -> dict:
    """Each chat's statement was said in an earlier chat: ask what needs it in a new one."""
    from memory.client import services
    from memory.models import LearntExchange, MemoryRetrieval
    from memory.recall.prompts import _one_line

    before = {m["id"]: m for m in _recent(services, user)}
    recalled = []
    asked = []
    for chat in chats:
        conversation, answer, _ = _chat(user, chat["question"])
        asked.append(answer)
        logged = MemoryRetrieval.objects.filter(conversation=conversation).first()
        ids = [m["id"] for m in (logged.memories if logged else [])]
        got = [_fold(_one_line(before[i]["content"])) for i in ids if i in before]
        if any(all(_fold(k) in text for k in chat["keys"]) for text in got):
            recalled.append(chat)
        elif VERBOSE:
            print(f"  missed: {chat['question']!r} -> {got}")
    _wait_read(LearntExchange, asked, 120)
    after = {_fold(m["content"]) for m in _recent(services, user)}
    # The scripted model echoes every question's fact; of a fact that was recalled, the
    # echo must not be written back (of one that was not, it is what the model made up).
    echoed = sum(_fold(ECHO + chat["said"]) in after for chat in recalled)
    return {"recalled": len(recalled), "n": len(chats), "echoes": echoed}


def _recent(services, user) -> list[dict]:
    return services.get_recent_memories(user=user, limit=100, kinds=FACT_KINDS)["memories"]


def _times(waits: list[float]) -> str:
    p95 = waits[max(0, int(len(waits) * 0.95) - 1)]
    return f"median {statistics.median(waits):.1f} s, p95 {p95:.1f} s"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", type=Path, default=DATA / "learning_dev.json")
    parser.add_argument("--delay", type=float, help="the default pause (settings' by default)")
    parser.add_argument("--verbose", action="store_true", help="list the chats not recalled")
    args = parser.parse_args()
    data = json.loads(args.set.read_text())
    index = tempfile.mkdtemp(prefix="ikario-bench-index-")
    script = _script(data)
    with FakeAnthropic() as fake:
        fake.respond_with(script)
        django_on_temp_db(
            ANTHROPIC_BASE_URL=fake.base_url,
            ANTHROPIC_API_KEY="sk-bench",
            MCP_MEMORY_ENABLED="true",
            IKARIO_INDEX_DIR=index,
            MCP_CONNECT_TIMEOUT="300",
        )
        from django.conf import settings
        from django.contrib.auth import get_user_model

        from memory.client import mcp, services

        default_delay = settings.MEMORY_LEARN_DELAY if args.delay is None else args.delay
        settings.MEMORY_RETRIEVAL_TIMEOUT = 60.0  # the decision, not a busy machine's deadline
        services.wait_until_ready(300)
        worker = Worker()
        worker.start()
        users = get_user_model().objects
        statements, chats = data["statements"], data.get("chats", [])
        print(f"{len(statements)} statements said in passing, {len(chats)} chats needing them")
        model = capture(users.create_user("model"), statements, 0.0)
        print(f"captured, scripted model  : {model['captured']}/{model['n']}")
        print(f"  answer -> fact stored, delay 0 s  : {_times(model['waits'])}")
        paused = capture(users.create_user("paused"), statements[:PAUSED], default_delay)
        print(f"  answer -> fact stored, delay {default_delay:g} s : {_times(paused['waits'])}")
        wait_indexed()
        settings.MEMORY_LEARN_DELAY = 0.0
        user = users.get(username="model")
        found = recall(user, chats)
        print(f"recalled in new chats     : {found['recalled']}/{found['n']}")
        print(f"echoes written back       : {found['echoes']} of {found['recalled']} recalled")
        settings.ANTHROPIC_API_KEY = ""
        rules = capture(users.create_user("rules"), statements, 0.0)
        print(f"captured, no key (rules)  : {rules['captured']}/{rules['n']}")
        wait_indexed()
        print(
            f"recalled in new chats     : {recall(users.get(username='rules'), chats)['recalled']}"
            f"/{len(chats)} (no key)"
        )
        worker.stopped.set()
        worker.join(10)
        mcp.close_client()


if __name__ == "__main__":
    main()
