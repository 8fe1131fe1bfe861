"""The review inbox: with "Ask me before keeping what I say" on, what learning would keep waits
on /memory with the message it came from, is never recalled, and is kept, edited or rejected
in one click; a rejected statement is never proposed again, however it comes back. With the
switch off, what was learnt today is listed with the same actions. Through the real
extraction (the real SDK against the fake Messages API) and the real ikario_rag."""

from __future__ import annotations

import pytest

from memory.client import services
from memory.learning import extraction
from memory.models import MemorySettings, ReviewedFact
from tests.fixtures.builders import make_conversation

pytestmark = pytest.mark.django_db(transaction=True)

METRONOMES = "Alice hates metronomes"


def facts_of(user) -> list[str]:
    kinds = ["fact", "preference", "goal", "self"]
    found = services.get_recent_memories(user=user, limit=100, kinds=kinds)["memories"]
    return [m["content"] for m in found]


def learn(fake_anthropic, user, said, *facts):
    chat = make_conversation(user, "Music", said, "Noted!")
    fake_anthropic.tool_use(
        "record_facts",
        {"facts": [{"content": f, "kind": "preference", "subjects": ["music"]} for f in facts]},
    )
    extraction.learn(chat)
    return chat


@pytest.fixture
def asking(alice, memory_server):
    MemorySettings.objects.update_or_create(user=alice, defaults={"review_learning": True})
    return alice


def test_it_asks_nothing_by_default_and_one_switch_turns_it_on(alice, alice_client):
    assert not MemorySettings.for_user(alice).review_learning
    page = alice_client.get("/memory/settings/").content.decode()
    assert "Ask me before keeping what I say" in page
    alice_client.post(
        "/memory/settings/",
        {"auto_retrieve": "on", "max_results": 4, "min_score": 0.5, "review_learning": "on"},
    )
    assert MemorySettings.for_user(alice).review_learning


def test_what_waits_is_shown_with_its_message_and_never_recalled(
    fake_anthropic, asking, alice_client
):
    learn(fake_anthropic, asking, "I <b>hate</b> metronomes, honestly.", METRONOMES)

    assert facts_of(asking) == []
    found = services.search_memories(user=asking, query="metronomes", n_results=5)
    assert found.get("results") == []
    html = alice_client.get("/memory/inbox").content.decode()
    assert "Waiting for your word: 1 fact" in html and METRONOMES in html
    assert "I &lt;b&gt;hate&lt;/b&gt; metronomes, honestly." in html


def test_it_shows_where_a_fact_came_from_without_a_secret_in_it(fake_anthropic, asking):
    learn(fake_anthropic, asking, "I hate metronomes. The wifi password is tr0ub4dor&3", METRONOMES)

    said = ReviewedFact.objects.get(user=asking).said
    assert "tr0ub4dor" not in said and "[a password]" in said


def test_it_keeps_a_waiting_fact_in_one_click(fake_anthropic, asking, alice_client):
    learn(fake_anthropic, asking, "I hate metronomes.", METRONOMES)
    fact = ReviewedFact.objects.get(user=asking)

    response = alice_client.post(f"/memory/inbox/{fact.pk}/accept")

    assert "memory-list-changed" in response.headers["HX-Trigger"]
    assert "Kept: “Alice hates metronomes”" in response.content.decode()
    assert facts_of(asking) == [METRONOMES]
    assert "Waiting for your word: 0 facts" in alice_client.get("/memory/inbox").content.decode()


def test_it_keeps_a_fact_in_the_users_wording(fake_anthropic, asking, alice_client):
    learn(fake_anthropic, asking, "I hate metronomes.", METRONOMES)
    fact = ReviewedFact.objects.get(user=asking)
    url = f"/memory/inbox/{fact.pk}/edit"

    assert 'name="content"' in alice_client.get(url).content.decode()
    empty = alice_client.post(url, {"content": ""})
    assert empty.status_code == 400 and "Memory: This field is required." in empty.content.decode()
    alice_client.post(url, {"content": "Alice hates loud metronomes"})

    assert facts_of(asking) == ["Alice hates loud metronomes"]


def test_a_rejected_fact_is_never_proposed_again(fake_anthropic, asking, alice_client):
    learn(fake_anthropic, asking, "I hate metronomes.", METRONOMES)
    fact = ReviewedFact.objects.get(user=asking)

    html = alice_client.post(f"/memory/inbox/{fact.pk}/reject").content.decode()
    assert "never proposed again" in html
    # A later chat says it again, in other words.
    learn(fake_anthropic, asking, "Metronomes, ugh.", "Alice really hates metronomes")

    assert facts_of(asking) == []
    assert not ReviewedFact.objects.filter(state="waiting").exists()
    # Switched off, it is not kept silently either.
    MemorySettings.objects.filter(user=asking).update(review_learning=False)
    learn(fake_anthropic, asking, "Still no metronome.", "The user hates metronomes")
    assert facts_of(asking) == []


def test_switched_off_it_lists_what_was_learnt_today_with_the_same_actions(
    fake_anthropic, alice, memory_server, alice_client
):
    learn(fake_anthropic, alice, "I hate metronomes and I play the cello.", METRONOMES)
    learn(fake_anthropic, alice, "I play the cello.", "Alice plays the cello")
    assert sorted(facts_of(alice)) == ["Alice hates metronomes", "Alice plays the cello"]

    html = alice_client.get("/memory/inbox").content.decode()
    assert "Learnt today: 2 facts" in html
    wrong = ReviewedFact.objects.get(content=METRONOMES)
    right = ReviewedFact.objects.get(content="Alice plays the cello")
    alice_client.post(f"/memory/inbox/{right.pk}/accept")
    html = alice_client.post(f"/memory/inbox/{wrong.pk}/reject").content.decode()

    assert "Learnt today: 0 facts" in html
    assert facts_of(alice) == ["Alice plays the cello"]
    learn(fake_anthropic, alice, "Metronomes!", "Alice hates metronomes")
    assert facts_of(alice) == ["Alice plays the cello"]


def test_it_keeps_each_users_inbox_to_themselves(fake_anthropic, asking, bob_client):
    learn(fake_anthropic, asking, "I hate metronomes.", METRONOMES)
    fact = ReviewedFact.objects.get(user=asking)
    for action in ("accept", "reject", "edit"):
        assert bob_client.post(f"/memory/inbox/{fact.pk}/{action}").status_code == 404
    assert METRONOMES not in bob_client.get("/memory/inbox").content.decode()
    assert ReviewedFact.objects.get(pk=fact.pk).state == "waiting"
