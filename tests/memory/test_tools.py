"""The memory tools as the model calls them: definitions, input checks, and the executor
against the real ikario_rag server (through memory.client.services)."""

import json
import logging

import pytest
from asgiref.sync import async_to_sync

from memory.client import services
from memory.recall import tools
from memory.recall.tools import memory_tools
from tests.fixtures.builders import make_conversation


def run_tool(user, conversation, name, data):
    return async_to_sync(tools.run_tool)(user, conversation, name, data)


pytestmark = pytest.mark.django_db


@pytest.fixture
def chat(alice):
    return make_conversation(alice, "Tools")


def test_it_describes_the_tools_as_seed_000_does():
    tools = {tool["name"]: tool for tool in memory_tools("fr")}
    assert tools["save_memory"]["description"] == (
        "Sauvegarde cette conversation ou une pensée importante dans ta mémoire à long terme"
    )
    assert tools["search_memories"]["input_schema"]["required"] == ["query"]
    assert tools["search_memories"]["input_schema"]["properties"]["n_results"]["default"] == 5
    for name in ("tags", "concepts", "emotions"):
        prop = tools["save_memory"]["input_schema"]["properties"][name]
        assert prop == {"type": "array", "items": {"type": "string"}}
    english = {tool["name"]: tool for tool in memory_tools("en")}
    assert english["search_memories"]["description"] == "Search your memories of past conversations"


@pytest.mark.parametrize(
    ("name", "data", "message"),
    [
        ("save_memory", {"category": "thematique"}, "content is required."),
        ("save_memory", {"content": "  ", "category": "thematique"}, "content must not be empty."),
        ("save_memory", {"content": "x"}, "category is required (one of fondatrice, thematique"),
        (
            "save_memory",
            {"content": "x", "category": "big"},
            "category must be one of fondatrice, thematique, contextuelle.",
        ),
        (
            "save_memory",
            {"content": "x", "category": "contextuelle", "tags": "ski"},
            "tags must be a list of strings.",
        ),
        (
            "save_memory",
            {"content": "x", "category": "contextuelle", "emotions": [1]},
            "emotions must be a list of strings.",
        ),
        ("save_memory", {"content": "x" * 20_001, "category": "thematique"}, "content must be at"),
        ("search_memories", {}, "query is required."),
        ("search_memories", {"query": "ski", "n_results": 0}, "n_results must be between 1"),
        ("search_memories", {"query": "ski", "n_results": "5"}, "n_results must be an integer."),
        ("get_recent_memories", {"limit": -1}, "limit must be between 1 and 100."),
        ("delete_memory", {"ids": []}, "ids must list 1 to 20 memory ids."),
        ("delete_memory", {"ids": "abc"}, "ids must list 1 to 20 memory ids."),
        ("delete_memory", {"ids": ["../etc"]}, "ids is not a valid memory id."),
        ("save_memory", ["not", "an", "object"], "input must be a JSON object."),
        (
            "save_memory",
            {"content": "x", "category": "thematique", "kind": "conversation"},
            "kind must be one of fact, self, goal, preference, thought.",
        ),
        (
            "save_memory",
            {"content": "x", "category": "thematique", "kind": ["fact"]},
            "kind must be one of fact, self, goal, preference, thought.",
        ),
    ],
)
def test_it_refuses_bad_input_naming_the_field(alice, chat, name, data, message):
    outcome = run_tool(alice, chat, name, data)
    assert outcome.is_error is True
    assert outcome.content.startswith(f"Invalid input for {name}: ")
    assert message in outcome.content


def test_it_refuses_an_unknown_tool(alice, chat):
    outcome = run_tool(alice, chat, "delete_everything", {})
    assert outcome.is_error is True
    assert "Unknown tool 'delete_everything'" in outcome.content


def test_it_saves_then_finds_with_the_category_filter(memory_server, alice, chat):
    saved = run_tool(
        alice,
        chat,
        "save_memory",
        {"content": "Alice's first words to Ikario: hello friend", "category": "fondatrice"},
    )
    assert (saved.is_error, saved.summary) == (False, "Saved to memory")
    run_tool(
        alice,
        chat,
        "save_memory",
        {"content": "Alice said hello to her neighbour", "category": "contextuelle"},
    )

    found = run_tool(
        alice, chat, "search_memories", {"query": "hello", "filter_category": "fondatrice"}
    )
    results = json.loads(found.content)["results"]
    assert [r["content"] for r in results] == ["Alice's first words to Ikario: hello friend"]
    assert results[0]["category"] == "fondatrice"
    assert found.summary == "Searched memories for 'hello' — 1 result"

    again = run_tool(
        alice,
        chat,
        "save_memory",
        {"content": "Alice's first words to Ikario: hello friend", "category": "fondatrice"},
    )
    assert (again.is_error, again.summary) == (False, "Already in memory")


def test_it_updates_a_fact_claude_saves_again_in_other_words(memory_server, alice, chat):
    # What Claude saves is a fact by default: ikario_rag's dedup applies to it.
    first = run_tool(
        alice,
        chat,
        "save_memory",
        {"content": "My cousin Ivan lives in Oslo.", "category": "thematique"},
    )
    again = run_tool(
        alice,
        chat,
        "save_memory",
        {"content": "Ivan, my cousin, lives in Oslo.", "category": "thematique"},
    )
    other = run_tool(
        alice,
        chat,
        "save_memory",
        {"content": "My cousin Ivan's wife lives in Oslo.", "category": "thematique"},
    )

    assert first.summary == "Saved to memory"
    assert again.summary == "Updated a memory"
    assert json.loads(again.content)["replaced_id"] == json.loads(first.content)["id"]
    assert other.summary == "Saved to memory"  # a relative: another fact, never merged
    recent = services.get_recent_memories(user=alice, limit=10)["memories"]
    assert sorted((m["content"], m["metadata"]["kind"]) for m in recent) == [
        ("Ivan, my cousin, lives in Oslo.", "fact"),
        ("My cousin Ivan's wife lives in Oslo.", "fact"),
    ]


def test_it_keeps_a_thought_apart_from_a_near_one(memory_server, alice, chat):
    said = {"category": "thematique", "kind": "thought"}
    run_tool(alice, chat, "save_memory", {"content": "My cousin Ivan lives in Oslo.", **said})
    again = run_tool(
        alice, chat, "save_memory", {"content": "Ivan, my cousin, lives in Oslo.", **said}
    )

    assert again.summary == "Saved to memory"
    recent = services.get_recent_memories(user=alice, limit=10)["memories"]
    assert {m["metadata"]["kind"] for m in recent} == {"thought"} and len(recent) == 2


def test_it_names_each_operation_once_from_claude_to_the_server():
    assert [tool["name"] for tool in memory_tools("en")] == list(tools.MCP_TOOL_OF)
    assert list(tools.MCP_TOOL_OF) == list(tools.HANDLERS)
    renamed = {claude: mcp for claude, mcp in tools.MCP_TOOL_OF.items() if claude != mcp}
    assert renamed == {"save_memory": "add_thought"}
    for mcp_tool in tools.MCP_TOOL_OF.values():
        assert callable(getattr(services, mcp_tool))


def test_it_caps_what_the_model_asks_for_instead_of_refusing(memory_server, alice, chat):
    services.add_thought(user=alice, content="Alice grows tomatoes")

    found = run_tool(alice, chat, "get_recent_memories", {"limit": 500})

    assert found.is_error is False
    assert len(json.loads(found.content)["memories"]) == 1


def test_it_lists_recent_memories_and_forgets_on_request(memory_server, alice, bob, chat):
    for text in ("Alice adopted a cat named Miso", "Alice is learning Japanese"):
        services.add_thought(user=alice, content=text)
    bobs = services.add_thought(user=bob, content="Bob adopted a dog named Rex")

    recent = run_tool(alice, chat, "get_recent_memories", {"limit": 5})
    memories = json.loads(recent.content)["memories"]
    assert [m["content"] for m in memories] == [
        "Alice is learning Japanese",
        "Alice adopted a cat named Miso",
    ]
    assert recent.summary == "Looked at recent memories — 2 memories"

    cat_id = memories[1]["id"]
    forgot = run_tool(alice, chat, "delete_memory", {"ids": [cat_id], "reason": "asked to forget"})
    assert (forgot.is_error, forgot.summary) == (False, "Forgot 1 memory")
    left = services.get_recent_memories(user=alice)["memories"]
    assert [m["content"] for m in left] == ["Alice is learning Japanese"]

    # Another user's id is not found in Alice's memory, and Bob's memory stays.
    refused = run_tool(alice, chat, "delete_memory", {"ids": [bobs["id"]]})
    assert refused.is_error is True
    assert json.loads(refused.content) == {"forgotten": [], "not_found": [bobs["id"]]}
    assert services.get_recent_memories(user=bob)["memories"][0]["id"] == bobs["id"]


def test_it_only_ever_reaches_the_calling_users_memories(memory_server, alice, bob, chat):
    services.add_thought(user=alice, content="Alice's bank PIN hint is her cat's birthday")
    bobs_chat = make_conversation(bob, "Bob")

    found = run_tool(bob, bobs_chat, "search_memories", {"query": "bank PIN hint"})
    assert json.loads(found.content)["results"] == []
    # The model cannot name another namespace: extra fields are ignored.
    found = run_tool(
        bob, bobs_chat, "search_memories", {"query": "bank PIN", "namespace": f"user-{alice.pk}"}
    )
    assert json.loads(found.content)["results"] == []


def test_it_reports_an_unreachable_memory_as_a_tool_error(alice, chat, no_memory_server):
    outcome = run_tool(alice, chat, "search_memories", {"query": "anything"})
    assert outcome.is_error is True
    assert outcome.content.startswith("Memory unavailable")
    assert outcome.summary == "Memory search failed"


def test_it_logs_each_execution(memory_server, alice, chat, caplog):
    execute = async_to_sync(tools.make_executor(user=alice, conversation=chat))
    with caplog.at_level(logging.INFO, logger="memory.recall.tools"):
        execute("search_memories", {"query": "ski"})
        execute("save_memory", {"content": "x"})
    lines = [r.getMessage() for r in caplog.records if r.name == "memory.recall.tools"]
    assert len(lines) == 2
    assert lines[0].startswith(f"tool search_memories user={alice.pk} conversation={chat.pk} ok")
    assert lines[1].startswith(f"tool save_memory user={alice.pk} conversation={chat.pk} error")
