"""Incognito chats: used like any chat while open, never listed or searched, no past-chat
tools or summaries, and deleted once left, when another chat starts, or at logout."""

import asyncio
import json

import pytest
from asgiref.sync import sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.urls import reverse

from chat import past_chats, search, tasks
from chat.models import Conversation, Message
from chat.routing import websocket_urlpatterns
from tests.fixtures.builders import make_conversation


def _incognito(user, *contents):
    return make_conversation(user, "Secret plans", *contents, incognito=True)


@pytest.mark.django_db
def test_it_starts_an_incognito_chat_from_the_new_chat_page(alice_client, alice):
    page = alice_client.get(reverse("chat:home") + "?incognito=1")
    html = page.content.decode()
    assert 'id="incognito-notice"' in html
    assert '<input type="hidden" name="incognito" value="1">' in html

    response = alice_client.post(
        reverse("chat:conversation-new"), {"content": "A surprise party", "incognito": "1"}
    )

    conversation = Conversation.objects.get(user=alice)
    assert response.status_code == 302 and conversation.incognito
    opened = alice_client.get(reverse("chat:conversation", args=[conversation.pk])).content.decode()
    assert 'id="incognito-notice"' in opened
    assert f'id="conv-{conversation.pk}"' not in opened  # not in the sidebar, even open


@pytest.mark.django_db
def test_it_offers_the_incognito_button_beside_new_chat(alice_client):
    html = alice_client.get(reverse("chat:home")).content.decode()
    assert 'id="incognito-chat"' in html and "?incognito=1" in html
    assert 'id="incognito-notice"' not in html


@pytest.mark.django_db
def test_it_never_lists_or_finds_an_incognito_chat(alice_client, alice):
    kept = make_conversation(alice, "Ski trip", "Chamonix skiing in February", "Great idea")
    hidden = _incognito(alice, "Chamonix surprise for Marc", "Noted")

    sidebar = alice_client.get(reverse("chat:home")).content.decode()
    assert f'id="conv-{kept.pk}"' in sidebar and f'id="conv-{hidden.pk}"' not in sidebar
    listed = alice_client.get("/api/conversations").json()["conversations"]
    assert [c["id"] for c in listed] == [kept.pk]
    found = alice_client.get("/api/conversations/search?q=Chamonix").json()["results"]
    assert {r["conversation_id"] for r in found} == {kept.pk}
    box = alice_client.get(reverse("chat:search") + "?q=surprise", HTTP_HX_REQUEST="true")
    assert "Secret plans" not in box.content.decode()
    assert search.search_messages(user=alice, query="surprise") == []


@pytest.mark.django_db(transaction=True)
async def test_it_keeps_incognito_chats_out_of_claudes_past_chat_tools(alice):
    other = await sync_to_async(make_conversation)(alice, "Today's chat", "Hello")
    await sync_to_async(_incognito)(alice, "Chamonix surprise for Marc", "Noted")
    execute = past_chats.make_executor(alice, other)

    found = await execute("conversation_search", {"query": "surprise"})
    recent = await execute("recent_chats", {"n": 10})

    assert json.loads(found.content)["results"] == []
    assert json.loads(recent.content)["chats"] == []


@pytest.mark.django_db(transaction=True)
async def test_it_gives_an_incognito_chat_no_past_chat_tools(alice):
    await sync_to_async(make_conversation)(alice, "Older chat", "Hello")
    secret = await sync_to_async(_incognito)(alice, "Hi")
    message = await Message.objects.acreate(conversation=secret, role="user", content="Hi")

    brought = await past_chats.prepare_turn(user=alice, conversation=secret, user_message=message)

    assert brought.tools == [] and brought.system_blocks == []


@pytest.mark.django_db
def test_it_keeps_no_summaries_of_an_incognito_chat(
    alice, settings, django_capture_on_commit_callbacks
):
    settings.CHAT_SUMMARY_FOLD_CHARS = 500
    secret = _incognito(alice, "x " * 400, "y " * 400)
    answer = secret.messages.filter(role="assistant").get()

    with django_capture_on_commit_callbacks() as queued:
        tasks.on_turn_finished(Message, conversation=secret, message=answer)

    assert queued == []


@pytest.mark.django_db
def test_it_ends_the_previous_incognito_chat_when_another_starts(alice_client, alice):
    secret = _incognito(alice, "Hi", "Hello")
    alice_client.post(reverse("chat:conversation-new"), {"content": "A normal chat"})
    assert not Conversation.objects.filter(pk=secret.pk).exists()
    assert Conversation.objects.filter(user=alice).count() == 1


@pytest.mark.django_db
def test_it_ends_incognito_chats_at_logout(alice_client, alice, bob):
    secret = _incognito(alice, "Hi")
    theirs = make_conversation(bob, "Bob's", incognito=True)
    alice_client.post(reverse("logout"))
    assert not Conversation.objects.filter(pk=secret.pk).exists()
    assert Conversation.objects.filter(pk=theirs.pk).exists()


async def _open(user, conversation):
    communicator = WebsocketCommunicator(
        URLRouter(websocket_urlpatterns), f"/ws/conversations/{conversation.pk}/"
    )
    communicator.scope["user"] = user
    connected, _ = await communicator.connect()
    assert connected
    return communicator


async def _exists(conversation) -> bool:
    return await Conversation.objects.filter(pk=conversation.pk).aexists()


# A bound on the ending's own work once the grace is over (a busy machine), not its speed.
ENDED_WITHIN = 30.0


async def _exists_after_grace(conversation, grace: float) -> bool:
    """Whether the chat is still there once its grace is over: waits the grace, then up to
    ENDED_WITHIN for it to go (asserting on the outcome, not on how soon it came)."""
    loop = asyncio.get_running_loop()
    await asyncio.sleep(grace)
    deadline = loop.time() + ENDED_WITHIN
    while await _exists(conversation) and loop.time() < deadline:
        await asyncio.sleep(0.05)
    return await _exists(conversation)


@pytest.mark.django_db(transaction=True)
async def test_it_ends_an_incognito_chat_once_its_page_is_left(alice, settings):
    settings.CHAT_INCOGNITO_GRACE = 0.2
    secret = await sync_to_async(_incognito)(alice, "Hi", "Hello")
    normal = await sync_to_async(make_conversation)(alice, "Normal", "Hi", "Hello")

    page = await _open(alice, secret)
    await page.disconnect()
    other = await _open(alice, normal)
    await other.disconnect()

    assert not await _exists_after_grace(secret, 0.2)
    await asyncio.sleep(0.4)  # the normal chat's grace is over too: it stays
    assert await _exists(normal)
    assert not await Message.objects.filter(conversation_id=secret.pk).aexists()


@pytest.mark.django_db(transaction=True)
async def test_it_keeps_an_incognito_chat_through_a_reload(alice, settings):
    # Long enough for a reconnect on a loaded machine; the check waits it out.
    settings.CHAT_INCOGNITO_GRACE = 2.0
    secret = await sync_to_async(_incognito)(alice, "Hi", "Hello")

    page = await _open(alice, secret)
    await page.disconnect()
    reloaded = await _open(alice, secret)  # within the grace period
    await asyncio.sleep(2.5)  # past the first page's grace: the reload kept it
    assert await _exists(secret)

    await reloaded.disconnect()
    assert not await _exists_after_grace(secret, 2.0)


@pytest.mark.django_db(transaction=True)
async def test_it_says_so_when_an_ended_incognito_chat_is_written_to(alice):
    secret = await sync_to_async(_incognito)(alice, "Hi", "Hello")
    page = await _open(alice, secret)
    # Another tab starts a new chat: this one is over.
    await Conversation.objects.filter(pk=secret.pk).adelete()

    await page.send_to(text_data=json.dumps({"content": "Still there?"}))
    frame = await page.receive_from(timeout=5)
    await page.disconnect()

    assert "This incognito chat has ended" in frame
