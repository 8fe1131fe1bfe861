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
