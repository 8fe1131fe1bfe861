"""Auto-save through the real turn, the real task backend and worker,
and the real ikario_rag: what a later look at the memory finds."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from django.urls import reverse
from django_tasks_db.models import DBTaskResult

from chat import services as chat_services
from chat.models import Conversation, ConversationSettings, Message
from ikario_rag import contract
from memory.client import services
from memory.models import MemorySettings, SavedExchange
from memory.worker import database
from tests.fixtures.builders import make_conversation, send

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def offline(settings):
    """The offline responder answers (no extraction): auto-save alone is under test."""
    settings.ANTHROPIC_API_KEY = ""


def exchanges(n, topic="ski"):
    """2n messages: n questions and their answers."""
    said = []
    for i in range(1, n + 1):
        said += [f"Question {i} about {topic} in Chamonix?", f"Answer {i}: Chamonix {topic}."]
    return said


def conversation_memories(user) -> list[dict]:
    found = services.get_recent_memories(user=user, limit=100, kinds=["conversation"])
    return found["memories"]


run_worker = sync_to_async(database.run_ready_tasks)
memories_of = sync_to_async(conversation_memories)


async def test_it_does_not_save_a_conversation_of_ten_messages(alice, memory_server):
    chat = await sync_to_async(make_conversation)(alice, "Ski", *exchanges(4))

    await send(chat, "One more question?")  # messages 9 and 10

    # Considered (learning reads every conversation), but no transcript is kept of it.
    assert await DBTaskResult.objects.acount() == 1
    await run_worker()
    assert await memories_of(alice) == []
    await chat.arefresh_from_db()
    assert not chat.has_memory_backup


async def test_it_saves_every_exchange_once_the_conversation_passes_ten_messages(
    alice, memory_server
):
    chat = await sync_to_async(make_conversation)(alice, "Ski trip", *exchanges(5))

    await send(chat, "And the 11th message asks about lift passes?")
    await run_worker()

    saved = await memories_of(alice)
    answers = [
        m async for m in Message.objects.filter(conversation=chat, role="assistant").order_by("id")
    ]
    assert len(saved) == 6
    assert {m["metadata"]["source"] for m in saved} == {
        f"conversation:{chat.pk}:{a.pk}" for a in answers
    }
    last = next(m for m in saved if m["metadata"]["source"].endswith(f":{answers[-1].pk}"))
    # Answered by the offline responder (no key), which only says things back: not kept.
    assert last["content"] == "User: And the 11th message asks about lift passes?"
    assert last["metadata"]["kind"] == "conversation"
    assert last["metadata"]["category"] == "contextuelle"
    question = await Message.objects.filter(conversation=chat, role="user").alast()
    assert last["metadata"]["date"][:19] == question.created_at.isoformat()[:19]
    first = next(m for m in saved if m["metadata"]["source"].endswith(f":{answers[0].pk}"))
    assert "Chamonix" in first["metadata"]["tags"]
    assert "Assistant:" in first["content"]
    await chat.arefresh_from_db()
    assert chat.has_memory_backup
    assert await SavedExchange.objects.filter(conversation=chat).acount() == 6


async def test_it_saves_a_pinned_conversation_from_its_first_answer(alice, memory_server):
    chat = await sync_to_async(make_conversation)(alice, "Pinned", pinned=True)

    await send(chat, "My pinned question about sourdough")
    await run_worker()

    saved = await memories_of(alice)
    assert len(saved) == 1
    assert "My pinned question about sourdough" in saved[0]["content"]


async def test_it_saves_a_short_conversation_when_it_is_pinned(alice, memory_server, client):
    chat = await sync_to_async(make_conversation)(alice, "Sourdough", "How do I feed a starter?")
    await send(chat, "And how warm should the kitchen be for sourdough?")
    await run_worker()
    assert await memories_of(alice) == []  # 4 messages, not pinned: nothing saved

    await sync_to_async(client.force_login)(alice)
    response = await sync_to_async(client.post)(reverse("chat:conversation-pin", args=[chat.pk]))
    assert response.status_code in (200, 302)
    await run_worker()

    saved = await memories_of(alice)
    assert len(saved) == 1
    assert "how warm should the kitchen be for sourdough" in saved[0]["content"]
    await chat.arefresh_from_db()
    assert chat.pinned and chat.has_memory_backup


async def test_it_does_not_save_when_a_pinned_conversation_is_unpinned(alice, memory_server):
    chat = await sync_to_async(make_conversation)(alice, "Bread", pinned=True)
    await send(chat, "A question about rye bread")
    await run_worker()
    assert len(await memories_of(alice)) == 1

    await sync_to_async(chat_services.conversation_update)(conversation=chat, pinned=False)

    assert await DBTaskResult.objects.filter(status="READY").acount() == 0


async def test_it_saves_only_the_new_exchanges_of_a_continued_conversation(alice, memory_server):
    chat = await sync_to_async(make_conversation)(alice, "Ski", *exchanges(5))
    await send(chat, "Eleventh message?")
    await run_worker()
    first = {m["id"] for m in await memories_of(alice)}

    await send(chat, "Thirteenth message about avalanches?")
    await send(chat, "Fifteenth message about crampons?")
    await run_worker()

    saved = await memories_of(alice)
    assert len(saved) == 8
    assert first < {m["id"] for m in saved}  # the first six untouched
    new = [m for m in saved if m["id"] not in first]
    assert sorted("avalanches" in m["content"] for m in new) == [False, True]
    assert any("crampons" in m["content"] for m in new)


@pytest.mark.parametrize("where", ["user", "conversation", "everywhere"])
async def test_it_never_saves_when_memory_is_off(alice, memory_server, settings, where):
    chat = await sync_to_async(make_conversation)(alice, "Private", *exchanges(6))
    if where == "user":
        await MemorySettings.objects.acreate(user=alice, memory_enabled=False)
    elif where == "conversation":
        await ConversationSettings.objects.acreate(conversation=chat, enable_memory=False)
    else:
        settings.MCP_MEMORY_ENABLED = False

    await send(chat, "Another question")
    await run_worker()

    settings.MCP_MEMORY_ENABLED = True
    assert await DBTaskResult.objects.acount() == 0
    assert await memories_of(alice) == []


async def test_it_leaves_out_private_spans_from_the_text_and_the_tags(alice, memory_server):
    chat = await sync_to_async(make_conversation)(alice, "Secrets", pinned=True)

    await send(chat, "My Kubernetes cluster <private>password Zanzibar hunter2</private> is slow")
    await run_worker()

    saved = (await memories_of(alice))[0]
    assert "Kubernetes" in saved["content"]
    assert "Zanzibar" not in saved["content"] and "hunter2" not in saved["content"]
    assert "Zanzibar" not in saved["metadata"]["tags"]


async def test_it_tags_with_names_repeated_and_long_words_not_stop_words(alice, memory_server):
    chat = await sync_to_async(make_conversation)(alice, "Tags", pinned=True)

    await send(chat, "This is a very long user message about my photography course in Lisbon.")
    await run_worker()

    tags = (await memories_of(alice))[0]["metadata"]["tags"]
    assert "Lisbon" in tags and "photography" in tags
    assert not {"This", "this", "very", "long", "user", "about"} & set(tags)


def test_it_stores_a_very_long_exchange_as_searchable_parts(alice, memory_server):
    from memory.learning.backup import backup_conversation

    filler = " ".join(f"word{i}" for i in range(9000))  # ~80,000 characters
    chat = make_conversation(
        alice, "Long", f"Beginning zeppelin {filler} ending quokka", "Short answer"
    )

    result = backup_conversation(chat)

    assert result.saved == 1 and result.memories >= 4
    saved = conversation_memories(alice)
    assert len(saved) == result.memories
    assert all(len(m["content"]) <= contract.MAX_CONTENT for m in saved)
    assert sum(len(m["content"]) for m in saved) > 80_000  # nothing lost
    for word in ("zeppelin", "quokka", "word4500"):
        found = services.search_memories(user=alice, query=word, mode="text")["results"]
        assert any(word in r["content"] for r in found), word
    # Saving again stores nothing more.
    assert backup_conversation(chat).saved == 0
    assert len(conversation_memories(alice)) == result.memories


def test_it_saves_the_rest_from_the_button_and_says_saved_only_when_complete(
    alice, alice_client, memory_server
):
    chat = make_conversation(alice, "Button", "First question", "First answer")
    answer = chat.messages.filter(role="assistant").first()

    alice_client.post(f"/memory/save/{chat.pk}", {"message_id": answer.pk})
    page = alice_client.get(f"/c/{chat.pk}/").content.decode()
    assert "Saved" in page and "Save the rest" not in page

    from tests.fixtures.builders import add_message

    add_message(chat, "Second question about Patagonia")
    later = add_message(chat, "Second answer", role="assistant")
    page = alice_client.get(f"/c/{chat.pk}/").content.decode()
    assert "Save the rest" in page and "1 of 2 exchanges saved" in page

    response = alice_client.post(f"/memory/save/{chat.pk}", {"message_id": later.pk})

    assert "Saved to memory" in response.content.decode()
    saved = conversation_memories(alice)
    assert len(saved) == 2
    assert any("Patagonia" in m["content"] for m in saved)
    assert "Save the rest" not in alice_client.get(f"/c/{chat.pk}/").content.decode()


def test_it_backfills_conversations_that_grew_since_their_backup(alice, memory_server):
    from django.core.management import call_command

    from memory.learning.backup import backup_conversation
    from tests.fixtures.builders import add_message

    chat = make_conversation(alice, "Grown", "Old question", "Old answer")
    backup_conversation(chat)
    add_message(chat, "New question about Reykjavik")
    add_message(chat, "New answer", role="assistant")
    assert Conversation.objects.get(pk=chat.pk).has_memory_backup

    call_command("memory_backfill")

    saved = conversation_memories(alice)
    assert len(saved) == 2
    assert any("Reykjavik" in m["content"] for m in saved)
