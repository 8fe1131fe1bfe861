"""Importing past chats from other assistants (memory/history/): stored as the user's past
chats under their source, dated as they were, found by chat search and by Claude's past-chat
tools, learnt from by the worker, oldest first, each fact saying where it came from; the
same file twice adds nothing; the page shows progress, then the summary."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import async_to_sync
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone

from chat import past_chats, search
from chat.models import Conversation, Message
from memory.client import services
from memory.display import sources
from memory.history import importing
from memory.models import MemoryJob, MemorySettings
from memory.worker import database
from tests.fixtures.builders import make_conversation
from tests.fixtures.exports import (
    branched_chatgpt_conversation,
    claude_conversation,
    many_chatgpt_conversations,
    write_json,
    write_zip,
)


@pytest.fixture
def rules_learn(settings, tmp_path):
    settings.ANTHROPIC_API_KEY = ""  # the rules learn (memory/learning/offline_facts.py)
    settings.MEMORY_HISTORY_DIR = str(tmp_path / "held")


def _chatgpt_zip(tmp_path):
    newer = branched_chatgpt_conversation("2025-03-02").as_dict()
    older = json.loads(
        json.dumps(branched_chatgpt_conversation("2024-01-10").as_dict()).replace(
            "I live in Lyon", "I live in Porto"
        )
    )
    older["title"] = "Older chat"
    conversations = write_json(tmp_path / "conversations.json", [newer, older])
    return write_zip(tmp_path / "export.zip", {"conversations.json": conversations})


def _upload(client, path):
    return client.post(
        "/memory/import/history", {"file": SimpleUploadedFile(path.name, path.read_bytes())}
    )


def _facts(user):
    found = services.list_memories(user=user, limit=100).get("memories") or []
    return [m for m in found if (m.get("metadata") or {}).get("kind") != "conversation"]


def test_a_chatgpt_zip_becomes_past_chats_learnt_from_with_their_provenance(
    memory_server, rules_learn, alice, alice_client, bob, tmp_path, monkeypatch
):
    monkeypatch.setattr(importing, "LEARN_SLICE", 1)  # a chat per task: queued again between
    accepted = _upload(alice_client, _chatgpt_zip(tmp_path))

    assert accepted.status_code == 202
    assert "Checking the file" in accepted.content.decode()
    database.run_ready_tasks()

    job = MemoryJob.objects.get(user=alice, kind=MemoryJob.Kind.HISTORY)
    assert job.state == MemoryJob.State.DONE, job.error
    page = alice_client.get(f"/memory/jobs/{job.pk}").content.decode()
    facts = _facts(alice)
    assert f"2 chats, {len(facts)} facts learnt, 0 kept out as secrets." in page
    chats = Conversation.objects.filter(user=alice, source="chatgpt").order_by("created_at")
    assert [(c.title, c.created_at.date().isoformat()) for c in chats] == [
        ("Older chat", "2024-01-10"),
        ("Moving to Lyon", "2025-03-02"),
    ]
    said = list(Message.objects.filter(conversation=chats[1]).values_list("role", "content"))
    assert said[:2] == [
        ("user", "My name is Mickael and I live in Lyon."),
        ("assistant", "Nice to meet you, Mickael!"),
    ]
    assert Message.objects.filter(conversation=chats[1]).first().created_at.year == 2025
    # Chat search finds them; Bob's finds nothing of Alice's.
    assert {h.conversation_id for h in search.search_messages(user=alice, query="nurse")} == {
        c.pk for c in chats
    }
    assert search.search_messages(user=bob, query="nurse") == []
    # So do Claude's past-chat tools, dated as they were had.
    now = make_conversation(alice, "Today", "Hello")
    execute = past_chats.make_executor(alice, now)
    found = json.loads(async_to_sync(execute)("conversation_search", {"query": "nurse"}).content)
    assert len(found["results"]) >= 2, found
    listed = json.loads(
        async_to_sync(execute)("recent_chats", {"n": 5, "before": "2025-12-31"}).content
    )["chats"]
    assert [(c["title"], c["last_active"][:4], c["imported_from"]) for c in listed] == [
        ("Moving to Lyon", "2025", "ChatGPT"),
        ("Older chat", "2024", "ChatGPT"),
    ]
    # The sidebar lists them under their source.
    sidebar = alice_client.get("/").content.decode()
    assert "From ChatGPT" in sidebar and "Older chat" in sidebar
    # What the rules learnt says where it came from: an imported chat, dated as it was had.
    assert any("nurse" in f["content"] for f in facts), facts
    named = sources.name_chats([dict(f["metadata"]) for f in facts], alice)
    assert all(item["source_chat"]["imported_from"] == "ChatGPT" for item in named)
    assert {item["source_chat"]["date"].year for item in named} == {2024, 2025}
    cards = alice_client.get("/memory/").content.decode()
    assert "From ChatGPT, 2 Mar 2025: chat “Moving to Lyon”" in cards
    assert "From ChatGPT, 10 Jan 2024: chat “Older chat”" in cards
    # Learnt oldest first: the older chat's exchanges were read first.
    first, last = chats[0], chats[1]
    assert first.learnt_exchanges.order_by("pk").first().pk < last.learnt_exchanges.first().pk


def test_importing_the_same_export_twice_adds_nothing(
    memory_server, rules_learn, alice, alice_client, tmp_path
):
    export = _chatgpt_zip(tmp_path)
    _upload(alice_client, export)
    database.run_ready_tasks()
    chats, messages, facts = (
        Conversation.objects.filter(user=alice).count(),
        Message.objects.filter(conversation__user=alice).count(),
        len(_facts(alice)),
    )

    again = _upload(alice_client, export)
    database.run_ready_tasks()

    assert again.status_code == 202
    job = MemoryJob.objects.filter(user=alice).latest("pk")
    assert (job.state, job.outcome["added"], job.outcome["already"]) == ("done", 0, 2)
    assert Conversation.objects.filter(user=alice).count() == chats
    assert Message.objects.filter(conversation__user=alice).count() == messages
    assert len(_facts(alice)) == facts


def test_a_claude_export_and_its_secrets_are_kept_out_of_memory(
    memory_server, rules_learn, alice, alice_client, tmp_path
):
    # A reset before the import: chats had long before it are learnt all the same.
    MemorySettings.objects.update_or_create(user=alice, defaults={"reset_at": timezone.now()})
    chat = claude_conversation(
        "Travel",
        "2024-06-01",
        [
            ("I live in Porto with my partner.", "Lovely city."),
            ("My wifi password is hunter2-Blue!", "Noted, keep it safe."),
        ],
    )
    path = write_json(tmp_path / "conversations.json", [chat])

    _upload(alice_client, path)
    database.run_ready_tasks()

    job = MemoryJob.objects.get(user=alice)
    assert (job.state, job.outcome["source"], job.outcome["secrets"]) == ("done", "claude", 1)
    assert Conversation.objects.get(user=alice).source == "claude"
    everything = json.dumps(services.list_memories(user=alice, limit=100))
    assert "hunter2" not in everything
    assert "Porto" in everything


def test_pasted_memories_are_stored_as_facts_dated_as_saved(
    memory_server, rules_learn, alice, alice_client, tmp_path
):
    path = tmp_path / "memories.txt"
    path.write_text("[2025-03-02] - Lives in Lyon\n[2024-11-20] - Prefers short answers\n")

    _upload(alice_client, path)
    database.run_ready_tasks()

    facts = _facts(alice)
    assert sorted((f["content"], f["metadata"]["date"][:10]) for f in facts) == [
        ("Lives in Lyon", "2025-03-02"),
        ("Prefers short answers", "2024-11-20"),
    ]
    assert {f["metadata"]["source"] for f in facts} == {"imported:pasted"}
    page = alice_client.get("/memory/").content.decode()
    assert "Memories: 2 added, 0 already in memory." in page
    assert page.count("From memories you pasted in") == 2  # on each memory's card


def test_a_damaged_upload_is_refused_with_what_is_wrong_and_nothing_stored(
    alice, alice_client, rules_learn, tmp_path
):
    bad = tmp_path / "conversations.json"
    bad.write_text('[{"mapping": {}, "title": "cut off')

    refused = _upload(alice_client, bad)

    assert refused.status_code == 400
    assert "is not JSON we can read" in refused.content.decode()
    assert not MemoryJob.objects.filter(user=alice).exists()
    assert not list((tmp_path / "held").glob("*"))  # the upload is not kept


def test_a_file_damaged_further_in_is_refused_by_the_job_before_anything_is_stored(
    memory_server, rules_learn, alice, alice_client, tmp_path
):
    good = json.dumps(branched_chatgpt_conversation().as_dict())
    path = tmp_path / "conversations.json"
    path.write_text(f"[{good}, {good[:-200]}")

    assert _upload(alice_client, path).status_code == 202
    database.run_ready_tasks()

    job = MemoryJob.objects.get(user=alice)
    assert job.state == "failed" and "not JSON" in job.error
    assert not Conversation.objects.filter(user=alice).exists()
    page = alice_client.get(f"/memory/jobs/{job.pk}").content.decode()
    assert "Import stopped" in page


def test_the_upload_needs_a_login_and_the_csrf_token(client, alice, tmp_path, rules_learn):
    from django.test import Client

    path = write_json(tmp_path / "c.json", [branched_chatgpt_conversation().as_dict()])
    assert _upload(client, path).status_code == 302  # to the login page
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(alice)
    assert _upload(strict, path).status_code == 403


def test_a_thousand_conversations_imported_twice_are_stored_once(tmp_path, alice):
    from memory.history import opening, storing

    path = write_json(tmp_path / "conversations.json", many_chatgpt_conversations(1_000))
    export = opening.open_export(path)

    first = [storing.store_chat(user=alice, chat=c) for c in opening.chats(export)]
    again = [storing.store_chat(user=alice, chat=c) for c in opening.chats(export)]

    assert sum(1 for c in first if c) == 1_000
    assert again == [None] * 1_000
    assert Conversation.objects.filter(user=alice, source="chatgpt").count() == 1_000


@pytest.mark.slow
@pytest.mark.timeout(900)  # minutes on a loaded machine: past the suite's 300 s ceiling
def test_ten_thousand_conversations_are_read_in_bounded_memory_and_once(tmp_path, alice, settings):
    """The stream: reading a 10,000-conversation export keeps one conversation at a time
    (tracemalloc's peak stays far below the file's size), storing it twice adds nothing."""
    import tracemalloc

    from memory.history import opening, storing

    path = write_json(tmp_path / "conversations.json", many_chatgpt_conversations(10_000))
    size = path.stat().st_size
    export = opening.open_export(path)

    tracemalloc.start()
    read = sum(1 for _ in opening.chats(export))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()

    assert read == 10_000
    assert peak < size / 20, (peak, size)
    first = [storing.store_chat(user=alice, chat=c) for c in opening.chats(export)]
    again = [storing.store_chat(user=alice, chat=c) for c in opening.chats(export)]
    assert sum(1 for c in first if c) == 10_000
    assert again == [None] * 10_000
    assert Conversation.objects.filter(user=alice, source="chatgpt").count() == 10_000
