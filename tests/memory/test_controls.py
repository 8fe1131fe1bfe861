"""The memory controls end to end: pause (kept and recalled, nothing added), "save
conversations to memory", "search and reference past chats", reset (typed confirmation),
a conversation's own switch, and incognito chats that memory leaves alone. What the fake
Messages API was sent, what the worker saved and what a later look finds."""

import pytest
from asgiref.sync import sync_to_async
from django_tasks_db.models import DBTaskResult

from chat.models import ConversationSettings, Message, UserPreferences
from memory.client import controls, services
from memory.client.errors import MemoryInputError, MemoryPaused
from memory.learning import backup
from memory.models import (
    DeletedMemory,
    MemoryRetrieval,
    MemorySettings,
    SavedExchange,
    UserProfile,
)
from memory.recall.prompts import BLOCK_TAG, PAUSED
from memory.worker import database
from tests.fixtures.builders import make_conversation, send

pytestmark = pytest.mark.django_db(transaction=True)

run_worker = sync_to_async(database.run_ready_tasks)


def long_chat(user, title="Ski trip", incognito=False):
    said = []
    for i in range(6):
        said += [f"Question {i} about skiing in Chamonix?", f"Answer {i} about Chamonix skiing."]
    return make_conversation(user, title, *said, incognito=incognito)


def _tool_names(request) -> list[str]:
    return [tool["name"] for tool in request.get("tools") or []]


async def test_it_pauses_adding_but_keeps_recalling(fake_anthropic, alice, memory_server):
    await sync_to_async(services.add_thought)(user=alice, content="Alice skis in Chamonix")
    await sync_to_async(controls.set_paused)(user=alice, paused=True)
    chat = await sync_to_async(make_conversation)(alice, "Chat")

    # Claude tries to save anyway: the tool is not offered, so nothing is stored.
    fake_anthropic.tool_use(
        "save_memory", {"content": "Alice has a cat", "category": "contextuelle"}
    )
    fake_anthropic.reply("I can't save that: memory is paused.")
    events = await send(chat, "Do you remember where I ski in Chamonix?")

    sent = fake_anthropic.requests[0]
    assert "save_memory" not in _tool_names(sent)
    assert "search_memories" in _tool_names(sent)
    assert PAUSED["en"] in sent["system"]
    assert f"<{BLOCK_TAG}>" in sent["system"] and "Alice skis in Chamonix" in sent["system"]
    finished = [e for e in events if e.kind == "tool_finished"]
    assert finished and finished[0].is_error
    found = await sync_to_async(services.list_memories)(user=alice)
    assert [m["content"] for m in found["memories"]] == ["Alice skis in Chamonix"]


async def test_it_saves_nothing_in_the_background_while_paused(
    fake_anthropic, alice, memory_server
):
    await sync_to_async(controls.set_paused)(user=alice, paused=True)
    chat = await sync_to_async(long_chat)(alice)

    await send(chat, "One more about lift passes?")
    await run_worker()

    assert await DBTaskResult.objects.acount() == 0
    assert (await sync_to_async(services.list_memories)(user=alice))["total"] == 0
    with pytest.raises(MemoryPaused):
        await sync_to_async(backup.backup_conversation)(chat)


async def test_it_stops_saving_conversations_when_the_switch_is_off(
    fake_anthropic, alice, memory_server
):
    await sync_to_async(controls.set_autosave)(user=alice, on=False)
    chat = await sync_to_async(long_chat)(alice)

    await send(chat, "One more about lift passes?")
    await run_worker()

    assert (await sync_to_async(services.list_memories)(user=alice))["total"] == 0
    # The save button still works: the switch is about saving automatically.
    result = await sync_to_async(backup.backup_conversation)(chat)
    assert result.saved == 7


async def test_it_offers_past_chats_as_the_switch_says(fake_anthropic, alice, alice_client):
    await sync_to_async(make_conversation)(alice, "Older chat", "Hello", "Hi")
    chat = await sync_to_async(make_conversation)(alice, "Chat")

    await sync_to_async(alice_client.post)("/memory/controls", {"control": "past_chats", "on": ""})
    fake_anthropic.reply("ok")
    await send(chat, "Hello")
    await sync_to_async(alice_client.post)(
        "/memory/controls", {"control": "past_chats", "on": "on"}
    )
    fake_anthropic.reply("ok")
    await send(chat, "Hello again")

    assert "conversation_search" not in _tool_names(fake_anthropic.requests[0])
    assert "conversation_search" in _tool_names(fake_anthropic.requests[1])
    prefs = await UserPreferences.objects.aget(user=alice)
    assert prefs.reference_past_chats


async def test_it_gives_an_incognito_chat_no_memory_at_all(fake_anthropic, alice, memory_server):
    await sync_to_async(services.add_thought)(user=alice, content="Alice skis in Chamonix")
    await sync_to_async(UserProfile.objects.create)(user=alice, built="Who: Alice, a skier")
    chat = await sync_to_async(long_chat)(alice, incognito=True)

    fake_anthropic.reply("Sure.")
    await send(chat, "Remember that I ski in Chamonix, and where do I ski?")
    await run_worker()

    sent = fake_anthropic.requests[0]
    assert _tool_names(sent) == []  # no memory tools, no past-chat tools
    assert "Chamonix" not in sent["system"] and "user_profile" not in sent["system"]
    assert await MemoryRetrieval.objects.acount() == 0
    assert await DBTaskResult.objects.acount() == 0
    assert (await sync_to_async(services.list_memories)(user=alice))["total"] == 1
    with pytest.raises(MemoryInputError):
        await sync_to_async(backup.backup_conversation)(chat)


async def test_it_turns_memory_off_for_one_conversation_from_its_menu(
    fake_anthropic, alice, alice_client, memory_server
):
    chat = await sync_to_async(make_conversation)(alice, "No memory here")
    other = await sync_to_async(make_conversation)(alice, "Memory here")

    page = (await sync_to_async(alice_client.get)(f"/c/{chat.pk}/")).content.decode()
    assert f'id="memory-switch-{chat.pk}"' in page and "Memory: on in this chat" in page
    response = await sync_to_async(alice_client.post)(
        f"/memory/conversation/{chat.pk}/switch", {"on": "0"}
    )
    assert "Memory: off in this chat" in response.content.decode()

    fake_anthropic.reply("ok")
    await send(chat, "Hello")
    fake_anthropic.reply("ok")
    await send(other, "Hello")
    assert "save_memory" not in _tool_names(fake_anthropic.requests[0])
    assert "save_memory" in _tool_names(fake_anthropic.requests[1])
    settings_row = await ConversationSettings.objects.aget(conversation=chat)
    assert not settings_row.enable_memory
    page = (await sync_to_async(alice_client.get)(f"/c/{other.pk}/")).content.decode()
    assert "Memory: off in this chat" in page and "Memory: on in this chat" in page


async def test_it_keeps_bob_off_alices_conversation_switch(alice, bob_client):
    chat = await sync_to_async(make_conversation)(alice, "Alice's")
    response = await sync_to_async(bob_client.post)(
        f"/memory/conversation/{chat.pk}/switch", {"on": "0"}
    )
    assert response.status_code == 404
    assert not await ConversationSettings.objects.filter(
        conversation=chat, enable_memory=False
    ).aexists()


async def test_it_resets_memory_only_with_the_typed_confirmation(
    fake_anthropic, alice, bob, alice_client, memory_server
):
    chat = await sync_to_async(long_chat)(alice)
    await sync_to_async(backup.backup_conversation)(chat)
    await sync_to_async(services.add_thought)(user=bob, content="Bob's own memory")
    await sync_to_async(UserProfile.objects.create)(user=alice, edited="Alice", built="Alice")
    await sync_to_async(make_conversation)(alice, "Other")
    # A memory just deleted from the page, still kept for Undo.
    doomed = (await sync_to_async(services.list_memories)(user=alice))["memories"][0]["id"]
    await sync_to_async(alice_client.post)(f"/memory/m/{doomed}/delete")
    assert await DeletedMemory.objects.filter(user=alice).aexists()

    wrong = await sync_to_async(alice_client.post)("/memory/reset", {"confirmation": "yes"})
    assert wrong.status_code == 400 and "reset my memory" in wrong.content.decode()
    assert (await sync_to_async(services.list_memories)(user=alice))["total"] == 5

    accepted = await sync_to_async(alice_client.post)(
        "/memory/reset", {"confirmation": "  Reset my MEMORY "}
    )
    assert accepted.status_code == 202 and "Deleting every memory" in accepted.content.decode()
    await run_worker()
    job_id = accepted["Location"].rsplit("/", 1)[1]
    done = await sync_to_async(alice_client.get)(f"/memory/jobs/{job_id}")

    assert "Memory reset: 5 memories deleted." in done.content.decode()
    assert (await sync_to_async(services.list_memories)(user=alice))["total"] == 0
    assert (await sync_to_async(services.list_memories)(user=bob))["total"] == 1
    assert not await UserProfile.objects.filter(user=alice).aexists()
    # Nothing to undo: the deleted memory's copy went too.
    assert not await DeletedMemory.objects.filter(user=alice).aexists()
    assert not await SavedExchange.objects.filter(conversation=chat).aexists()
    await chat.arefresh_from_db()
    assert not chat.has_memory_backup
    # Auto-save never brings back what was said before the reset: only the new exchange.
    await send(chat, "A new question about lift passes?")
    await run_worker()
    found = await sync_to_async(services.list_memories)(user=alice)
    assert found["total"] == 1 and "lift passes" in found["memories"][0]["content"]


async def test_it_says_paused_on_the_save_button(alice, alice_client):
    chat = await sync_to_async(make_conversation)(alice, "Chat", "Hello", "Hi there")
    await sync_to_async(controls.set_paused)(user=alice, paused=True)
    page = (await sync_to_async(alice_client.get)(f"/c/{chat.pk}/")).content.decode()
    assert "Memory paused" in page and "memory-save-button" not in page
    secret = await sync_to_async(make_conversation)(alice, "Secret", "Hello", "Hi", incognito=True)
    await sync_to_async(controls.set_paused)(user=alice, paused=False)
    page = (await sync_to_async(alice_client.get)(f"/c/{secret.pk}/")).content.decode()
    assert "memory-save" not in page


async def test_it_switches_the_controls_from_the_memory_page(alice, alice_client, memory_server):
    response = await sync_to_async(alice_client.post)(
        "/memory/controls", {"control": "paused", "on": "on"}
    )
    html = response.content.decode()
    assert 'id="control-paused" role="switch" aria-checked="true"' in html
    await sync_to_async(alice_client.post)("/memory/controls", {"control": "autosave", "on": ""})
    current = await MemorySettings.objects.aget(user=alice)
    assert current.paused and not current.autosave
    bad = await sync_to_async(alice_client.post)("/memory/controls", {"control": "everything"})
    assert bad.status_code == 400 and "Unknown control." in bad.content.decode()
    assert await Message.objects.acount() == 0


def test_one_answer_says_whether_memory_is_on_for_a_chat_and_why_not(alice, settings):
    chat = make_conversation(alice, "Chat")
    assert controls.memory_off_for(conversation=chat) == ""
    controls.set_paused(user=alice, paused=True)
    assert controls.memory_off_for(conversation=chat) == controls.PAUSED
    controls.set_conversation_memory(conversation=chat, on=False)
    assert controls.memory_off_for(conversation=chat) == controls.CHAT_OFF
    assert controls.memory_off_for(user=alice) == controls.PAUSED  # anywhere else: paused
    controls.set_memory_enabled(user=alice, on=False)
    assert controls.memory_off_for(conversation=chat) == controls.OFF
    incognito = make_conversation(alice, "Secret", incognito=True)
    assert controls.memory_off_for(conversation=incognito) == controls.INCOGNITO
    settings.MCP_MEMORY_ENABLED = False
    assert controls.memory_off_for(conversation=chat) == controls.DISABLED
