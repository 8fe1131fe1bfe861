"""Live: a memory saved by Claude's tool, by the background worker, from another tab (a
view) reaches every page the user has open over Channels, without a reload: the chat
page's socket pulses the indicator, the memory page's own socket renders the new card
where its filters would show it. Only the user's own pages hear of it."""

import asyncio

import pytest
from asgiref.sync import sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import AnonymousUser

from chat.routing import websocket_urlpatterns as chat_sockets
from memory.client import live, services
from memory.routing import websocket_urlpatterns as memory_sockets
from memory.worker import database
from tests.fixtures.builders import make_conversation, send

pytestmark = pytest.mark.django_db(transaction=True)

PULSE = 'hx-get="/memory/indicator?pulse=1"'


async def _socket(user, path):
    communicator = WebsocketCommunicator(URLRouter([*chat_sockets, *memory_sockets]), path)
    communicator.scope["user"] = user
    connected, code = await communicator.connect()
    return communicator, connected, code


async def _frames(page, until: str, timeout=60) -> str:
    """Every frame received up to the one that holds `until`, joined."""
    # `timeout` only bounds a test that would hang: 15 s was not enough at load 9 on 2 cores.
    got = []
    while True:
        frame = await page.receive_from(timeout=timeout)
        got.append(frame)
        if until in frame:
            return "\n".join(got)


async def test_it_refuses_an_anonymous_memory_page_socket():
    _, connected, code = await _socket(AnonymousUser(), "/ws/memory/")
    assert (connected, code) == (False, 4401)


async def test_it_brings_a_memory_saved_in_another_tab_to_every_open_page(
    alice, bob, memory_server
):
    chat = await sync_to_async(make_conversation)(alice, "Chat")
    chat_page, _, _ = await _socket(alice, f"/ws/conversations/{chat.pk}/")
    memory_page, connected, _ = await _socket(alice, "/ws/memory/")
    bobs_page, _, _ = await _socket(bob, "/ws/memory/")
    assert connected

    # Another tab's view saves it: sync code in a thread of its own, as Daphne runs views.
    saved = await sync_to_async(services.add_thought)(
        user=alice, content="Alice <b>loves</b> hiking", context={"tags": ["outdoors"]}
    )

    assert PULSE in await _frames(chat_page, PULSE)
    live = await _frames(memory_page, 'data-live="added"')
    assert f'id="memory-{saved["id"]}"' in live
    assert "Alice &lt;b&gt;loves&lt;/b&gt; hiking" in live and "#outdoors" in live
    counts = (
        await _frames(memory_page, 'id="memory-counts"')
        if 'id="memory-counts"' not in live
        else live
    )
    assert "<strong>1</strong>" in counts
    assert await bobs_page.receive_nothing(timeout=0.5)
    for page in (chat_page, memory_page, bobs_page):
        await page.disconnect()


async def test_it_shows_a_new_memory_only_where_the_list_would(alice, memory_server):
    facts_page, _, _ = await _socket(alice, "/ws/memory/?kind=fact")
    search_page, _, _ = await _socket(alice, "/ws/memory/?q=hiking")
    notes_page, _, _ = await _socket(alice, "/ws/memory/?kind=note&tag=walks")

    await sync_to_async(services.add_thought)(
        user=alice, content="Alice went hiking", context={"kind": "note", "tags": ["Walks"]}
    )

    for page in (facts_page, search_page):
        frames = await _frames(page, 'id="memory-counts"')
        assert "New memories were saved." in frames and 'data-live="added"' not in frames
    assert "Alice went hiking" in await _frames(notes_page, 'data-live="added"')
    for page in (facts_page, search_page, notes_page):
        await page.disconnect()


async def test_it_tells_the_page_of_edits_and_deletions(alice, memory_server):
    memory_id = (await sync_to_async(services.add_thought)(user=alice, content="Draft idea"))["id"]
    page, _, _ = await _socket(alice, "/ws/memory/")

    await sync_to_async(services.update_memory)(
        user=alice, memory_id=memory_id, content="Final idea"
    )
    updated = await _frames(page, 'data-live="updated"')
    await sync_to_async(services.delete_memory)(user=alice, memory_id=memory_id)
    removed = await _frames(page, 'data-live="removed"')
    await page.disconnect()

    assert "Final idea" in updated and "1 earlier version" in updated
    assert f'data-memory-id="{memory_id}"' in removed


async def test_it_brings_what_claude_saved_with_a_toast(fake_anthropic, alice, memory_server):
    chat = await sync_to_async(make_conversation)(alice, "Chat")
    page, _, _ = await _socket(alice, "/ws/memory/")
    fake_anthropic.tool_use(
        "save_memory", {"content": "Alice's sister is called Ana", "category": "fondatrice"}
    )
    fake_anthropic.reply("Noted.")

    await send(chat, "Remember that my sister is called Ana")

    frames = await _frames(page, 'data-live="added"')
    frames += await _frames(page, "toast") if "toast" not in frames else ""
    await page.disconnect()
    assert "Alice&#x27;s sister is called Ana" in frames
    assert "Saved to memory: “Alice&#x27;s sister is called Ana”" in frames


async def test_it_brings_what_the_background_worker_saved(
    fake_anthropic, settings, alice, memory_server
):
    settings.ANTHROPIC_API_KEY = ""  # the offline responder answers; auto-save alone runs
    said = []
    for i in range(6):
        said += [f"Question {i} about the Alps?", f"Answer {i} about the Alps."]
    chat = await sync_to_async(make_conversation)(alice, "Alps", *said)
    page, _, _ = await _socket(alice, "/ws/memory/")
    await send(chat, "And the glaciers?")

    # The worker is a thread with no event loop, as in the app (memory/worker/database.py).
    await asyncio.to_thread(database.run_ready_tasks)

    frames = await _frames(page, "And the glaciers?")
    await page.disconnect()
    assert 'data-live="added"' in frames and "User: And the glaciers?" in frames


def test_a_write_says_what_changed_by_the_memory_changed_signal(alice, memory_server):
    """The client wing renders nothing: it sends memory_changed, which the web wing renders."""
    heard = []

    def listener(sender, *, user, added, removed, updated, reset, **kwargs):
        heard.append((user.pk, added, removed, updated, reset))

    live.memory_changed.connect(listener)
    try:
        stored = services.add_thought(user=alice, content="Alice plays the cello")
        services.delete_memory(user=alice, memory_id=stored["id"])
    finally:
        live.memory_changed.disconnect(listener)

    assert heard == [
        (alice.pk, [stored["id"]], [], [], False),
        (alice.pk, [], [stored["id"]], [], False),
    ]
