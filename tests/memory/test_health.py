"""Memory health on /memory (memory/learning/health.py, memory/web/health.py) against the real
memory server: each group found, previewed, and cleaned of exactly what was previewed,
in the user's own namespace only, with Undo."""

from __future__ import annotations

import re
import sqlite3
from contextlib import closing
from datetime import date, timedelta
from pathlib import Path

import pytest
from django.test import Client
from django.utils import timezone, translation

from ikario_rag import secrets
from memory.client import services
from memory.learning import health
from memory.models import MemoryRetrieval
from tests.fixtures.builders import make_conversation

pytestmark = pytest.mark.django_db(transaction=True)


# --- the rules, without a server ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "found"),
    [
        ("my key is sk-ant-api03-AbCdEfGhIjKlMnOpQrSt", "key"),
        ("AWS: AKIAIOSFODNN7EXAMPLE", "key"),
        ("The wifi password is tr0ub4dor&3", "password"),
        ("Mon mot de passe est Soleil2024!", "password"),
        ("Card 4111 1111 1111 1111 exp 12/27", "card number"),
        ("IBAN FR76 3000 6000 0112 3456 7890 189", "bank account"),
        ("-----BEGIN OPENSSH PRIVATE KEY-----", "private key"),
        ("Our Wi-Fi password: Bl4ckbird!", "password"),
        ("The PIN of my Visa is 4921", "pin"),
        ("Door code 4821B, second floor", "code"),
        ("Le digicode c'est 1984A", "code"),
        ("Order number 4111 1111 1111 1112", None),  # fails the card check
        ("Call me on 06 12 34 56 78", None),
        ("I forgot my password again", None),
        ("The user lives in Lyon.", None),
    ],
)
def test_it_tells_likely_secrets(content, found):
    assert health.secret_in(content) == found


def _record(memory_id, content, *, kind="fact", days_ago=0, created=None, **meta):
    created = created or timezone.now() - timedelta(days=days_ago)
    return {
        "id": memory_id,
        "content": content,
        "metadata": {"kind": kind, "created_at": created.isoformat(), **meta},
        "history": [],
    }


def test_it_finds_near_duplicates_but_not_facts_that_differ():
    records = [
        _record("a", "The user is a night nurse in Nantes."),
        _record("b", "The user is a nurse in Nantes."),
        _record("c", "The user's sister lives in Porto."),
        _record("d", "The user's sister lives in Lisbon."),
        _record("e", "User: I live in Lyon. Assistant: Nice.", kind="conversation"),
    ]
    found = health.duplicates(records)
    assert [(f.id, f.why) for f in found] == [("b", "The user is a night nurse in Nantes.")]


def test_it_finds_passing_states_whose_time_is_over():
    today = timezone.localdate()
    records = [
        _record("over", "The user is in Lyon until Friday.", days_ago=20),
        _record("now", "The user is in Lyon until Friday.", days_ago=0),
        _record("old", "The user is sick at the moment.", days_ago=40, category="contextuelle"),
        _record("lasting", "The user lives in Lyon.", days_ago=400, category="fondatrice"),
    ]
    assert [f.id for f in health.stale(records, today)] == ["over", "old"]


# --- on the page, with the memory server --------------------------------------------------------


def _restore(server, user, *records):
    """Put records in the user's memory as they are written here, secrets included: the
    server stores a placeholder for a secret, so a secret is written back into the index
    file as a version from before that rule stored it."""
    services.restore_memories(user=user, memories=list(records))
    older = [(r["content"], r["id"]) for r in records if secrets.find(r["content"])]
    if older:
        index = Path(server.index_dir) / "memories.sqlite3"
        with closing(sqlite3.connect(index)) as db, db:
            db.executemany("UPDATE memories SET content = ? WHERE id = ?", older)


def _ids(user) -> set[str]:
    return {m["id"] for m in services.list_memories(user=user, limit=100)["memories"]}


def _previewed(page: str, group: str) -> list[str]:
    block = page.split(f'id="memory-health-{group}"', 1)[1].split("</form>", 1)[0]
    return re.findall(r'name="ids" value="([^"]+)"', block)


def test_the_page_offers_the_check_and_each_group_cleans_only_what_it_showed(
    alice, alice_client, memory_server
):
    chat = make_conversation(alice, "Trip")
    _restore(
        memory_server,
        alice,
        _record("dup-new", "The user's daughter Zoé loves horses and ponies."),
        _record("dup-old", "The user's daughter Zoé loves horses.", days_ago=3),
        _record("secret", "The wifi password is tr0ub4dor&3", kind="thought"),
        _record("stale", "The user is in Lyon until Friday.", days_ago=20),
        _record("healthy", "The user's sister lives in Porto."),
        _record(
            "transcript",
            "User: I'm a nurse in Nantes. Assistant: A demanding job!",
            kind="conversation",
            source=f"conversation:{chat.pk}:1",
        ),
        _record("nurse", "The user is a nurse in Nantes."),
    )
    assert 'id="memory-health-check"' in alice_client.get("/memory/").content.decode()

    page = alice_client.get("/memory/health").content.decode()

    assert _previewed(page, "duplicates") == ["dup-old"]
    assert _previewed(page, "secrets") == ["secret"]
    assert _previewed(page, "stale") == ["stale"]
    assert _previewed(page, "covered") == ["transcript"]
    assert "healthy" not in page
    response = alice_client.post(
        "/memory/health/clean", {"group": "duplicates", "ids": ["dup-old"]}
    )
    assert response.status_code == 200
    assert "1 memory cleaned." in response.content.decode()
    assert _ids(alice) == {"dup-new", "secret", "stale", "healthy", "transcript", "nurse"}

    # The transcript goes, its fact stays; Undo puts it back as it was.
    alice_client.post("/memory/health/clean", {"group": "covered", "ids": ["transcript"]})
    assert "transcript" not in _ids(alice) and "nurse" in _ids(alice)
    undone = alice_client.post("/memory/health/undo", {"ids": ["transcript"]})
    assert "1 memory put back." in undone.content.decode()
    assert "transcript" in _ids(alice)


def test_a_clean_of_what_the_group_no_longer_holds_deletes_nothing(
    alice, alice_client, memory_server
):
    _restore(
        memory_server,
        alice,
        _record("secret", "My pin code is 4921-7730", kind="thought"),
        _record("healthy", "The user's sister lives in Porto."),
    )

    response = alice_client.post(
        "/memory/health/clean", {"group": "secrets", "ids": ["secret", "healthy"]}
    )

    assert response.status_code == 200
    assert 'id="memory-health-changed"' in response.content.decode()
    assert _ids(alice) == {"secret", "healthy"}


def test_another_users_memories_are_refused(alice, bob, alice_client, bob_client, memory_server):
    _restore(
        memory_server,
        bob,
        _record("bobs-secret", "The wifi password is tr0ub4dor&3", kind="thought"),
    )
    _restore(
        memory_server, alice, _record("alices", "The wifi password is hunter22", kind="thought")
    )

    response = alice_client.post(
        "/memory/health/clean", {"group": "secrets", "ids": ["bobs-secret"]}
    )
    assert response.status_code == 403
    mixed = alice_client.post(
        "/memory/health/clean", {"group": "secrets", "ids": ["alices", "bobs-secret"]}
    )
    assert mixed.status_code == 403
    assert _ids(bob) == {"bobs-secret"} and _ids(alice) == {"alices"}
    # Nor can alice put back what bob cleaned.
    bob_client.post("/memory/health/clean", {"group": "secrets", "ids": ["bobs-secret"]})
    alice_client.post("/memory/health/undo", {"ids": ["bobs-secret"]})
    assert _ids(bob) == set() and _ids(alice) == {"alices"}
    bob_page = bob_client.get("/memory/health").content.decode()
    assert "hunter22" not in bob_page


def test_a_fact_restating_what_was_recalled_in_its_conversation_is_an_echo(
    alice, alice_client, memory_server
):
    chat = make_conversation(alice, "Dinner", "What should I cook?", "Something vegetarian.")
    _restore(memory_server, alice, _record("recalled", "The user is vegetarian.", days_ago=5))
    MemoryRetrieval.objects.create(
        user=alice, conversation=chat, query="cook", memories=[{"id": "recalled", "score": 0.9}]
    )
    _restore(
        memory_server,
        alice,
        _record("echo", "The user is a vegetarian.", source=f"conversation:{chat.pk}:2"),
        _record("elsewhere", "The user is vegetarian!", source="conversation:999999:1"),
    )

    page = alice_client.get("/memory/health").content.decode()

    assert _previewed(page, "echoes") == ["echo"]
    alice_client.post("/memory/health/clean", {"group": "echoes", "ids": ["echo"]})
    assert "echo" not in _ids(alice) and "recalled" in _ids(alice)


def test_a_memory_recalled_then_deleted_never_stops_the_check(alice, alice_client, memory_server):
    chat = make_conversation(alice, "Dinner", "What should I cook?", "Something vegetarian.")
    _restore(
        memory_server,
        alice,
        _record("gone", "The user is vegetarian.", days_ago=5),
        _record("dup1", "The user is a nurse in Nantes."),
        _record("dup2", "The user is a night nurse in Nantes."),
    )
    MemoryRetrieval.objects.create(
        user=alice, conversation=chat, query="cook", memories=[{"id": "gone", "score": 0.9}]
    )
    services.delete_memory(user=alice, memory_id="gone")

    page = alice_client.get("/memory/health").content.decode()

    assert "does not exist" not in page  # the check ran: its groups are shown
    assert _previewed(page, "duplicates") == ["dup1"]


def test_bad_requests_and_anonymous_users(alice_client, memory_server):
    clean = "/memory/health/clean"
    assert alice_client.post(clean, {"group": "x", "ids": ["a"]}).status_code == 400
    assert alice_client.post(clean, {"group": "secrets"}).status_code == 400
    assert alice_client.get(clean).status_code == 405
    anonymous = Client()
    assert anonymous.get("/memory/health").status_code == 302
    assert anonymous.post(clean, {"group": "secrets", "ids": ["a"]}).status_code == 302


def test_what_a_memory_says_is_escaped(alice, alice_client, memory_server):
    _restore(
        memory_server,
        alice,
        _record("x", "<script>alert(1)</script> password: hunter22", kind="thought"),
    )
    page = alice_client.get("/memory/health").content.decode()
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;" in page


def test_the_stale_rule_reads_ends_from_the_day_stored():
    stored = date(2026, 11, 2)  # a Monday
    records = [_record("x", "The user is off work for two weeks.")]
    records[0]["metadata"]["created_at"] = f"{stored.isoformat()}T09:00:00+00:00"
    assert health.stale(records, stored + timedelta(days=13)) == []
    assert [f.id for f in health.stale(records, stored + timedelta(days=14))] == ["x"]


def test_a_clean_without_the_csrf_token_is_refused(alice, memory_server):
    _restore(
        memory_server, alice, _record("secret", "The wifi password is tr0ub4dor&3", kind="thought")
    )
    guarded = Client(enforce_csrf_checks=True)
    guarded.force_login(alice)

    response = guarded.post("/memory/health/clean", {"group": "secrets", "ids": ["secret"]})

    assert response.status_code == 403
    assert _ids(alice) == {"secret"}


@pytest.mark.parametrize(("lang", "month"), [("en", "Oct"), ("fr", "oct.")])
def test_the_stale_states_say_when_stored_as_the_rest_of_the_app_writes_dates(
    alice, alice_client, memory_server, lang, month
):
    stored = timezone.now().replace(year=timezone.now().year - 1, month=10, day=20)
    _restore(
        memory_server, alice, _record("stale", "The user is in Lyon until Friday.", created=stored)
    )
    with translation.override(lang):  # the request's language ends with it, not the test's
        page = alice_client.get("/memory/health", HTTP_ACCEPT_LANGUAGE=lang).content.decode()
    assert _previewed(page, "stale") == ["stale"]
    assert f"20 {month} {stored.year}" in page and stored.date().isoformat() not in page
