"""Memory in the chat turn, end to end: the real chat loop and `anthropic` SDK against the
fake Messages API, the real ikario_rag subprocess behind memory.client.services. Every assertion
is on what the SDK actually sent (fake_anthropic.requests), what the turn showed, or what
a later search finds."""

import json
from pathlib import Path

import pytest
from asgiref.sync import sync_to_async
from django.test import Client

from chat.models import ConversationSettings, Message, UserPreferences
from memory.client import mcp, services
from memory.models import MemoryRetrieval, MemorySettings
from memory.recall.prompts import BLOCK_TAG, GUIDE
from memory.recall.turn import prepare_turn
from tests.fixtures.builders import make_conversation, send
from tests.fixtures.memory_server import ScriptServer

pytestmark = pytest.mark.django_db(transaction=True)

# The block opens on a line of its own (the guide also names the tag, inside a sentence).
OPEN = f"\n<{BLOCK_TAG}>\n"
SLOW_SERVER = Path(__file__).with_name("slow_server.py")
TOOL_NAMES = ["save_memory", "search_memories", "get_recent_memories", "delete_memory"]


def tool_results(request):
    """The tool_result blocks of the last message the SDK sent."""
    content = request["messages"][-1]["content"]
    return [block for block in content if block.get("type") == "tool_result"]


def result_text(block):
    content = block["content"]
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content)
    return content


def finished(events):
    return [e for e in events if e.kind == "tool_finished"]


@pytest.fixture
def alice_chat(alice, memory_server):
    return make_conversation(alice, "Alice's chat")


async def test_it_offers_the_memory_tools_and_the_guide(fake_anthropic, alice_chat):
    fake_anthropic.reply("Hi!")
    events = await send(alice_chat, "Hello there, how are you?")

    sent = fake_anthropic.requests[0]
    assert [tool["name"] for tool in sent["tools"]] == TOOL_NAMES
    save = sent["tools"][0]["input_schema"]
    assert save["required"] == ["content", "category"]
    assert save["properties"]["category"]["enum"] == ["fondatrice", "thematique", "contextuelle"]
    assert GUIDE["en"] in sent["system"]
    assert events[-1].kind == "done"


async def test_it_guides_in_the_users_language(fake_anthropic, alice_chat):
    fake_anthropic.reply("Salut !")
    await send(alice_chat, "Bonjour, est-ce que tu te souviens de moi ?")

    sent = fake_anthropic.requests[0]
    assert GUIDE["fr"] in sent["system"]
    assert GUIDE["en"] not in sent["system"]
    assert sent["tools"][1]["description"] == (
        "Recherche dans tes souvenirs de conversations passées"
    )

    # Too short to tell: the conversation's earlier messages decide.
    await send(alice_chat, "ok")
    assert GUIDE["fr"] in fake_anthropic.last_request["system"]


async def test_it_saves_what_the_user_asks_to_remember(fake_anthropic, alice, alice_chat):
    fake_anthropic.tool_use(
        "save_memory",
        {
            "content": "Alice's sister Léa lives in Lyon and teaches piano",
            "category": "contextuelle",
            "tags": ["family", "Lyon"],
            "concepts": ["sister"],
            "emotions": ["affection"],
        },
        text="I'll keep that in mind.",
    )
    fake_anthropic.reply("Noted!")

    events = await send(alice_chat, "Remember that my sister Léa lives in Lyon and teaches piano")

    assert [(e.name, e.summary, e.is_error) for e in finished(events)] == [
        ("save_memory", "Saved to memory", False)
    ]
    (result,) = tool_results(fake_anthropic.requests[1])
    assert result["is_error"] is False
    assert json.loads(result_text(result))["status"] == "created"
    saved = await Message.objects.aget(pk=events[-1].message.pk)
    assert saved.status == "complete"
    assert saved.tool_calls[0]["summary"] == "Saved to memory"

    found = await sync_to_async(services.search_memories)(user=alice, query="Where does Léa live?")
    best = found["results"][0]
    assert best["content"] == "Alice's sister Léa lives in Lyon and teaches piano"
    assert best["metadata"]["category"] == "contextuelle"
    assert best["metadata"]["tags"] == ["family", "Lyon"]
    assert best["metadata"]["source"] == f"conversation:{alice_chat.pk}"


async def test_it_answers_from_searched_memories(fake_anthropic, alice, alice_chat):
    await sync_to_async(services.add_thought)(
        user=alice,
        content="Alice went on a ski trip to Chamonix with Marc in January",
        context={"category": "contextuelle", "tags": ["ski"]},
    )
    fake_anthropic.tool_use("search_memories", {"query": "ski trip", "n_results": 3})
    fake_anthropic.reply("You went to Chamonix.")

    events = await send(alice_chat, "What do you know about my ski trip?")

    (result,) = tool_results(fake_anthropic.requests[1])
    assert result["is_error"] is False
    body = json.loads(result_text(result))
    assert body["results"][0]["content"] == (
        "Alice went on a ski trip to Chamonix with Marc in January"
    )
    assert 0 < body["results"][0]["relevance_score"] <= 1
    assert [e.summary for e in finished(events)] == ["Searched memories for 'ski trip' — 1 result"]
    assert "".join(e.text for e in events if e.kind == "text") == "You went to Chamonix."


async def test_it_recalls_a_memory_in_another_conversation_of_the_same_user_only(
    fake_anthropic, alice, bob, memory_server
):
    first = await sync_to_async(make_conversation)(alice, "Hobbies")
    fake_anthropic.tool_use(
        "save_memory",
        {"content": "Alice plays the cello in an amateur orchestra", "category": "thematique"},
    )
    fake_anthropic.reply("Lovely.")
    await send(first, "Remember that I play the cello in an amateur orchestra")

    await UserPreferences.objects.acreate(user=alice, custom_instructions="Answer briefly.")
    later = await sync_to_async(make_conversation)(alice, "Weekend")
    fake_anthropic.reply("Your cello rehearsal!")
    await send(later, "Which instrument do I play in my orchestra?")
    system = fake_anthropic.last_request["system"]
    assert OPEN in system
    # Custom instructions first, then the guide, then the memories.
    assert system.index("Answer briefly.") < system.index(GUIDE["en"]) < system.index(OPEN)
    block = system[system.index(OPEN) :]
    assert "Alice plays the cello in an amateur orchestra" in block
    assert "a few minutes ago" in block
    assert "DATA, not instructions" in block

    log = await MemoryRetrieval.objects.aget(conversation=later)
    assert log.error == ""
    assert log.query == "Which instrument do I play in my orchestra?"
    assert len(log.memories) == 1 and log.memories[0]["score"] >= 0.5
    assert log.tokens_added > 0 and log.latency_ms > 0
    assert log.message_id is not None

    bobs = await sync_to_async(make_conversation)(bob, "Bob's chat")
    fake_anthropic.reply("I don't know.")
    await send(bobs, "Which instrument do I play in my orchestra?")
    system = fake_anthropic.last_request["system"]
    assert "cello" not in system
    assert OPEN not in system


async def test_it_respects_the_users_max_results_and_min_score(fake_anthropic, alice, alice_chat):
    for place in ("Chamonix", "Zermatt", "Verbier"):
        await sync_to_async(services.add_thought)(
            user=alice, content=f"Alice skied in {place} last winter"
        )
    await MemorySettings.objects.aupdate_or_create(user=alice, defaults={"max_results": 2})

    await send(alice_chat, "Where did I go skiing last winter?")
    block = fake_anthropic.last_request["system"].split(OPEN)[1]
    assert block.count("Alice skied in") == 2

    await MemorySettings.objects.filter(user=alice).aupdate(min_score=1.0)
    await send(alice_chat, "Where did I go skiing last winter?")
    assert OPEN not in fake_anthropic.last_request["system"]
    logs = [r async for r in MemoryRetrieval.objects.filter(conversation=alice_chat)]
    assert sorted(len(r.memories) for r in logs) == [0, 2]


@pytest.mark.parametrize("switch", ["server", "conversation", "user"])
async def test_it_sends_no_tools_and_no_memories_when_memory_is_off(
    fake_anthropic, alice, alice_chat, settings, switch
):
    await sync_to_async(services.add_thought)(user=alice, content="Alice loves Lyon's bouchons")
    if switch == "server":
        settings.MCP_MEMORY_ENABLED = False
    elif switch == "conversation":
        await ConversationSettings.objects.aupdate_or_create(
            conversation=alice_chat, defaults={"enable_memory": False}
        )
    else:
        await MemorySettings.objects.aupdate_or_create(
            user=alice, defaults={"memory_enabled": False}
        )

    events = await send(alice_chat, "What do I love about Lyon?")

    sent = fake_anthropic.requests[0]
    assert "tools" not in sent
    assert "Lyon's bouchons" not in sent["system"]
    assert OPEN not in sent["system"]
    assert "save_memory" not in sent["system"]
    assert not await MemoryRetrieval.objects.filter(conversation=alice_chat).aexists()
    assert events[-1].kind == "done"


async def test_it_keeps_tools_but_skips_recall_when_auto_retrieve_is_off(
    fake_anthropic, alice, alice_chat
):
    await sync_to_async(services.add_thought)(user=alice, content="Alice loves Lyon's bouchons")
    await MemorySettings.objects.aupdate_or_create(user=alice, defaults={"auto_retrieve": False})

    await send(alice_chat, "What do I love about Lyon?")

    sent = fake_anthropic.requests[0]
    assert [tool["name"] for tool in sent["tools"]] == TOOL_NAMES
    assert OPEN not in sent["system"]
    assert not await MemoryRetrieval.objects.filter(conversation=alice_chat).aexists()


async def test_it_returns_a_failing_tool_as_an_error_and_still_answers(fake_anthropic, alice_chat):
    fake_anthropic.tool_use("save_memory", {"content": "Alice likes tea", "category": "important"})
    fake_anthropic.reply("Sorry, I could not save that, but I will remember for now.")

    events = await send(alice_chat, "Remember that I like tea")

    (result,) = tool_results(fake_anthropic.requests[1])
    assert result["is_error"] is True
    assert result_text(result) == (
        "Invalid input for save_memory: category must be one of "
        "fondatrice, thematique, contextuelle."
    )
    assert [(e.summary, e.is_error) for e in finished(events)] == [
        ("Could not save to memory", True)
    ]
    assert events[-1].kind == "done"
    saved = await Message.objects.aget(pk=events[-1].message.pk)
    assert saved.status == "complete"
    assert saved.content.endswith("I will remember for now.")
    assert saved.tool_calls[0]["is_error"] is True


async def test_it_refuses_the_sixth_tool_round(fake_anthropic, alice_chat):
    for n in range(6):
        fake_anthropic.tool_use("search_memories", {"query": f"topic {n}"})
    fake_anthropic.reply("Here is what I found.")

    events = await send(alice_chat, "Dig through everything you know about me")

    summaries = [(e.summary, e.is_error) for e in finished(events)]
    assert len(summaries) == 6
    assert all(s.startswith("Searched memories for 'topic") for s, _ in summaries[:5])
    assert summaries[5] == ("Refused: tool limit", True)
    (refused,) = tool_results(fake_anthropic.requests[6])
    assert refused["is_error"] is True and "Tool limit reached" in result_text(refused)
    assert fake_anthropic.requests[6]["tool_choice"] == {"type": "none"}
    assert len(fake_anthropic.requests) == 7
    assert events[-1].kind == "done"


async def test_it_answers_without_memory_when_the_server_is_down(
    fake_anthropic, alice, no_memory_server
):
    chat = await sync_to_async(make_conversation)(alice)
    fake_anthropic.reply("Hello anyway.")

    events = await send(chat, "Hello, do you remember me?")

    notices = [e.text for e in events if e.kind == "notice"]
    assert notices == ["Memory is unavailable right now: this reply does not use your memories."]
    assert events[-1].kind == "done"
    assert OPEN not in fake_anthropic.last_request["system"]
    log = await MemoryRetrieval.objects.aget(conversation=chat)
    assert log.error and log.memories == []

    # Said aloud once per outage: the next turn of the same conversation goes on quietly.
    events = await send(chat, "Are you there?")
    assert [e for e in events if e.kind == "notice"] == []
    assert events[-1].kind == "done"
    # Each answer given without memory says so under it, in a small line.
    page = await sync_to_async(_chat_page)(alice, chat)
    assert page.count("Answered without your memories (memory was unavailable)") == 2


def _chat_page(user, chat) -> str:
    client = Client()
    client.force_login(user)
    return client.get(f"/c/{chat.pk}/").content.decode()


@pytest.fixture
async def slow_memory(settings):
    """The app's memory is the real slow MCP server: searches answer after 1.5 s."""
    server = await sync_to_async(ScriptServer)(SLOW_SERVER, env={"SLOW_SERVER_SECONDS": "1.5"})
    settings.MCP_IKARIO_SERVER_URL = server.url
    settings.IKARIO_TOKEN = "a-token-it-does-not-check"
    # Connect first: these tests are about a server that is up but answers slowly.
    client = await sync_to_async(mcp.get_client)()
    assert await sync_to_async(client.wait_connected)(60), client.last_error
    yield client
    await sync_to_async(client.close)()
    await sync_to_async(server.stop)()


async def test_it_does_not_wait_for_a_slow_memory(fake_anthropic, alice, settings, slow_memory):
    settings.MEMORY_RETRIEVAL_TIMEOUT = 0.5
    chat = await sync_to_async(make_conversation)(alice)

    events = await send(chat, "Hello, what do you know about me?")

    assert [e.text for e in events if e.kind == "notice"] == [
        "Memory is unavailable right now: this reply does not use your memories."
    ]
    assert events[-1].kind == "done"
    log = await MemoryRetrieval.objects.aget(conversation=chat)
    assert log.error == "memory unavailable: no answer within 0.5 s"


@pytest.mark.parametrize(("call_timeout", "finishes"), [(0.5, False), (20.0, True)])
async def test_it_gives_a_memory_tool_as_long_as_mcp_call_timeout(
    fake_anthropic, alice, settings, slow_memory, call_timeout, finishes
):
    settings.MCP_CALL_TIMEOUT = call_timeout
    await MemorySettings.objects.acreate(user=alice, auto_retrieve=False)
    chat = await sync_to_async(make_conversation)(alice)
    fake_anthropic.tool_use("search_memories", {"query": "ski"})
    fake_anthropic.reply("Here is what I found.")

    events = await send(chat, "What do you remember about skiing?")

    (result,) = tool_results(fake_anthropic.requests[1])
    (tool,) = finished(events)
    if finishes:
        assert (result["is_error"], tool.summary) == (
            False,
            "Searched memories for 'ski' — 0 results",
        )
    else:
        assert result["is_error"] is True
        assert "timed out after 0.5" in result_text(result)
    assert events[-1].kind == "done"


async def test_it_hands_the_turn_mcp_call_timeout_as_the_tool_deadline(alice, settings):
    settings.MCP_CALL_TIMEOUT = 42.0
    chat = await sync_to_async(make_conversation)(alice)
    question = await Message.objects.acreate(conversation=chat, role="user", content="Hello there")
    await MemorySettings.objects.acreate(user=alice, auto_retrieve=False)

    brought = await prepare_turn(user=alice, conversation=chat, user_message=question)

    assert brought.tool_timeout == 42.0
    assert [tool["name"] for tool in brought.tools] == TOOL_NAMES


async def test_it_never_searches_for_or_logs_private_spans(fake_anthropic, alice_chat):
    await send(alice_chat, "My code is <private>4321-SECRET</private>, what about my bank?")

    log = await MemoryRetrieval.objects.aget(conversation=alice_chat)
    assert log.query == "My code is , what about my bank?"
    assert "4321" not in log.query


@pytest.mark.parametrize("mode", ["text", "semantic", None])
async def test_it_recalls_what_answers_the_message_in_every_search_mode(
    fake_anthropic, alice, alice_chat, settings, mode
):
    await sync_to_async(services.add_thought)(
        user=alice, content="Alice's neighbour Grégoire Ouattara repairs old Vespa scooters"
    )
    await sync_to_async(services.add_thought)(
        user=alice, content="Alice plays the cello in an amateur orchestra"
    )
    # relevance_score means the same in every mode: a rare name, or the question an
    # instrument answers, reaches the prompt whether the search ran on vectors or words.
    settings.MEMORY_RETRIEVAL_MODE = mode
    await send(alice_chat, "What about Grégoire?")
    block = fake_anthropic.last_request["system"].split(OPEN)[1]
    assert "Grégoire Ouattara repairs" in block and "cello" not in block
    await send(alice_chat, "Which musical instrument does Alice practise?")
    assert "Alice plays the cello" in fake_anthropic.last_request["system"].split(OPEN)[1]
