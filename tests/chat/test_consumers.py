"""The chat WebSocket, driven with Channels' WebsocketCommunicator and the fake API."""

import asyncio
import json
import os
import re
import socket
import subprocess
from datetime import timedelta

import pytest
from asgiref.sync import sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import AnonymousUser
from django.utils import timezone

from chat.models import Conversation, Message
from chat.routing import websocket_urlpatterns

pytestmark = pytest.mark.django_db(transaction=True)


async def connect(user, conversation):
    communicator = WebsocketCommunicator(
        URLRouter(websocket_urlpatterns), f"/ws/conversations/{conversation.pk}/"
    )
    communicator.scope["user"] = user
    connected, code = await communicator.connect()
    return communicator, connected, code


async def frames_until(communicator, marker, timeout=10):
    """Frames received up to and including the first that contains `marker`."""
    frames = []
    while True:
        frame = await communicator.receive_from(timeout=timeout)
        frames.append(frame)
        if marker in frame:
            return frames


async def test_it_refuses_anonymous_users(alice):
    conversation = await Conversation.objects.acreate(user=alice)
    _, connected, code = await connect(AnonymousUser(), conversation)
    assert (connected, code) == (False, 4401)


async def test_it_refuses_other_users_conversations(alice, bob):
    conversation = await Conversation.objects.acreate(user=bob)
    _, connected, code = await connect(alice, conversation)
    assert (connected, code) == (False, 4404)


async def test_it_streams_an_answer_token_by_token_and_saves_it(alice, fake_anthropic):
    fake_anthropic.reply("Wax the **skis**.")
    conversation = await Conversation.objects.acreate(user=alice)
    communicator, connected, _ = await connect(alice, conversation)
    assert connected

    await communicator.send_to(text_data=json.dumps({"content": "Ski tip?", "HEADERS": {}}))
    frames = await frames_until(communicator, 'data-busy="0"')
    await communicator.disconnect()

    assert "Ski tip?" in frames[0] and 'hx-swap-oob="beforeend:#messages"' in frames[0]
    assistant = await Message.objects.aget(conversation=conversation, role="assistant")
    tokens = [f for f in frames if f"beforeend:#stream-{assistant.pk}" in f]
    assert len(tokens) == 3
    assert "<strong>skis</strong>" in frames[-1]
    assert f'id="message-{assistant.pk}"' in frames[-1] and 'hx-swap-oob="true"' in frames[-1]
    assert (assistant.status, assistant.content) == ("complete", "Wax the **skis**.")


async def test_it_escapes_every_token(alice, fake_anthropic):
    fake_anthropic.reply("<img src=x onerror=alert(1)> <script>alert(2)</script>")
    conversation = await Conversation.objects.acreate(user=alice)
    communicator, _, _ = await connect(alice, conversation)

    await communicator.send_to(text_data=json.dumps({"content": "hi"}))
    frames = await frames_until(communicator, 'data-busy="0"')
    await communicator.disconnect()

    joined = "".join(frames)
    assert "<img" not in joined and "<script" not in joined
    assert "&lt;img" in joined and "&lt;script&gt;" in joined


async def test_it_stops_and_keeps_the_partial_answer(alice, fake_anthropic):
    fake_anthropic.reply("one two three four five six seven eight nine ten", hold=True)
    conversation = await Conversation.objects.acreate(user=alice)
    communicator, _, _ = await connect(alice, conversation)

    await communicator.send_to(text_data=json.dumps({"content": "Count"}))
    await frames_until(communicator, "two")
    await communicator.send_to(text_data=json.dumps({"action": "stop"}))
    frames = await frames_until(communicator, 'data-status="stopped"')
    fake_anthropic.release()
    await communicator.disconnect()

    assert "Retry" in frames[-1]
    assistant = await Message.objects.aget(conversation=conversation, role="assistant")
    assert (assistant.status, assistant.content) == ("stopped", "one two ")


async def test_it_shows_an_error_with_retry_and_retries(alice, fake_anthropic):
    fake_anthropic.fail(400, "invalid_request_error", "prompt is too long")
    fake_anthropic.reply("Second try worked.")
    conversation = await Conversation.objects.acreate(user=alice)
    communicator, _, _ = await connect(alice, conversation)

    await communicator.send_to(text_data=json.dumps({"content": "Hello"}))
    frames = await frames_until(communicator, 'data-busy="0"')
    failed = await Message.objects.aget(conversation=conversation, role="assistant")
    assert 'role="alert"' in frames[-1] and "prompt is too long" in frames[-1]
    assert f'"message_id": {failed.pk}' in frames[-1]

    await communicator.send_to(text_data=json.dumps({"action": "retry", "message_id": failed.pk}))
    frames = await frames_until(communicator, 'data-busy="0"')
    await communicator.disconnect()

    assert f'<div id="message-{failed.pk}" hx-swap-oob="delete">' in frames[0]
    assert "Second try worked." in frames[-1]
    rows = [(m.role, m.status) async for m in Message.objects.filter(conversation=conversation)]
    assert rows == [("user", "complete"), ("assistant", "complete")]
    assert fake_anthropic.last_request["messages"] == [{"role": "user", "content": "Hello"}]


async def test_it_answers_a_pending_message_on_connect(alice, fake_anthropic):
    fake_anthropic.reply("Answered on arrival.")
    conversation = await Conversation.objects.acreate(user=alice)
    await Message.objects.acreate(conversation=conversation, role="user", content="From /c/new/")

    communicator, _, _ = await connect(alice, conversation)
    frames = await frames_until(communicator, 'data-busy="0"')
    await communicator.disconnect()

    assert "Answered on arrival." in frames[-1]
    assert fake_anthropic.requests[0]["messages"][-1]["content"] == "From /c/new/"


async def test_it_refuses_empty_messages(alice, fake_anthropic):
    conversation = await Conversation.objects.acreate(user=alice)
    communicator, _, _ = await connect(alice, conversation)

    await communicator.send_to(text_data=json.dumps({"content": "   "}))
    frame = await communicator.receive_from(timeout=5)
    await communicator.send_to(text_data="not json")
    second = await communicator.receive_from(timeout=5)
    await communicator.disconnect()

    assert "Content must not be empty." in frame
    assert "could not be read" in second
    assert not await Message.objects.filter(conversation=conversation).aexists()
    assert fake_anthropic.requests == []


async def test_it_shows_tool_calls_as_they_run(alice, fake_anthropic, fake_extension):
    fake_extension()
    fake_anthropic.tool_use("search_memories", {"query": "ski"}, tool_id="toolu_ws1")
    fake_anthropic.reply("Done.")
    conversation = await Conversation.objects.acreate(user=alice)
    communicator, _, _ = await connect(alice, conversation)

    await communicator.send_to(text_data=json.dumps({"content": "Search"}))
    frames = await frames_until(communicator, 'data-busy="0"')
    await communicator.disconnect()

    started = next(f for f in frames if 'id="tool-toolu_ws1"' in f)
    assert "Using search_memories" in started
    finished = next(f for f in frames if "Searched for" in f)
    assert '<details class="tool-call" id="tool-toolu_ws1" hx-swap-oob="true">' in finished


async def test_it_keeps_other_users_out_of_retry(alice, bob, fake_anthropic):
    theirs = await Conversation.objects.acreate(user=bob)
    failed = await Message.objects.acreate(
        conversation=theirs, role="assistant", status="error", error="x"
    )
    mine = await Conversation.objects.acreate(user=alice)
    communicator, _, _ = await connect(alice, mine)
    await communicator.send_to(text_data=json.dumps({"action": "retry", "message_id": failed.pk}))
    frame = await communicator.receive_from(timeout=5)
    await communicator.disconnect()
    assert "no failed answer with this id" in frame
    assert await sync_to_async(Message.objects.filter(pk=failed.pk).exists)()


async def test_it_shows_an_answer_cut_off_by_a_restart_as_stopped(alice, fake_anthropic):
    conversation = await Conversation.objects.acreate(user=alice)
    await Message.objects.acreate(conversation=conversation, role="user", content="Hi")
    orphan = await Message.objects.acreate(
        conversation=conversation, role="assistant", content="", status="streaming"
    )
    communicator, _, _ = await connect(alice, conversation)
    frame = await communicator.receive_from(timeout=5)
    await communicator.disconnect()
    assert f'id="message-{orphan.pk}"' in frame and 'data-status="stopped"' in frame
    assert "Retry" in frame
    await orphan.arefresh_from_db()
    assert orphan.status == "stopped"
    assert fake_anthropic.requests == []


def _dead_pid() -> int:
    """The pid of a process that has just exited (reaped: nothing answers to it)."""
    process = subprocess.Popen(["true"])
    process.wait()
    return process.pid


async def _streaming_answer(conversation, **owner):
    await Message.objects.acreate(conversation=conversation, role="user", content="Hi")
    return await Message.objects.acreate(
        conversation=conversation,
        role="assistant",
        content="Half an ans",
        status="streaming",
        **owner,
    )


async def test_it_leaves_an_answer_another_live_process_writes(alice, fake_anthropic):
    conversation = await Conversation.objects.acreate(user=alice)
    theirs = await _streaming_answer(
        conversation,
        stream_token="another-process",
        stream_host=socket.gethostname(),
        stream_pid=os.getppid(),  # alive: our parent
        stream_heartbeat=timezone.now(),
    )

    communicator, connected, _ = await connect(alice, conversation)
    nothing_sent = await communicator.receive_nothing(timeout=0.5)
    await communicator.disconnect()

    assert connected and nothing_sent
    await theirs.arefresh_from_db()
    assert theirs.status == "streaming"
    assert fake_anthropic.requests == []


@pytest.mark.parametrize("owner", ["dead_pid", "stale_heartbeat"])
async def test_it_settles_an_abandoned_answer_as_stopped_with_retry(
    alice, fake_anthropic, settings, owner
):
    settings.CHAT_STREAM_STALE_AFTER = 60
    conversation = await Conversation.objects.acreate(user=alice)
    if owner == "dead_pid":
        fields = {"stream_host": socket.gethostname(), "stream_pid": _dead_pid()}
        fields["stream_heartbeat"] = timezone.now()
    else:  # another machine, silent for longer than CHAT_STREAM_STALE_AFTER
        fields = {"stream_host": "another-machine", "stream_pid": 4242}
        fields["stream_heartbeat"] = timezone.now() - timedelta(seconds=61)
    orphan = await _streaming_answer(conversation, stream_token="gone", **fields)

    communicator, _, _ = await connect(alice, conversation)
    frame = await communicator.receive_from(timeout=5)
    await communicator.disconnect()

    assert f'id="message-{orphan.pk}"' in frame and 'data-status="stopped"' in frame
    assert "Retry" in frame and "Half an ans" in frame
    await orphan.arefresh_from_db()
    assert (orphan.status, orphan.content) == ("stopped", "Half an ans")


async def test_it_answers_with_the_model_picked_after_the_page_opened(alice, fake_anthropic):
    conversation = await Conversation.objects.acreate(user=alice, model="claude-sonnet-5-5")
    communicator, _, _ = await connect(alice, conversation)
    # The header's selector saves another model while the page's socket is open.
    await Conversation.objects.filter(pk=conversation.pk).aupdate(model="claude-haiku-5-5")

    await communicator.send_to(text_data=json.dumps({"content": "Which model?"}))
    frames = await frames_until(communicator, 'data-busy="0"')
    await communicator.disconnect()

    assert fake_anthropic.last_request["model"] == "claude-haiku-5-5"
    assert "claude-haiku-5-5" in frames[-1]


async def test_an_answer_goes_on_when_its_page_leaves_and_a_page_that_comes_back_follows_it(
    alice, fake_anthropic
):
    fake_anthropic.reply("one two three four five", hold=True)
    conversation = await Conversation.objects.acreate(user=alice)
    first, _, _ = await connect(alice, conversation)
    await first.send_to(text_data=json.dumps({"content": "Count"}))
    await frames_until(first, "two")
    await first.disconnect()  # the page is left mid-answer

    back, _, _ = await connect(alice, conversation)
    so_far = await back.receive_from(timeout=10)  # what it has so far, in place of the row
    fake_anthropic.release()
    rest = await frames_until(back, 'data-busy="0"')
    await back.disconnect()

    answer = await Message.objects.aget(conversation=conversation, role="assistant")
    assert (answer.status, answer.content) == ("complete", "one two three four five")
    assert f'<div id="message-{answer.pk}" hx-swap-oob="delete"></div>' in so_far
    assert f'id="stream-{answer.pk}">one two </div>' in so_far and 'data-busy="1"' in so_far
    pieces = "".join(re.findall(rf'beforeend:#stream-{answer.pk}">([^<]*)</div>', "".join(rest)))
    assert pieces == "three four five"  # the rest, once each
    assert "one two three four five" in rest[-1] and "Stopped." not in "".join(rest)


async def test_stop_from_another_page_of_the_conversation_stops_the_answer(alice, fake_anthropic):
    fake_anthropic.reply("one two three four five", hold=True)
    conversation = await Conversation.objects.acreate(user=alice)
    writer, _, _ = await connect(alice, conversation)
    await writer.send_to(text_data=json.dumps({"content": "Count"}))
    await frames_until(writer, "two")
    other, _, _ = await connect(alice, conversation)
    await frames_until(other, "one two")

    await other.send_to(text_data=json.dumps({"action": "stop"}))
    seen_by_writer = await frames_until(writer, 'data-status="stopped"')
    seen_by_other = await frames_until(other, 'data-status="stopped"')
    fake_anthropic.release()
    await writer.disconnect()
    await other.disconnect()

    assert "Retry" in seen_by_writer[-1] and "Retry" in seen_by_other[-1]
    answer = await Message.objects.aget(conversation=conversation, role="assistant")
    assert (answer.status, answer.content) == ("stopped", "one two ")


async def test_a_page_sends_while_another_page_of_the_conversation_waits_for_the_answer(
    alice, fake_anthropic
):
    fake_anthropic.reply("one two three", hold=True)
    conversation = await Conversation.objects.acreate(user=alice)
    writer, _, _ = await connect(alice, conversation)
    other, _, _ = await connect(alice, conversation)
    await writer.send_to(text_data=json.dumps({"content": "Count"}))
    shown_elsewhere = await frames_until(other, "two")  # the message and the answer so far

    await other.send_to(text_data=json.dumps({"content": "Me too"}))
    refused = await frames_until(other, "Wait for the answer to finish")
    fake_anthropic.release()
    await frames_until(writer, 'data-busy="0"')
    await writer.disconnect()
    await other.disconnect()

    assert "Count" in shown_elsewhere[0]
    assert not await Message.objects.filter(content="Me too").aexists() and refused


async def test_a_page_rendered_mid_answer_is_shown_the_answer_that_ended_before_it_connected(
    alice, fake_anthropic
):
    conversation = await Conversation.objects.acreate(user=alice)
    await Message.objects.acreate(conversation=conversation, role="user", content="Hi")
    answer = await Message.objects.acreate(
        conversation=conversation, role="assistant", content="All **done**.", status="complete"
    )
    communicator = WebsocketCommunicator(
        URLRouter(websocket_urlpatterns),
        f"/ws/conversations/{conversation.pk}/?following={answer.pk}",
    )
    communicator.scope["user"] = alice
    await communicator.connect()
    frame = await communicator.receive_from(timeout=5)
    await communicator.disconnect()

    assert f'id="message-{answer.pk}"' in frame and "<strong>done</strong>" in frame
    assert 'data-busy="0"' in frame


async def test_every_piece_of_a_long_fast_answer_reaches_the_page(alice, fake_anthropic):
    words = " ".join(f"w{n}" for n in range(600))
    fake_anthropic.reply(words)
    conversation = await Conversation.objects.acreate(user=alice)
    communicator, _, _ = await connect(alice, conversation)
    await communicator.send_to(text_data=json.dumps({"content": "Go"}))
    frames = await frames_until(communicator, 'data-busy="0"')
    await communicator.disconnect()

    answer = await Message.objects.aget(conversation=conversation, role="assistant")
    pieces = re.findall(rf'beforeend:#stream-{answer.pk}">([^<]*)</div>', "".join(frames))
    assert "".join(pieces) == words


async def test_two_pages_opened_on_a_new_chat_get_one_answer_and_both_show_it(
    alice, fake_anthropic
):
    fake_anthropic.reply("Only once.")
    conversation = await Conversation.objects.acreate(user=alice)
    await Message.objects.acreate(conversation=conversation, role="user", content="From /c/new/")

    first, _, _ = await connect(alice, conversation)
    second, _, _ = await connect(alice, conversation)
    shown = [await frames_until(page, 'data-busy="0"') for page in (first, second)]
    await first.disconnect()
    await second.disconnect()

    assert len(fake_anthropic.requests) == 1
    assert all("Only once." in frames[-1] for frames in shown)
    assert await Message.objects.filter(conversation=conversation, role="assistant").acount() == 1


async def test_deleting_a_chat_stops_its_answer(alice, alice_client, fake_anthropic):
    from chat import answers

    fake_anthropic.reply("one two three four five", hold=True)
    conversation = await Conversation.objects.acreate(user=alice)
    communicator, _, _ = await connect(alice, conversation)
    await communicator.send_to(text_data=json.dumps({"content": "Count"}))
    await frames_until(communicator, "two")
    writing = answers._here(conversation.pk)

    deleted = await sync_to_async(alice_client.post)(f"/c/{conversation.pk}/delete/")
    await asyncio.wait([writing.task], timeout=30)  # a bound, never reached: not released
    await communicator.disconnect()

    assert deleted.status_code == 302 and writing.task.done()
    assert not await Conversation.objects.filter(pk=conversation.pk).aexists()
