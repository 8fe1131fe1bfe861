"""manage.py memory_search, memory_backfill and memory_stats, through the real ikario_rag."""

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from chat import offline
from chat.models import Conversation
from memory.client import services
from memory.learning.backup import backup_conversation
from memory.models import MemoryRetrieval
from tests.fixtures.builders import add_message, make_conversation
from tests.fixtures.memory_server import wait_indexed


def _run(*args):
    out, err = StringIO(), StringIO()
    call_command(*args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_it_searches_one_users_memories(memory_server, alice, bob):
    services.add_thought(
        user=alice, content="Alice collects vinyl records of 70s jazz", context={"tags": ["jazz"]}
    )

    out, _ = _run("memory_search", "jazz records", "--user", "alice")
    as_json, _ = _run("memory_search", "jazz records", "--user", str(alice.pk), "--json")
    bobs, _ = _run("memory_search", "jazz records", "--user", "bob")

    assert "Alice collects vinyl records of 70s jazz" in out
    assert "#jazz" in out
    assert "1 result(s)" in out
    assert (
        json.loads(as_json)["results"][0]["content"] == "Alice collects vinyl records of 70s jazz"
    )
    assert bobs.strip() == "No memories found."


def test_it_filters_the_command_search_by_category(memory_server, alice):
    services.add_thought(
        user=alice, content="Alice values curiosity", context={"category": "fondatrice"}
    )
    services.add_thought(user=alice, content="Alice was curious about tides today")

    out, _ = _run(
        "memory_search", "curiosity", "--user", "alice", "--category", "fondatrice", "--n", "5"
    )

    assert "Alice values curiosity" in out
    assert "tides" not in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["memory_search", "x", "--user", "nobody"], "No user 'nobody'"),
        (["memory_search", "x", "--user", "alice", "--n", "0"], "n_results"),
        (["memory_search", "x", "--user", "alice", "--category", "misc"], "filter_category"),
        (["memory_search", " ", "--user", "alice"], "query"),
        (["memory_backfill", "--since", "last week"], "--since"),
    ],
)
def test_it_explains_bad_arguments(alice, args, message):
    with pytest.raises(CommandError, match=message):
        _run(*args)


def test_it_backfills_every_conversation_once(memory_server, alice, bob):
    first = make_conversation(
        alice, "Sourdough", "How do I feed a sourdough starter?", "Daily, 1:1:1."
    )
    second = make_conversation(bob, "Bike", "My bike chain squeaks", "Oil it and wipe it.")
    make_conversation(alice, "Empty chat")  # nothing to back up
    done = make_conversation(alice, "Old", "Already saved", "Yes")
    backup_conversation(done)

    out, err = _run("memory_backfill")

    assert "Backed up 2 conversation(s) (2 new exchange(s)); 0 failed." in out
    assert "Backing up" in err and "2/2" in err  # the progress bar
    first.refresh_from_db()
    second.refresh_from_db()
    assert first.has_memory_backup and second.has_memory_backup
    wait_indexed()  # both sides of the search see every exchange: the ranking is settled
    alices = services.search_memories(user=alice, query="sourdough starter")["results"]
    assert "How do I feed a sourdough starter?" in alices[0]["content"]
    assert alices[0]["metadata"]["kind"] == "conversation"
    answer = first.messages.get(role="assistant")
    assert alices[0]["metadata"]["source"] == f"conversation:{first.pk}:{answer.pk}"
    # Bob's conversation went to Bob's memory, not Alice's.
    assert all(
        "bike" not in r["content"]
        for r in services.search_memories(user=alice, query="bike chain")["results"]
    )
    assert (
        "My bike chain squeaks"
        in services.search_memories(user=bob, query="bike chain")["results"][0]["content"]
    )
    # Idempotent: nothing left the second time.
    again, _ = _run("memory_backfill")
    assert "Backed up 0 conversation(s)" in again
    assert services.memory_stats(user=alice)["total_memories"] == 2


def test_it_backfills_what_the_user_said_never_what_ikario_echoed(memory_server, alice):
    allergy = services.add_thought(user=alice, content="Alice is allergic to peanuts")["id"]
    # Without a key: the offline responder says the message and the recalled memory back.
    hike = make_conversation(alice, "Hike", "What snack should I pack for my hike?")
    system = "- [2026-11-02] Alice is allergic to peanuts"
    said = [{"role": "user", "content": "What snack should I pack for my hike?"}]
    boilerplate = offline.plan_reply(system=system, messages=said, tools=None)["text"]
    add_message(hike, boilerplate, role="assistant", model=offline.LABEL)
    # With Claude: its own words are kept, its line restating the recalled memory is not.
    trail = make_conversation(alice, "Trail", "Which trail for Sunday?")
    answer = "Take the ridge trail above Annecy.\n- Alice is allergic to peanuts\nPack water."
    add_message(trail, answer, role="assistant", model="claude-sonnet-4-5")
    asked = trail.messages.get(role="user")
    MemoryRetrieval.objects.create(
        user=alice, conversation=trail, message=asked, query="trail", memories=[{"id": allergy}]
    )

    out, _ = _run("memory_backfill")

    assert "Backed up 2 conversation(s) (2 new exchange(s))" in out
    kept = sorted(
        m["content"]
        for m in services.list_memories(user=alice, limit=10)["memories"]
        if m["metadata"]["kind"] == "conversation"
    )
    assert kept == [
        "User: What snack should I pack for my hike?",
        "User: Which trail for Sunday? Assistant: Take the ridge trail above Annecy. Pack water.",
    ]


def test_it_dry_runs_a_backfill_for_one_user_since_a_date(memory_server, alice, bob):
    old = make_conversation(alice, "Old chat", "old question", "old answer")
    Conversation.objects.filter(pk=old.pk).update(updated_at="2020-01-01T00:00:00Z")
    recent = make_conversation(alice, "Recent chat", "new question", "new answer")
    make_conversation(bob, "Bob's chat", "bob question", "bob answer")

    out, _ = _run("memory_backfill", "--user", "alice", "--since", "2024-01-01", "--dry-run")

    assert f"would back up #{recent.pk} 'Recent chat'" in out
    assert "Old chat" not in out and "Bob's chat" not in out
    assert "1 conversation(s) to back up (dry run)." in out
    assert not Conversation.objects.filter(has_memory_backup=True).exists()
    assert services.memory_stats(user=alice)["total_memories"] == 0


def test_it_stops_a_backfill_cleanly_when_the_server_is_down(alice, no_memory_server):
    conversation = make_conversation(alice, "Chat", "question", "answer")

    with pytest.raises(CommandError, match="stopped after 0 backup") as stopped:
        _run("memory_backfill")

    assert "`make run` does" in str(stopped.value)  # how to start a memory server

    conversation.refresh_from_db()
    assert not conversation.has_memory_backup


def test_it_prints_stats_for_everyone_and_for_one_user(memory_server, alice, bob):
    services.add_thought(user=alice, content="Alice likes figs", context={"category": "thematique"})
    services.add_thought(user=bob, content="Bob likes dates")
    Conversation.objects.create(user=alice, title="Saved", has_memory_backup=True)

    everyone, _ = _run("memory_stats", "--json")
    alices, _ = _run("memory_stats", "--user", "alice")
    bobs = json.loads(_run("memory_stats", "--user", "bob", "--json")[0])

    assert json.loads(everyone)["status"] == "connected"
    assert json.loads(everyone)["total_memories"] >= 2
    assert "status: connected" in alices
    assert "total_memories: 1" in alices
    assert "{'thematique': 1}" in alices
    assert "conversations backed up: 1/1" in alices
    assert bobs["total_memories"] == 1
    assert bobs["backed_up_conversations"] == 0


def test_it_says_disconnected_in_stats_when_the_server_is_down(db, no_memory_server):
    out = StringIO()

    with pytest.raises(CommandError, match="memory unavailable: no memory server answers at"):
        call_command("memory_stats", stdout=out)

    assert "status: disconnected" in out.getvalue()
    assert f"no memory server answers at {no_memory_server}" in out.getvalue()
    assert "`make run` does" in out.getvalue()  # how to start one
