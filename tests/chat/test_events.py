"""A user's UI events reach every page that user has open, and only theirs: the
conversation page's socket, the new-chat page's, from async code and from a thread with
no event loop (the background worker)."""

import asyncio
import threading

import pytest
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import AnonymousUser

from chat import events
from chat.models import Conversation
from chat.routing import websocket_urlpatterns

pytestmark = pytest.mark.django_db(transaction=True)

TOAST = '<div hx-swap-oob="beforeend:#toasts"><p class="toast">Saved</p></div>'


async def _page(user, path):
    communicator = WebsocketCommunicator(URLRouter(websocket_urlpatterns), path)
    communicator.scope["user"] = user
    connected, code = await communicator.connect()
    return communicator, connected, code


async def test_it_forwards_a_users_events_to_each_of_their_pages(alice, bob):
    conversation = await Conversation.objects.acreate(user=alice)
    chat_page, _, _ = await _page(alice, f"/ws/conversations/{conversation.pk}/")
    new_chat_page, connected, _ = await _page(alice, "/ws/events/")
    bobs_page, _, _ = await _page(bob, "/ws/events/")
    assert connected

    await events.apublish(alice.pk, html=TOAST, topic="memory")

    assert await chat_page.receive_from(timeout=5) == TOAST
    assert await new_chat_page.receive_from(timeout=5) == TOAST
    assert await bobs_page.receive_nothing(timeout=0.3)
    for page in (chat_page, new_chat_page, bobs_page):
        await page.disconnect()


async def test_it_refuses_an_anonymous_events_socket():
    _, connected, code = await _page(AnonymousUser(), "/ws/events/")
    assert (connected, code) == (False, 4401)


async def test_it_delivers_an_event_published_from_a_thread_with_no_loop(alice):
    page, _, _ = await _page(alice, "/ws/events/")

    # The background worker is such a thread: publish() hands the send to the sockets' loop.
    worker = threading.Thread(target=events.publish, args=(alice.pk,), kwargs={"html": TOAST})
    worker.start()
    await asyncio.to_thread(worker.join)

    assert await page.receive_from(timeout=5) == TOAST
    await page.disconnect()


async def test_it_sends_nothing_for_an_event_without_html(alice):
    page, _, _ = await _page(alice, "/ws/events/")
    await events.apublish(alice.pk, topic="memory", added=["abc"])
    assert await page.receive_nothing(timeout=0.3)
    await page.disconnect()
