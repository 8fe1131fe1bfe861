"""Secrets are never stored, whichever way a memory is written (ikario_rag/secrets.py at the
memory server's one write boundary), and the user is told what was kept out; look-alikes
that are not secrets are kept word for word. Through the real memory server."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest
from asgiref.sync import async_to_sync
from django.core.management import call_command

from chat.models import ConversationSummary, Message
from memory.client import services
from memory.learning import backup, health, summaries
from memory.models import SavedExchange
from memory.notes import sync
from memory.recall import tools
from memory.worker import database
from tests.fixtures.builders import make_conversation

pytestmark = pytest.mark.django_db(transaction=True)

HTMX = {"HTTP_HX_REQUEST": "true"}
SECRETS = {
    "password": "Tulip$2024",
    "aws": "AKIAIOSFODNN7EXAMPLE",
    "card": "4111 1111 1111 1111",
    "pin": "7391",
    "wifi": "sunflower-meadow-77",
}
SAID = (
    f"I'm a nurse and my password is {SECRETS['password']}. My AWS key id is "
    f"{SECRETS['aws']}, my card number {SECRETS['card']} and my PIN is {SECRETS['pin']}."
)
LOOK_ALIKES = (
    "Order 112-4839201-5582013 shipped; version 2.14.3, commit "
    "9fceb02d0ae598e95dc970b74767f19372d61af8, ISBN 978-3-16-148410-0, €1,299.99 on 2025-03-14."
)


def _stored(user) -> str:
    """Everything the user's memory holds (texts, labels, sources, histories) as one text."""
    listed = services.list_memories(user=user, limit=100)["memories"]
    full = services.get_memories(user=user, ids=[m["id"] for m in listed], with_history=True)
    return json.dumps(full, ensure_ascii=False)


def _assert_no_secret(user) -> str:
    stored = _stored(user)
    for name, secret in SECRETS.items():
        assert secret not in stored, name
        assert secret.replace(" ", "") not in stored, name
    return stored


def test_the_api_stores_placeholders_and_says_what_was_kept_out(memory_server, alice, alice_client):
    response = alice_client.post(
        "/api/memory/add",
        json.dumps({"content": SAID, "context": {"tags": ["tulip$2024", "nurse"]}}),
        content_type="application/json",
    )

    assert response.status_code == 201
    assert response.json()["kept_out"] == ["password", "key", "card number", "pin"]
    stored = _assert_no_secret(alice)
    assert "my password is [a password]" in stored and "I'm a nurse" in stored
    assert '"nurse"' in stored and "tulip" not in stored.lower()  # the secret is no tag


def test_a_look_alike_is_kept_word_for_word(memory_server, alice):
    result = services.add_thought(user=alice, content=LOOK_ALIKES)

    assert "kept_out" not in result
    assert services.list_memories(user=alice)["memories"][0]["content"] == LOOK_ALIKES


def test_a_saved_transcript_keeps_no_secret_nor_a_tag_of_one(memory_server, alice):
    chat = make_conversation(alice, "Work", SAID, "Noted, take care with those.")

    backup.backup_conversation(chat)

    stored = _assert_no_secret(alice)
    assert "[a card number]" in stored and "[a PIN]" in stored


def test_the_save_tool_stores_a_placeholder_and_the_chat_says_so(memory_server, alice):
    chat = make_conversation(alice, "Home")
    content = f"Remember that my wifi password is {SECRETS['wifi']}"

    outcome = async_to_sync(tools.run_tool)(
        alice, chat, "save_memory", {"content": content, "category": "thematique"}
    )

    assert json.loads(outcome.content)["kept_out"] == ["password"]
    assert "Kept out: a password" in outcome.summary
    assert "[a password]" in _assert_no_secret(alice)


def test_the_add_form_tells_the_user(memory_server, alice, alice_client):
    page = alice_client.post(
        "/memory/facts/add", {"kind": "fact", "content": f"Door code is {SECRETS['pin']}"}, **HTMX
    ).content.decode()

    assert "Kept out: a code" in page
    _assert_no_secret(alice)


def test_an_edit_an_import_and_a_history_keep_no_secret(memory_server, alice):
    added = services.add_thought(user=alice, content="The user likes tulips.")
    services.update_memory(user=alice, memory_id=added["id"], content=SAID, tags=[SECRETS["aws"]])
    services.restore_memories(
        user=alice,
        memories=[
            {
                "id": "imported",
                "content": f"Le mot de passe du wifi est {SECRETS['wifi']}",
                "metadata": {"tags": [SECRETS["wifi"]], "source": f"pin {SECRETS['pin']}"},
                "history": [{"content": f"my PIN: {SECRETS['pin']}", "tags": [SECRETS["card"]]}],
            }
        ],
    )

    stored = _assert_no_secret(alice)
    assert "Le mot de passe du wifi est [un mot de passe]" in stored


def test_notes_and_summaries_keep_no_secret(memory_server, alice):
    parsed = sync.parse(f"# Home #ikario\nThe alarm code is {SECRETS['pin']}.\n", "ikario")
    services.add_thoughts(user=alice, items=sync.memory_items("home.md", parsed, "ikario", 1))
    chat = make_conversation(alice, "Trip", "Hello", "Hi", pinned=True)
    first, last = Message.objects.filter(conversation=chat).values_list("id", flat=True)
    ConversationSummary.objects.create(
        conversation=chat,
        level=1,
        first_message_id=first,
        last_message_id=last,
        source_chars=10,
        text=f"The user gave their card {SECRETS['card']} to book.",
        method="llm",
    )

    assert summaries.index_summaries.call(chat.pk) == 1
    _assert_no_secret(alice)


def test_a_summary_longer_than_a_memory_is_kept_in_parts(memory_server, alice):
    chat = make_conversation(alice, "Long", "Hello", "Hi", pinned=True)
    first, last = Message.objects.filter(conversation=chat).values_list("id", flat=True)
    text = "The user planned the trip day by day. " * 700  # ~26,600 characters
    ConversationSummary.objects.create(
        conversation=chat,
        level=1,
        first_message_id=first,
        last_message_id=last,
        source_chars=10,
        text=text,
        method="llm",
    )

    assert summaries.index_summaries.call(chat.pk) == 2
    found = services.list_memories(user=alice, kinds=["summary"])["memories"]
    assert sorted(m["content"][:10] for m in found) == ["[part 1/2]", "[part 2/2]"]


def test_what_health_cleaned_is_never_saved_again(memory_server, alice, alice_client, tmp_path):
    chat = make_conversation(alice, "Old", "My PIN is 7391.", "Noted.")
    answer = Message.objects.get(conversation=chat, role="assistant")
    backup.backup_conversation(chat)
    saved = SavedExchange.objects.get(answer=answer)
    # An older version kept the PIN, and recorded no exchange: written into the index file.
    index = Path(memory_server.index_dir) / "memories.sqlite3"
    with closing(sqlite3.connect(index)) as db, db:
        db.execute(
            "UPDATE memories SET content = ? WHERE id = ?",
            ("User: My PIN is 7391. Assistant: Noted.", saved.memory_ids[0]),
        )
    saved.delete()
    assert [f.id for f in health.review(alice).groups["secrets"]] == saved.memory_ids

    alice_client.post("/memory/health/clean", {"group": "secrets", "ids": saved.memory_ids})
    call_command("memory_backfill", stdout=(tmp_path / "out").open("w"))

    assert services.list_memories(user=alice)["memories"] == []


# --- what is learnt -------------------------------------------------------------------------


def _facts(user) -> list[str]:
    kinds = ["fact", "preference", "goal", "self"]
    found = services.get_recent_memories(user=user, limit=100, kinds=kinds)["memories"]
    return sorted(f["content"] for f in found)


def test_the_model_s_facts_are_checked_before_they_are_stored(alice, memory_server, fake_anthropic):
    chat = make_conversation(
        alice,
        "Family",
        "My sister is pregnant but hasn't told anyone, my colleague has cancer, and my wifi "
        f"password is {SECRETS['wifi']}. I'm a nurse.",
        "Thank you for trusting me with that.",
    )
    fake_anthropic.tool_use(
        "record_facts",
        {
            "facts": [
                {"content": "The user's sister is pregnant", "kind": "fact", "subjects": []},
                {"content": "The user's colleague has cancer", "kind": "fact", "subjects": []},
                {
                    "content": f"The user's wifi password is {SECRETS['wifi']}",
                    "kind": "fact",
                    "subjects": [],
                },
                {"content": "The user is a nurse", "kind": "self", "subjects": ["nurse"]},
            ]
        },
    )

    backup.backup_conversation(chat)
    database.run_ready_tasks()

    assert _facts(alice) == ["The user is a nurse"]
    _assert_no_secret(alice)


def test_the_model_s_fact_about_someone_else_is_kept_when_the_user_asks(
    alice, memory_server, fake_anthropic
):
    chat = make_conversation(
        alice, "Family", "Remember that my sister is pregnant, I want to buy her a gift.", "Sure."
    )
    fake_anthropic.tool_use(
        "record_facts",
        {"facts": [{"content": "The user's sister is pregnant", "kind": "fact", "subjects": []}]},
    )

    backup.backup_conversation(chat)
    database.run_ready_tasks()

    assert _facts(alice) == ["The user's sister is pregnant"]


def test_the_rules_learn_the_user_s_part_and_nothing_of_a_secret_or_of_others_health(
    alice, memory_server, settings
):
    settings.ANTHROPIC_API_KEY = ""
    chat = make_conversation(
        alice,
        "Offline",
        f"I'm a nurse and my password is {SECRETS['password']}. My door code is "
        f"{SECRETS['pin']} and I live in Lyon. My sister is pregnant but hasn't told anyone. "
        "Ma collègue a un cancer.",
        "Noted.",
    )

    backup.backup_conversation(chat)
    database.run_ready_tasks()

    assert _facts(alice) == ["The user is a nurse.", "The user lives in Lyon."]
    _assert_no_secret(alice)


def test_an_edit_of_what_an_older_version_kept_carries_no_secret_into_history(memory_server, alice):
    added = services.add_thought(user=alice, content="The user's bank is in Lyon.")
    index = Path(memory_server.index_dir) / "memories.sqlite3"
    with closing(sqlite3.connect(index)) as db, db:  # as a version before the rule kept it
        db.execute(
            "UPDATE memories SET content = ? WHERE id = ?",
            (f"The user's bank PIN is {SECRETS['pin']}.", added["id"]),
        )

    services.update_memory(user=alice, memory_id=added["id"], content="The bank is in Lyon.")

    assert "[a PIN]" in _assert_no_secret(alice)


def test_bidi_controls_go_and_look_alike_brackets_are_stored_plain(memory_server, alice):
    services.add_thought(
        user=alice,
        content="Invoice\u202egpj.exe \uff1cprivate\uff1ehidden\uff1c/private\uff1e"
        " \u3008b\u3009ok",
        context={"tags": ["\u202etag"]},
    )

    [stored] = services.list_memories(user=alice)["memories"]
    assert stored["content"] == "Invoicegpj.exe <b>ok"
    assert stored["metadata"]["tags"] == ["tag"]
