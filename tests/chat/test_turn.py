"""The assistant turn, through the real SDK against the fake Messages API."""

import asyncio

import pytest
from asgiref.sync import sync_to_async

from chat import streaming, turn
from chat.models import Message, UserPreferences
from chat.signals import turn_finished
from tests.fixtures.builders import add_message

pytestmark = pytest.mark.django_db(transaction=True)


async def collect(conversation, user_message):
    return [
        event async for event in turn.run_turn(conversation=conversation, user_message=user_message)
    ]


def kinds(events):
    return [event.kind for event in events]


async def test_it_streams_the_answer_and_saves_it(fake_anthropic, conversation):
    fake_anthropic.reply("Pack **warm** socks.")
    question = await sync_to_async(add_message)(conversation, "What should I pack?")

    events = await collect(conversation, question)

    assert kinds(events) == ["started", "text", "text", "text", "done"]
    assert "".join(e.text for e in events if e.kind == "text") == "Pack **warm** socks."
    saved = await Message.objects.aget(pk=events[-1].message.pk)
    assert (saved.role, saved.status, saved.content) == (
        "assistant",
        "complete",
        "Pack **warm** socks.",
    )
    assert saved.usage["output_tokens"] == 3
    sent = fake_anthropic.requests[0]
    assert sent["messages"] == [{"role": "user", "content": "What should I pack?"}]
    assert sent["stream"] is True
    assert "tools" not in sent


async def test_it_sends_the_history_and_custom_instructions(fake_anthropic, conversation, alice):
    await UserPreferences.objects.acreate(user=alice, custom_instructions="Answer in French.")
    await sync_to_async(add_message)(conversation, "Hi")
    await Message.objects.acreate(conversation=conversation, role="assistant", content="Hello!")
    await Message.objects.acreate(
        conversation=conversation, role="assistant", content="", status="error", error="x"
    )
    question = await sync_to_async(add_message)(conversation, "Where is Lyon?")

    await collect(conversation, question)

    sent = fake_anthropic.requests[0]
    assert sent["messages"] == [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello!"},
        {"role": "user", "content": "Where is Lyon?"},
    ]
    assert "Answer in French." in sent["system"]


async def test_it_appends_memory_blocks_after_custom_instructions(
    fake_anthropic, fake_extension, conversation, alice
):
    await UserPreferences.objects.acreate(user=alice, custom_instructions="Be brief.")
    fake_extension(
        system_blocks=["<memories>\n- likes skiing\n</memories>"], notices=["Memory is slow"]
    )
    question = await sync_to_async(add_message)(conversation, "Plan a trip")

    events = await collect(conversation, question)

    system = fake_anthropic.requests[0]["system"]
    assert system.index("Be brief.") < system.index("<memories>")
    assert fake_anthropic.requests[0]["tools"][0]["name"] == "search_memories"
    assert [e.text for e in events if e.kind == "notice"] == ["Memory is slow"]


async def test_it_runs_tools_and_continues_until_the_answer(
    fake_anthropic, fake_extension, conversation
):
    memory = fake_extension()
    fake_anthropic.tool_use(
        "search_memories", {"query": "ski"}, text="Let me check.", tool_id="toolu_1"
    )
    fake_anthropic.reply("You went skiing in Chamonix.")
    question = await sync_to_async(add_message)(conversation, "Where did I ski?")

    events = await collect(conversation, question)

    assert kinds(events)[-3:] == ["text", "text", "done"]
    assert "tool_started" in kinds(events) and "tool_finished" in kinds(events)
    assert memory.calls == [("search_memories", {"query": "ski"})]
    second = fake_anthropic.requests[1]["messages"]
    assert second[-2]["role"] == "assistant"
    assert second[-2]["content"][-1] == {
        "type": "tool_use",
        "id": "toolu_1",
        "name": "search_memories",
        "input": {"query": "ski"},
    }
    assert second[-1] == {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "toolu_1",
                "content": '{"results": []}',
                "is_error": False,
            }
        ],
    }
    saved = await Message.objects.aget(pk=events[-1].message.pk)
    assert saved.content == "Let me check.\n\nYou went skiing in Chamonix."
    assert saved.tool_calls == [
        {
            "id": "toolu_1",
            "name": "search_memories",
            "input": {"query": "ski"},
            "result": '{"results": []}',
            "is_error": False,
            "summary": "Searched for {'query': 'ski'}",
        }
    ]


async def test_it_reports_failing_and_slow_tools_as_errors(
    fake_anthropic, fake_extension, conversation
):
    async def behaviour(name, tool_input):
        if tool_input["query"] == "slow":
            await asyncio.sleep(5)
        raise RuntimeError("index is broken")

    fake_extension(behaviour=behaviour, timeout=0.2)
    fake_anthropic.tool_uses(
        [("search_memories", {"query": "slow"}), ("search_memories", {"query": "x"})]
    )
    fake_anthropic.reply("Sorry, memory failed.")
    question = await sync_to_async(add_message)(conversation, "Remember?")

    events = await collect(conversation, question)

    finished = [e for e in events if e.kind == "tool_finished"]
    assert [e.is_error for e in finished] == [True, True]
    assert finished[0].summary == "search_memories: timed out after 0.2 s"
    results = fake_anthropic.requests[1]["messages"][-1]["content"]
    assert all(r["is_error"] for r in results)
    assert "index is broken" in results[1]["content"]
    assert events[-1].kind == "done"


async def test_it_refuses_a_sixth_tool_round(fake_anthropic, fake_extension, conversation):
    memory = fake_extension()
    for n in range(7):
        fake_anthropic.tool_use("search_memories", {"query": f"q{n}"})
    question = await sync_to_async(add_message)(conversation, "Search a lot")

    events = await collect(conversation, question)

    assert len(memory.calls) == 5
    refusal = fake_anthropic.requests[6]["messages"][-1]["content"][0]
    assert refusal["is_error"] is True and "Tool limit reached" in refusal["content"]
    assert fake_anthropic.requests[6]["tool_choice"] == {"type": "none"}
    assert len(fake_anthropic.requests) == 7
    assert events[-1].kind == "done"
    saved = await Message.objects.aget(pk=events[-1].message.pk)
    assert len(saved.tool_calls) == 6 and saved.tool_calls[-1]["summary"] == "Refused: tool limit"


async def test_it_saves_a_readable_error_when_the_api_fails(fake_anthropic, conversation):
    fake_anthropic.fail(529, "overloaded_error", "Overloaded", times=3)
    question = await sync_to_async(add_message)(conversation, "Hello?")

    events = await collect(conversation, question)

    assert events[-1].kind == "error"
    assert "529" in events[-1].error and "Overloaded" in events[-1].error
    saved = await Message.objects.aget(pk=events[-1].message.pk)
    assert saved.status == "error" and "Overloaded" in saved.error


async def test_it_keeps_the_partial_answer_when_stopped(fake_anthropic, conversation):
    fake_anthropic.reply("one two three four five six seven eight", hold=True)
    question = await sync_to_async(add_message)(conversation, "Count")
    seen = []

    async def consume():
        async for event in turn.run_turn(conversation=conversation, user_message=question):
            seen.append(event)

    task = asyncio.create_task(consume())
    async with asyncio.timeout(60):  # a bound on a busy machine, not a speed
        while sum(e.kind == "text" for e in seen) < 2:
            await asyncio.sleep(0.02)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    fake_anthropic.release()

    saved = await Message.objects.aget(pk=seen[0].message.pk)
    assert (saved.status, saved.content) == ("stopped", "one two ")


async def test_it_answers_offline_without_an_api_key(settings, conversation):
    settings.ANTHROPIC_API_KEY = ""
    question = await sync_to_async(add_message)(conversation, "Anyone there?")

    events = await collect(conversation, question)

    assert events[-1].kind == "done"
    saved = await Message.objects.aget(pk=events[-1].message.pk)
    assert "Offline responder" in saved.content and "Anyone there?" in saved.content
    assert saved.model == "Offline responder"


async def test_it_saves_the_partial_answer_when_the_reader_goes_away(fake_anthropic, conversation):
    fake_anthropic.reply("alpha beta gamma delta epsilon zeta eta theta", hold=True)
    question = await sync_to_async(add_message)(conversation, "?")
    events = turn.run_turn(conversation=conversation, user_message=question)
    seen = []
    async for event in events:
        seen.append(event)
        if sum(e.kind == "text" for e in seen) == 2:
            break
    await events.aclose()
    saved = await Message.objects.aget(pk=seen[0].message.pk)
    assert saved.status == "stopped" and saved.content == "alpha beta "
    assert streaming.is_abandoned(saved) is False  # settled: no longer streaming
    assert saved.stream_token == streaming.process_token()


async def test_it_goes_on_without_an_extension_that_fails(fake_anthropic, conversation, settings):
    settings.CHAT_TURN_EXTENSIONS = ["tests.chat.test_turn.broken_extension"]
    fake_anthropic.reply("Still here.")
    question = await sync_to_async(add_message)(conversation, "Hello?")

    events = await collect(conversation, question)

    assert [e.text for e in events if e.kind == "notice"] == ["Broken part is off today."]
    assert events[-1].kind == "done"
    assert "tools" not in fake_anthropic.requests[0]


async def broken_extension(*, user, conversation, user_message):
    raise RuntimeError("the extension has a bug")


broken_extension.failure_notice = "Broken part is off today."


async def test_it_says_when_a_turn_has_finished(fake_anthropic, conversation):
    finished = []

    async def listener(sender, *, conversation, message, **kwargs):
        finished.append((conversation.pk, message.pk, message.status, message.content))

    turn_finished.connect(listener)
    try:
        fake_anthropic.reply("Done here.")
        question = await sync_to_async(add_message)(conversation, "Hello?")
        events = await collect(conversation, question)
        fake_anthropic.fail(400, "invalid_request_error", "nope")
        await collect(conversation, question)
    finally:
        turn_finished.disconnect(listener)

    done = events[-1].message
    assert finished[0] == (conversation.pk, done.pk, "complete", "Done here.")
    assert finished[1][2] == "error"


async def test_it_refreshes_the_heartbeat_while_the_answer_streams(
    fake_anthropic, conversation, settings
):
    settings.CHAT_STREAM_HEARTBEAT = 0.05
    fake_anthropic.reply("slow and steady wins", hold=True)
    question = await sync_to_async(add_message)(conversation, "Go")
    events = turn.run_turn(conversation=conversation, user_message=question)
    started = await anext(events)
    first_beat = started.message.stream_heartbeat

    message = started.message
    for _ in range(200):  # 200 heartbeats' worth of waiting at most
        await asyncio.sleep(0.05)
        message = await Message.objects.aget(pk=started.message.pk)
        if message.stream_heartbeat != first_beat:
            break
    assert message.stream_heartbeat > first_beat
    assert message.status == "streaming"
    assert streaming.is_abandoned(message) is False  # this process, still writing
    fake_anthropic.release()
    rest = [event async for event in events]

    assert rest[-1].kind == "done"
    assert streaming.is_abandoned(await Message.objects.aget(pk=message.pk)) is False
