"""A conversation's summaries (levels 1+) in memory, found by meaning."""

import json

import pytest
from asgiref.sync import async_to_sync

from chat.models import ConversationSummary, Message
from chat.tasks import summarize_conversation
from memory.client import services
from memory.learning import summaries
from memory.models import KeptFromMemory
from memory.recall import tools
from memory.worker import database
from tests.fixtures.builders import make_conversation
from tests.fixtures.memory_server import wait_indexed

pytestmark = pytest.mark.django_db(transaction=True)

SOURDOUGH = (
    "The user asked how to keep a sourdough starter alive; the assistant advised feeding "
    "it flour and water every day."
)
INSURANCE = "The user compared car insurance quotes and chose the cheaper annual policy."
PAUSED = "The user described a secret surprise party planned for Marc."


def _chat(user):
    said = []
    for n in range(1, 7):
        said += [f"Question {n}?", f"Answer {n}."]
    chat = make_conversation(user, "Weekend", *said)
    ids = list(
        Message.objects.filter(conversation=chat).order_by("id").values_list("id", flat=True)
    )
    for (first, last), text in zip(
        [(ids[0], ids[1]), (ids[2], ids[3]), (ids[4], ids[5])],
        [SOURDOUGH, INSURANCE, PAUSED],
        strict=True,
    ):
        ConversationSummary.objects.create(
            conversation=chat,
            level=1,
            first_message_id=first,
            last_message_id=last,
            source_chars=100,
            text=text,
            method="llm",
        )
    # Said while memory was paused: no summary covering it goes to memory.
    KeptFromMemory.objects.create(message_id=ids[4], why="paused")
    return chat


def test_a_conversations_summaries_are_found_by_meaning(alice, memory_server):
    chat = _chat(alice)

    summarize_conversation.call(chat.pk)  # the job chat runs after an answer
    database.run_ready_tasks()  # memory's index job it set off
    wait_indexed()

    found = services.search_memories(
        user=alice, query="baking bread with natural yeast", kinds=["summary"], n_results=3
    )
    best = found["results"][0]
    assert best["content"] == SOURDOUGH
    assert best["metadata"]["kind"] == "summary"
    assert best["metadata"]["source"].startswith(f"conversation:{chat.pk}:summary:")
    assert best["metadata"]["subjects"] == ["Weekend"]
    # By meaning: the query shares no word with the summary, so words alone miss it.
    by_words = services.search_memories(
        user=alice, query="baking bread with natural yeast", kinds=["summary"], mode="text"
    )
    assert SOURDOUGH not in [m["content"] for m in by_words["results"]]
    held = services.list_memories(user=alice, kinds=["summary"], limit=100)["memories"]
    assert PAUSED not in [m["content"] for m in held]
    assert INSURANCE in [m["content"] for m in held]
    # Claude finds it the same way, asking for summaries.
    outcome = async_to_sync(tools.run_tool)(
        alice,
        chat,
        "search_memories",
        {"query": "baking bread with natural yeast", "kinds": ["summary", "conversation"]},
    )
    assert json.loads(outcome.content)["results"][0]["content"] == SOURDOUGH
    # Once is enough: a second run adds nothing.
    assert summaries.index_summaries.call(chat.pk) == 0


def test_nothing_is_kept_when_saving_conversations_is_off(alice, memory_server):
    from memory.models import MemorySettings

    MemorySettings.objects.update_or_create(user=alice, defaults={"autosave": False})
    chat = _chat(alice)

    assert summaries.index_summaries.call(chat.pk) == 0
    assert services.list_memories(user=alice, kinds=["summary"])["total"] == 0
