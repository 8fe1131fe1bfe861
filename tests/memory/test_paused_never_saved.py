"""Paused means never (issue 23): what is said while memory is paused, or while the chat's
memory is off, is never saved to memory, whoever saves later: `manage.py memory_backfill`,
auto-save, the chat's Save button, extraction. Whether memory could keep an exchange is
decided when it is said, not when a save comes."""

import asyncio
from io import StringIO

import pytest
from asgiref.sync import sync_to_async
from django.core.management import call_command

from chat import turn
from memory.client import controls, services
from memory.learning import backup
from memory.models import MemoryRetrieval, SavedExchange
from memory.worker import database
from tests.fixtures.builders import add_message, make_conversation, send

pytestmark = pytest.mark.django_db(transaction=True)

run_worker = sync_to_async(database.run_ready_tasks)


def _backfill() -> str:
    out = StringIO()
    call_command("memory_backfill", stdout=out, stderr=StringIO())
    return out.getvalue()


def _everything(user) -> str:
    found = services.list_memories(user=user, limit=100)["memories"]
    return "\n".join(m["content"] for m in found)


async def _say(fake_anthropic, chat, text, answer):
    fake_anthropic.reply(answer)
    await send(chat, text)


async def test_backfill_skips_what_was_said_while_paused(fake_anthropic, alice, memory_server):
    chat = await sync_to_async(make_conversation)(alice, "Music")
    await sync_to_async(controls.set_paused)(user=alice, paused=True)
    await _say(fake_anthropic, chat, "Remember that I like jazz", "Noted: jazz.")
    await _say(fake_anthropic, chat, "I moved to Lyon last month, by the way", "Lyon is lovely.")
    await sync_to_async(controls.set_paused)(user=alice, paused=False)
    await _say(fake_anthropic, chat, "Which trumpet should a beginner buy?", "A Yamaha YTR.")
    asked = len(fake_anthropic.requests)

    out = await sync_to_async(_backfill)()
    await run_worker()  # extraction of what was saved

    assert "(1 new exchange(s)); 0 failed" in out
    kept = await sync_to_async(_everything)(alice)
    assert "trumpet" in kept
    assert "jazz" not in kept and "Lyon" not in kept
    # Extraction was only ever shown the exchange said with memory on.
    extraction = [str(r["messages"]) for r in fake_anthropic.requests[asked:]]
    assert not any("jazz" in said or "Lyon" in said for said in extraction)
    saved = [s.answer.content async for s in SavedExchange.objects.select_related("answer")]
    assert saved == ["A Yamaha YTR."]
    # Nothing left to do: a second run and the Save button find nothing to save.
    assert "Backed up 0 conversation(s)" in await sync_to_async(_backfill)()
    again = await sync_to_async(backup.backup_conversation)(chat)
    assert again.saved == 0 and again.complete


async def test_the_save_button_skips_what_was_said_while_paused(
    fake_anthropic, alice, alice_client, memory_server
):
    chat = await sync_to_async(make_conversation)(alice, "Music")
    await sync_to_async(controls.set_paused)(user=alice, paused=True)
    await _say(fake_anthropic, chat, "Remember that I like jazz", "Noted: jazz.")
    await sync_to_async(controls.set_paused)(user=alice, paused=False)
    await _say(fake_anthropic, chat, "Which trumpet should a beginner buy?", "A Yamaha YTR.")

    response = await sync_to_async(alice_client.post)(f"/memory/save/{chat.pk}", {})

    assert response.status_code == 200
    kept = await sync_to_async(_everything)(alice)
    assert "trumpet" in kept and "jazz" not in kept


async def test_the_save_button_says_so_when_everything_was_said_while_paused(
    fake_anthropic, alice, alice_client, memory_server
):
    chat = await sync_to_async(make_conversation)(alice, "Music")
    await sync_to_async(controls.set_paused)(user=alice, paused=True)
    await _say(fake_anthropic, chat, "Remember that I like jazz", "Noted: jazz.")
    await sync_to_async(controls.set_paused)(user=alice, paused=False)

    response = await sync_to_async(alice_client.post)(f"/memory/save/{chat.pk}", {})

    assert "said while memory was paused" in response.content.decode()
    assert (await sync_to_async(services.list_memories)(user=alice))["total"] == 0


async def test_autosave_skips_what_was_said_while_paused(fake_anthropic, alice, memory_server):
    said = []
    for i in range(6):
        said += [f"Question {i} about skiing in Chamonix?", f"Answer {i} about Chamonix."]
    chat = await sync_to_async(make_conversation)(alice, "Ski", *said)
    await sync_to_async(controls.set_paused)(user=alice, paused=True)
    await _say(fake_anthropic, chat, "Remember that I like jazz", "Noted: jazz.")
    await sync_to_async(controls.set_paused)(user=alice, paused=False)
    await _say(fake_anthropic, chat, "One more about lift passes?", "Buy them online.")

    await run_worker()

    kept = await sync_to_async(_everything)(alice)
    assert "lift passes" in kept and "Question 0" in kept
    assert "jazz" not in kept
    assert await SavedExchange.objects.acount() == 7


async def test_backfill_skips_what_was_said_with_the_chats_memory_off(
    fake_anthropic, alice, alice_client, memory_server
):
    chat = await sync_to_async(make_conversation)(alice, "Music")
    switch = f"/memory/conversation/{chat.pk}/switch"
    await sync_to_async(alice_client.post)(switch, {"on": "0"})
    await _say(fake_anthropic, chat, "Remember that I like jazz", "Noted: jazz.")
    await sync_to_async(alice_client.post)(switch, {"on": "1"})
    await _say(fake_anthropic, chat, "Which trumpet should a beginner buy?", "A Yamaha YTR.")

    out = await sync_to_async(_backfill)()

    assert "(1 new exchange(s)); 0 failed" in out
    kept = await sync_to_async(_everything)(alice)
    assert "trumpet" in kept and "jazz" not in kept


async def test_an_answer_finished_after_pausing_is_not_saved(fake_anthropic, alice, memory_server):
    """Paused while Claude was still answering: that exchange stays out as well."""
    chat = await sync_to_async(make_conversation)(alice, "Music")
    fake_anthropic.reply("Hello, jazz lover, here is a long answer.", hold=True)
    answering = asyncio.create_task(send(chat, "Hi"))
    # The fake API holds the stream after its first pieces until released.
    async with asyncio.timeout(60):  # a bound on a busy machine, not a speed
        while not fake_anthropic.requests:
            await asyncio.sleep(0.05)
    await sync_to_async(controls.set_paused)(user=alice, paused=True)
    fake_anthropic.release()
    await answering
    await sync_to_async(controls.set_paused)(user=alice, paused=False)

    assert "Backed up 0 conversation(s)" in await sync_to_async(_backfill)()
    assert (await sync_to_async(services.list_memories)(user=alice))["total"] == 0


async def test_whoever_writes_the_messages_what_is_said_while_paused_stays_out(
    alice, memory_server
):
    """Messages written by other means than a turn (an import, the API) as well."""
    await sync_to_async(controls.set_paused)(user=alice, paused=True)
    chat = await sync_to_async(make_conversation)(
        alice, "Music", "Remember that I like jazz", "Noted: jazz."
    )
    await sync_to_async(controls.set_paused)(user=alice, paused=False)

    assert "Backed up 0 conversation(s)" in await sync_to_async(_backfill)()
    with pytest.raises(backup.KeptOutOfMemory):
        await sync_to_async(backup.backup_conversation)(chat)
    assert (await sync_to_async(services.list_memories)(user=alice))["total"] == 0


async def test_a_message_said_while_paused_leaves_no_trace_in_the_recall_log(
    fake_anthropic, alice, memory_server
):
    """Paused, Claude still reads the memories recalled for the message; the recall log
    keeps nothing of it (its text was the query)."""
    await sync_to_async(services.add_thought)(user=alice, content="Alice plays the saxophone")
    chat = await sync_to_async(make_conversation)(alice, "Music")
    await sync_to_async(controls.set_paused)(user=alice, paused=True)

    await _say(fake_anthropic, chat, "My saxophone teacher is called Bertrand", "Nice.")

    assert "Alice plays the saxophone" in str(fake_anthropic.requests[-1]["system"])
    assert not await MemoryRetrieval.objects.filter(user=alice).aexists()
    await sync_to_async(controls.set_paused)(user=alice, paused=False)
    await _say(fake_anthropic, chat, "Which saxophone reed suits a beginner?", "A 2.")
    logged = [r.query async for r in MemoryRetrieval.objects.filter(user=alice)]
    assert len(logged) == 1 and "reed" in logged[0] and "Bertrand" not in logged[0]


async def test_a_message_said_while_paused_answered_again_once_resumed_stays_unlogged(
    fake_anthropic, alice, memory_server
):
    """A retry after resuming: the message was said while paused, so it is still kept out."""
    await sync_to_async(services.add_thought)(user=alice, content="Alice plays the saxophone")
    chat = await sync_to_async(make_conversation)(alice, "Music")
    await sync_to_async(controls.set_paused)(user=alice, paused=True)
    asked = await sync_to_async(add_message)(chat, "My saxophone teacher is called Bertrand")
    await sync_to_async(controls.set_paused)(user=alice, paused=False)

    fake_anthropic.reply("Nice.")
    [event async for event in turn.run_turn(conversation=chat, user_message=asked)]

    assert "Alice plays the saxophone" in str(fake_anthropic.requests[-1]["system"])
    assert not await MemoryRetrieval.objects.filter(user=alice).aexists()
