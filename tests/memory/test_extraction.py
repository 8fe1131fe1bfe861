"""Extraction through the real `anthropic` SDK against the fake Messages API (real HTTP),
the real task worker and the real ikario_rag: fact memories appear, a restated fact
updates, a changed fact supersedes the old one and keeps it in its history."""

from __future__ import annotations

import json
import sqlite3

import pytest

from memory.client import services
from memory.learning.backup import backup_conversation
from memory.models import SavedExchange
from memory.worker import database
from tests.fixtures.builders import add_message, make_conversation

pytestmark = pytest.mark.django_db(transaction=True)


def facts_of(user) -> list[dict]:
    kinds = ["fact", "preference", "goal", "self"]
    return services.get_recent_memories(user=user, limit=100, kinds=kinds)["memories"]


def record(*facts):
    return {"facts": list(facts)}


def test_it_turns_an_exchange_into_fact_memories(alice, memory_server, fake_anthropic, settings):
    chat = make_conversation(
        alice,
        "Piano",
        "I'm Alice, I started piano lessons in Lyon and I hate metronomes.",
        "That's a great start! Many teachers use a metronome, but you can begin without.",
    )
    fake_anthropic.tool_use(
        "record_facts",
        record(
            {"content": "Alice lives in Lyon", "kind": "self", "subjects": ["alice", "lyon"]},
            {
                "content": "Alice takes piano lessons",
                "kind": "goal",
                "subjects": ["piano"],
                "date": "2026-01-15",
            },
            {"content": "Alice hates metronomes", "kind": "preference", "subjects": ["music"]},
            {"content": "x", "kind": "opinion", "subjects": []},  # unknown kind: dropped
        ),
    )

    backup_conversation(chat)
    database.run_ready_tasks()

    # The extraction's request (the first facts then build the profile: another request).
    sent = next(
        r for r in fake_anthropic.requests if r.get("tool_choice", {}).get("name") == "record_facts"
    )
    assert sent["model"] == settings.ANTHROPIC_EXTRACTION_MODEL
    assert sent["tools"][0]["input_schema"]["properties"]["facts"]["type"] == "array"
    assert "DURABLE" in sent["system"] and "SPECIFIC TO THE USER" in sent["system"]
    assert "I started piano lessons in Lyon" in sent["messages"][0]["content"]
    facts = {f["content"]: f["metadata"] for f in facts_of(alice)}
    assert set(facts) == {
        "Alice lives in Lyon",
        "Alice takes piano lessons",
        "Alice hates metronomes",
    }
    assert facts["Alice hates metronomes"]["kind"] == "preference"
    assert facts["Alice takes piano lessons"]["date"].startswith("2026-01-15")
    assert facts["Alice lives in Lyon"]["subjects"] == ["alice", "lyon"]
    answer = chat.messages.get(role="assistant")
    assert facts["Alice lives in Lyon"]["source"] == f"conversation:{chat.pk}:{answer.pk}"
    assert SavedExchange.objects.get(answer=answer).facts == 3


def test_it_updates_a_restated_fact_instead_of_adding_one(alice, memory_server, fake_anthropic):
    chat = make_conversation(alice, "Épaule", "Je me suis cassé l'épaule", "Aïe, repose-toi.")
    fake_anthropic.tool_use(
        "record_facts",
        record({"content": "Alice s'est cassé l'épaule", "kind": "fact", "subjects": ["santé"]}),
    )
    backup_conversation(chat)
    database.run_ready_tasks()
    first = facts_of(alice)

    add_message(chat, "C'était le 10 janvier 2026, au ski.")
    add_message(chat, "Bon rétablissement !", role="assistant")
    fake_anthropic.tool_use(
        "record_facts",
        record(
            {
                "content": "Alice s'est cassé l'épaule le 10 janvier 2026",
                "kind": "fact",
                "subjects": ["santé"],
                "date": "2026-01-10",
            }
        ),
    )
    backup_conversation(chat)
    database.run_ready_tasks()

    # The model was shown what is known, with an id it may name.
    assert (
        "K1 [fact] Alice s'est cassé l'épaule"
        in fake_anthropic.last_request["messages"][0]["content"]
    )
    facts = facts_of(alice)
    assert [f["content"] for f in facts] == ["Alice s'est cassé l'épaule le 10 janvier 2026"]
    assert facts[0]["id"] != first[0]["id"]


def test_it_supersedes_a_changed_fact_and_keeps_its_history(alice, memory_server, fake_anthropic):
    chat = make_conversation(alice, "Home", "I live in Paris", "Lovely city.")
    fake_anthropic.tool_use(
        "record_facts", record({"content": "Alice lives in Paris", "kind": "self", "subjects": []})
    )
    backup_conversation(chat)
    database.run_ready_tasks()
    old = facts_of(alice)[0]

    add_message(chat, "We moved to Lyon last month!")
    add_message(chat, "Congratulations on the move.", role="assistant")
    fake_anthropic.tool_use(
        "record_facts",
        record(
            {"content": "Alice lives in Lyon", "kind": "self", "subjects": [], "replaces": "K1"}
        ),
    )
    backup_conversation(chat)
    database.run_ready_tasks()

    assert [f["content"] for f in facts_of(alice)] == ["Alice lives in Lyon"]
    # No MCP tool returns a record's history yet: read it where the server keeps it.
    with sqlite3.connect(memory_server.index_dir / "memories.sqlite3") as db:
        (history,) = db.execute(
            "SELECT history FROM memories WHERE content = 'Alice lives in Lyon'"
        ).fetchone()
    assert [(h["id"], h["content"]) for h in json.loads(history)] == [
        (old["id"], "Alice lives in Paris")
    ]


def test_offline_the_rules_read_the_exchange_and_the_transcript_is_kept(
    alice, memory_server, settings
):
    settings.ANTHROPIC_API_KEY = ""
    chat = make_conversation(alice, "Offline", "I'm a nurse in Nantes.", "Sweet!")

    backup_conversation(chat)
    database.run_ready_tasks()

    [learnt] = facts_of(alice)
    assert (
        learnt["content"] == "The user is a nurse in Nantes."
        and "rules" in learnt["metadata"]["tags"]
    )
    kept = services.get_recent_memories(user=alice, kinds=["conversation"])["memories"]
    assert "nurse in Nantes" in kept[0]["content"]
    assert SavedExchange.objects.get(conversation=chat).facts == 1


def test_it_reads_nothing_when_extraction_is_off(alice, memory_server, settings):
    settings.ANTHROPIC_API_KEY = ""
    settings.MEMORY_EXTRACTION = False
    chat = make_conversation(alice, "Offline", "I'm a nurse in Nantes.", "Sweet!")

    backup_conversation(chat)
    database.run_ready_tasks()

    assert facts_of(alice) == []
    assert SavedExchange.objects.get(conversation=chat).extracted_at is None


def test_the_questions_a_fact_answers_are_stored_as_its_concepts(
    alice, memory_server, fake_anthropic
):
    chat = make_conversation(alice, "Dakar", "I grew up in Dakar, by the way.", "Lovely city!")
    grew_up = {"content": "Alice grew up in Dakar", "kind": "self", "subjects": ["dakar"]}
    grew_up["questions"] = ["Where did Alice spend her childhood?"]
    fake_anthropic.tool_use("record_facts", record(grew_up))

    backup_conversation(chat)
    database.run_ready_tasks()

    sent = next(r for r in fake_anthropic.requests if "tool_choice" in r)
    item = sent["tools"][0]["input_schema"]["properties"]["facts"]["items"]
    assert "questions" in item["properties"]
    [stored] = facts_of(alice)
    concepts = stored["metadata"]["concepts"]
    # The model's question first, then the rules' words for the slot.
    assert concepts[0] == "Where did Alice spend her childhood?" and "childhood" in concepts
    found = services.search_memories(user=alice, query="Where was I raised as a kid?")
    assert found["results"][0]["content"] == "Alice grew up in Dakar"
