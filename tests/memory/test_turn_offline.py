"""With no API key, the offline responder still drives the real memory tools end to end."""

import pytest
from asgiref.sync import sync_to_async

from chat.models import Conversation, Message
from memory.client import services
from tests.fixtures.builders import send

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def offline(settings):
    settings.ANTHROPIC_API_KEY = ""


async def test_it_saves_and_recalls_without_a_key(offline, alice, memory_server):
    first = await Conversation.objects.acreate(user=alice, title="One")
    events = await send(first, "Remember that my sister Léa lives in Lyon")

    finished = [e for e in events if e.kind == "tool_finished"]
    assert [(e.name, e.is_error) for e in finished] == [("save_memory", False)]
    assert events[-1].kind == "done"
    assert "saved that to my memory" in events[-1].message.content
    search = sync_to_async(services.search_memories, thread_sensitive=False)
    found = await search(user=alice, query="Léa Lyon")
    assert found["results"][0]["content"] == "my sister Léa lives in Lyon"

    second = await Conversation.objects.acreate(user=alice, title="Two")
    events = await send(second, "What do you know about Léa?")
    answer = events[-1].message.content
    assert "- my sister Léa lives in Lyon" in answer
    saved = await Message.objects.aget(pk=events[-1].message.pk)
    assert saved.tool_calls[0]["name"] == "search_memories"


async def test_what_do_you_know_about_me_answers_from_the_profile_offline(
    offline, alice, memory_server, settings
):
    """With 40 facts in memory, "What do you know about me?" used to search the memory for
    "me" and answer that it found nothing: the profile (the person sheet) answers it."""
    from memory.learning import profile
    from memory.worker import database

    settings.MEMORY_PROFILE_DEBOUNCE = 0
    facts = [
        ("The user lives in Porto", "self"),
        ("The user works as a nurse", "self"),
        ("The user speaks Portuguese", "self"),
        *[(f"The user's friend Friend{n} lives in Town{n}", "fact") for n in range(37)],
    ]
    add = sync_to_async(services.add_thoughts, thread_sensitive=False)
    await add(user=alice, items=[{"content": c, "context": {"kind": k}} for c, k in facts])
    await sync_to_async(profile.facts_changed)(user=alice, count=len(facts))
    await sync_to_async(database.run_ready_tasks)()

    chat = await Conversation.objects.acreate(user=alice, title="Me")
    answer = (await send(chat, "What do you know about me?"))[-1].message.content
    assert "Home and places: The user lives in Porto" in answer
    assert "Work: The user works as a nurse" in answer
    assert "Languages: The user speaks Portuguese" in answer
    assert "found nothing" not in answer

    answer = (await send(chat, "Que sais-tu de moi ?"))[-1].message.content
    assert "The user lives in Porto" in answer
