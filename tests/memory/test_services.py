"""memory/client/services.py through the real ikario_rag subprocess."""

import pytest

from memory.client import services
from memory.client.errors import MemoryDisabled, MemoryInputError, MemoryNotFound


def _save(user, content, **context):
    return services.add_thought(user=user, content=content, context=context or None)


def test_it_finds_what_was_saved(memory_server, alice):
    saved = _save(alice, "Alice skis in Chamonix every winter", category="thematique", tags=["ski"])
    assert saved["status"] == "created"

    found = services.search_memories(user=alice, query="ski holidays in the Alps")

    assert found["results"][0]["id"] == saved["id"]
    assert found["results"][0]["content"] == "Alice skis in Chamonix every winter"
    assert found["results"][0]["metadata"]["tags"] == ["ski"]
    assert 0 < found["results"][0]["relevance_score"] <= 1


def test_it_keeps_each_users_memories_to_that_user(memory_server, alice, bob):
    saved = _save(alice, "Alice's bank PIN hint is her cat's birthday")

    assert services.search_memories(user=bob, query="bank PIN hint")["results"] == []
    assert services.get_recent_memories(user=bob)["memories"] == []
    with pytest.raises(MemoryNotFound):
        services.get_memory(user=bob, memory_id=saved["id"])
    with pytest.raises(MemoryNotFound):
        services.delete_memory(user=bob, memory_id=saved["id"])
    assert services.forget(user=bob, topic="bank PIN hint", min_score=0.0)["removed"] == []
    assert services.trace_concept_evolution(user=bob, concept="PIN")["timeline"] == []
    assert services.memory_stats(user=bob)["total_memories"] == 0
    # And it is all still there for Alice.
    assert services.get_memory(user=alice, memory_id=saved["id"])["id"] == saved["id"]
    assert services.memory_stats(user=alice)["total_memories"] == 1


def test_it_filters_a_search_by_category_whatever_the_accents(memory_server, alice):
    _save(alice, "Ikario was founded to remember conversations", category="fondatrice")
    _save(alice, "We talked about remembering the conversation on Tuesday", category="contextuelle")

    found = services.search_memories(
        user=alice, query="remember conversations", filter_category="Fondatrice"
    )

    assert [r["metadata"]["category"] for r in found["results"]] == ["fondatrice"]
    everything = services.search_memories(user=alice, query="remember", filter_category="all")
    assert len(everything["results"]) == 2


def test_it_gets_and_deletes_one_memory(memory_server, alice):
    saved = _save(alice, "Alice's favourite tea is genmaicha")

    assert services.get_memory(user=alice, memory_id=saved["id"])["content"].endswith("genmaicha")
    assert services.delete_memory(user=alice, memory_id=saved["id"], reason="test")["deleted"]
    with pytest.raises(MemoryNotFound):
        services.get_memory(user=alice, memory_id=saved["id"])


def test_it_forgets_a_topic_and_dry_runs_first(memory_server, alice):
    _save(alice, "Alice's dentist appointment is on Friday at nine")
    kept = _save(alice, "Alice likes jazz piano")

    preview = services.forget(user=alice, topic="dentist appointment", dry_run=True)
    assert [m["content"] for m in preview["removed"]] == [
        "Alice's dentist appointment is on Friday at nine"
    ]
    assert services.memory_stats(user=alice)["total_memories"] == 2

    services.forget(user=alice, topic="dentist appointment")
    remaining = services.get_recent_memories(user=alice)["memories"]
    assert [m["id"] for m in remaining] == [kept["id"]]


def test_it_traces_a_concept_oldest_first(memory_server, alice):
    _save(alice, "Alice thinks memory is just storage", concepts=["memory"], date="2024-01-01")
    _save(alice, "Alice now thinks memory is identity", concepts=["memory"], date="2025-06-01")

    timeline = services.trace_concept_evolution(user=alice, concept="memory")["timeline"]

    assert [entry["content"] for entry in timeline] == [
        "Alice thinks memory is just storage",
        "Alice now thinks memory is identity",
    ]


def test_it_checks_a_statement_against_the_memory(memory_server, alice):
    _save(alice, "Alice is vegetarian and never eats meat")

    result = services.check_consistency(user=alice, statement="Alice is vegetarian")

    assert 0 <= result["consistency_score"] <= 1
    assert isinstance(result["contradictions"], list)


def test_it_reports_stats_for_the_indicator(memory_server, alice):
    _save(alice, "Alice reads Le Monde", category="contextuelle")

    stats = services.memory_stats(user=alice)

    assert stats["connected"] is True
    assert stats["status"] == "connected"
    assert stats["total_memories"] == 1
    assert stats["last_save"]
    assert stats["by_category"] == {"contextuelle": 1}


def test_it_never_stores_a_private_span(memory_server, alice):
    saved = _save(alice, "Alice's locker code is <private>4521</private> near the gym")

    record = services.get_memory(user=alice, memory_id=saved["id"])

    assert "4521" not in record["content"]
    with pytest.raises(MemoryInputError) as refused:
        _save(alice, "<private>only a secret</private>")
    assert refused.value.field == "content"


@pytest.mark.parametrize(
    ("function", "arguments", "field"),
    [
        ("search_memories", {"query": ""}, "query"),
        ("search_memories", {"query": None}, "query"),
        ("search_memories", {"query": "x", "n_results": 0}, "n_results"),
        ("search_memories", {"query": "x", "n_results": 101}, "n_results"),
        ("search_memories", {"query": "x", "n_results": "5"}, "n_results"),
        ("search_memories", {"query": "x", "n_results": True}, "n_results"),
        ("search_memories", {"query": "x", "filter_category": "x"}, "filter_category"),
        ("search_memories", {"query": "x", "kinds": ["poem"]}, "kinds"),
        ("search_memories", {"query": "x", "mode": "fuzzy"}, "mode"),
        ("search_memories", {"query": "x", "timeout": 0}, "timeout"),
        ("add_thought", {"content": "   "}, "content"),
        ("add_thought", {"content": 42}, "content"),
        ("add_thought", {"content": "x", "context": []}, "context"),
        ("add_thought", {"content": "x", "context": {"category": "big"}}, "context.category"),
        ("add_thought", {"content": "x", "context": {"tags": "ski"}}, "context.tags"),
        ("add_thought", {"content": "x", "context": {"date": "Tuesday"}}, "context.date"),
        ("add_thought", {"content": "x", "context": {"colour": "red"}}, "context.colour"),
        ("add_thought", {"content": "x", "context": {"ttl": "1y"}}, "context.ttl"),
        ("trace_concept_evolution", {"concept": "x", "limit": -1}, "limit"),
        ("check_consistency", {"statement": ["x"]}, "statement"),
        ("get_memory", {"memory_id": "../../etc"}, "memory_id"),
        ("delete_memory", {"memory_id": ""}, "memory_id"),
        ("forget", {"topic": "x", "min_score": 2}, "min_score"),
        ("forget", {"topic": "x", "dry_run": "yes"}, "dry_run"),
        ("get_recent_memories", {"limit": 1000}, "limit"),
    ],
)
def test_it_names_the_bad_argument_before_calling_the_server(
    no_memory_server, alice, function, arguments, field
):
    # A path that cannot start: the error must come from validation, not from the server.

    with pytest.raises(MemoryInputError) as bad:
        getattr(services, function)(user=alice, **arguments)

    assert bad.value.field == field


def test_it_needs_a_signed_in_user(db):
    from django.contrib.auth.models import AnonymousUser

    with pytest.raises(MemoryInputError) as bad:
        services.search_memories(user=AnonymousUser(), query="anything")
    assert bad.value.field == "user"


def test_it_says_disabled_everywhere_when_memory_is_off(settings, alice):
    settings.MCP_MEMORY_ENABLED = False

    for call in (
        lambda: services.search_memories(user=alice, query="x"),
        lambda: services.add_thought(user=alice, content="x"),
        lambda: services.trace_concept_evolution(user=alice, concept="x"),
        lambda: services.check_consistency(user=alice, statement="x"),
        lambda: services.get_memory(user=alice, memory_id="abc"),
        lambda: services.delete_memory(user=alice, memory_id="abc"),
        lambda: services.forget(user=alice, topic="x"),
        lambda: services.get_recent_memories(user=alice),
    ):
        with pytest.raises(MemoryDisabled):
            call()
    assert services.memory_status() == "disabled"
    stats = services.memory_stats(user=alice)
    assert (stats["connected"], stats["status"]) == (False, "disabled")
