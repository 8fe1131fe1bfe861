"""A user who turns memory off (MemorySettings.memory_enabled) gets memory off everywhere:
the indicator says so, no save button, a disabled sidebar search with a way back, a memory
API that refuses with 409, and a turn with no tools, no recall, no profile, no saving.
The real memory server runs all along (it is the user's choice, not the server's state)."""

import json

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator

from chat.models import Conversation
from chat.routing import websocket_urlpatterns
from memory.client import services
from memory.client.errors import MemoryOff
from memory.learning.backup import backup_conversation
from memory.models import MemoryRetrieval, MemorySettings, SavedExchange, UserProfile
from memory.recall.prompts import BLOCK_TAG
from tests.fixtures.builders import make_conversation, send

OFF = "memory is off for this account"


@pytest.fixture
def alice_off(alice, memory_server):
    services.add_thought(user=alice, content="Alice keeps bees on her roof")
    MemorySettings.objects.create(user=alice, memory_enabled=False)
    return alice


def test_it_shows_memory_off_in_the_indicator_not_green(alice_off, alice_client):
    html = alice_client.get("/memory/indicator").content.decode()

    assert "status-off" in html and "status-connected" not in html
    assert 'title="Memory off"' in html
    assert '<dd class="memory-connection">off</dd>' in html
    assert 'href="/memory/#memory-controls"' in html and "Turn it on" in html
    assert "every 30s" not in html and "memory-saved from:body" not in html


def test_it_offers_no_save_button_and_a_disabled_search_with_a_way_back(alice_off, alice_client):
    conversation = make_conversation(alice_off, "Bees", "How are my bees?", "Buzzing.")

    page = alice_client.get(f"/c/{conversation.pk}/").content.decode()
    search = alice_client.get("/memory/search", {"q": "bees"}).content.decode()

    assert "memory-save" not in page
    assert '<input type="search" name="q" placeholder="Search my memories…"' in page
    assert "disabled>" in page.split('placeholder="Search my memories…"')[1][:80]
    assert 'hx-get="/memory/search"' not in page  # the memory search never asks (chats' may)
    assert "Memory is off for your account." in page and 'href="/memory/#memory-controls"' in page
    assert "Memory is off for this account." in search and "Alice keeps bees" not in search


def test_it_saves_nothing_from_the_button_the_admin_or_a_backfill(
    alice_off, alice_client, admin_client
):
    conversation = make_conversation(alice_off, "Bees", "How are my bees?", "Buzzing.")

    button = alice_client.post(f"/memory/save/{conversation.pk}", {"category": "thematique"})
    admin = admin_client.post(
        "/admin/chat/conversation/",
        {"action": "back_up_to_memory", "_selected_action": [conversation.pk]},
        follow=True,
    )
    with pytest.raises(MemoryOff):
        backup_conversation(conversation)
    from django.core.management import call_command

    call_command("memory_backfill", "--user", "alice")

    assert "Not saved: memory is off for this account." in button.content.decode()
    assert "not backed up: memory is off for this account" in admin.content.decode()
    assert not SavedExchange.objects.filter(conversation=conversation).exists()
    found = services.get_recent_memories(user=alice_off)["memories"]
    assert [m["content"] for m in found] == ["Alice keeps bees on her roof"]


@pytest.mark.parametrize(
    ("method", "url", "body"),
    [
        ("get", "/api/memory/search?q=bees", None),
        ("post", "/api/memory/search", {"query": "bees"}),
        ("post", "/api/memory/add", {"content": "Alice sells honey"}),
        ("post", "/api/memory/evolution", {"concept": "bees"}),
        ("post", "/api/memory/consistency", {"statement": "Alice keeps bees"}),
        ("post", "/api/memory/forget", {"topic": "bees"}),
        ("get", "/api/memory/recent", None),
        ("get", "/api/memory/stats", None),
        ("get", "/api/memory/abc123", None),
        ("delete", "/api/memory/abc123", None),
    ],
)
def test_it_refuses_the_memory_api_with_409(alice_off, alice_client, method, url, body):
    if body is None:
        response = getattr(alice_client, method)(url)
    else:
        response = alice_client.post(url, json.dumps(body), content_type="application/json")

    assert response.status_code == 409
    assert response.json() == {"error": {"field": None, "reason": OFF, "code": "off"}}
    assert len(services.get_recent_memories(user=alice_off)["memories"]) == 1


@pytest.mark.django_db(transaction=True)
def test_it_gives_the_turn_no_tools_no_recall_no_profile_and_saves_nothing(
    alice_off, fake_anthropic
):
    UserProfile.objects.create(user=alice_off, built="Who: Alice, a beekeeper")
    conversation = make_conversation(alice_off, "Bees", pinned=True)
    fake_anthropic.reply("I do not remember anything.")

    async_to_sync(send)(conversation, "What do you know about my bees?")

    sent = fake_anthropic.last_request
    assert "tools" not in sent
    assert f"<{BLOCK_TAG}>" not in sent["system"] and "beekeeper" not in sent["system"]
    assert "Alice keeps bees" not in sent["system"]
    assert not MemoryRetrieval.objects.filter(conversation=conversation).exists()
    # Pinned conversations are saved after every answer, unless memory is off.
    from memory.worker.database import run_ready_tasks

    run_ready_tasks()
    assert not SavedExchange.objects.filter(conversation=conversation).exists()


@pytest.mark.django_db(transaction=True)
async def test_it_streams_an_answer_with_no_save_button(alice, memory_server, fake_anthropic):
    await MemorySettings.objects.acreate(user=alice, memory_enabled=False)
    conversation = await Conversation.objects.acreate(user=alice)
    fake_anthropic.reply("Answered.")
    communicator = WebsocketCommunicator(
        URLRouter(websocket_urlpatterns), f"/ws/conversations/{conversation.pk}/"
    )
    communicator.scope["user"] = alice
    assert (await communicator.connect())[0]

    await communicator.send_to(text_data=json.dumps({"content": "Hello"}))
    frames = []
    while not frames or 'data-busy="0"' not in frames[-1]:
        frames.append(await communicator.receive_from(timeout=60))
    await communicator.disconnect()

    assert "Answered." in frames[-1] and "memory-save" not in frames[-1]
    saved = await sync_to_async(SavedExchange.objects.filter(conversation=conversation).exists)()
    assert not saved
