"""One user's hostile message never holds the event loop every other user shares.

Alice sends a 100,000-character adversarial message over her WebSocket (what froze the app
for 15 s: the offline responder's quadratic pattern, on the loop). Each CPU-heavy step of
her turn is held, in turn, while it runs, for as long as it takes Bob to be answered over
his own WebSocket on the same loop. A step run on the event loop would hold the loop
itself: Bob could not be served until it let go. The order of what happened says which:
no timing is measured.
"""

from __future__ import annotations

import asyncio
import json
import threading

import pytest
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator

import chat.edge
import chat.frames
import chat.offline
import memory.recall.retrieval
from chat.models import Conversation, Message
from chat.routing import websocket_urlpatterns
from tests.fixtures.hostile import ADVERSARIAL_MESSAGE

pytestmark = pytest.mark.django_db(transaction=True)

FRAME_WAIT = 120  # seconds: a generous bound on one frame on a busy machine, never reached

HELD_STEPS = [
    (chat.edge, "parse_json"),  # the frame, parsed
    (memory.recall.retrieval, "searchable_text"),  # the auto-recall query, private spans removed
    (chat.offline, "plan_reply"),  # the offline responder's reading of the message
    (chat.frames, "render_markdown"),  # the finished answer, rendered
]


class Held:
    """Wraps one step: its first call (Alice's) records where it ran and waits until Bob
    was answered; every other call (Bob's) goes straight through."""

    def __init__(self, real, loop_thread: int, events: list[str]):
        self.real = real
        self.loop_thread = loop_thread
        self.events = events
        self.entered = threading.Event()
        self.release = threading.Event()
        self.calls = 0

    def __call__(self, *args, **kwargs):
        self.calls += 1
        if self.calls == 1:
            on_loop = threading.get_ident() == self.loop_thread
            self.events.append("alice's step ran on the event loop" if on_loop else "held")
            self.entered.set()
            if not on_loop:  # waiting there would hold the loop: let the order say it
                self.release.wait(FRAME_WAIT)
            self.events.append("released")
        return self.real(*args, **kwargs)


async def _connect(user, conversation) -> WebsocketCommunicator:
    communicator = WebsocketCommunicator(
        URLRouter(websocket_urlpatterns), f"/ws/conversations/{conversation.pk}/"
    )
    communicator.scope["user"] = user
    assert (await communicator.connect())[0]
    return communicator


async def _until_turn_over(communicator) -> list[str]:
    frames = []
    while not frames or 'data-busy="0"' not in frames[-1]:
        frames.append(await communicator.receive_from(timeout=FRAME_WAIT))
    return frames


@pytest.fixture
def offline(settings):
    settings.ANTHROPIC_API_KEY = ""  # the offline responder answers


@pytest.mark.parametrize(("module", "step"), HELD_STEPS, ids=[s for _, s in HELD_STEPS])
async def test_it_serves_another_user_while_a_hostile_message_is_worked_on(
    offline, memory_server, alice, bob, monkeypatch, module, step
):
    events: list[str] = []
    held = Held(getattr(module, step), threading.get_ident(), events)
    monkeypatch.setattr(module, step, held)
    alices = await Conversation.objects.acreate(user=alice)
    bobs = await Conversation.objects.acreate(user=bob)
    alice_socket = await _connect(alice, alices)
    bob_socket = await _connect(bob, bobs)

    await alice_socket.send_to(text_data=json.dumps({"content": ADVERSARIAL_MESSAGE}))
    assert await asyncio.to_thread(held.entered.wait, FRAME_WAIT)
    await bob_socket.send_to(text_data=json.dumps({"content": "Hello, anyone there?"}))
    bob_frames = await _until_turn_over(bob_socket)
    events.append("bob answered")
    held.release.set()
    alice_frames = await _until_turn_over(alice_socket)
    events.append("alice answered")
    await alice_socket.disconnect()
    await bob_socket.disconnect()

    assert events == ["held", "bob answered", "released", "alice answered"]
    assert "You said: “Hello, anyone there?”" in bob_frames[-1]
    # Alice's turn went through all of it: her search was refused for its length, and said so.
    answer = await Message.objects.aget(conversation=alices, role="assistant")
    assert answer.status == "complete"
    assert "query must be at most 2000 characters" in answer.content
    assert "memory tool failed" in alice_frames[-1]
