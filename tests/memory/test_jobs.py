"""Imports and resets are background jobs (memory/client/jobs.py): the request answers 202 with
where to follow the job, never a timeout error for work that goes on."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import IntegrityError, transaction

from memory.client import services
from memory.models import MemoryJob
from memory.worker import database


def _export(n: int) -> bytes:
    memories = [{"content": f"Imported note number {i} about the garden"} for i in range(n)]
    return json.dumps({"format": "ikario-memories", "version": 1, "memories": memories}).encode()


def test_a_reset_longer_than_a_call_answers_202_and_its_job_says_how_it_went(
    memory_server, settings, alice, bob, alice_client
):
    services.add_thoughts(user=alice, items=[{"content": f"Alice's note {i}"} for i in range(30)])
    services.add_thought(user=bob, content="Bob's own memory")
    # A deadline no call can meet: the reset outlasts a request's call, as 20,000 memories
    # did (answered 400 "no answer within 10 s" while the deletion went on).
    settings.MCP_CALL_TIMEOUT = 0.0001

    accepted = alice_client.post("/memory/reset", {"confirmation": "reset my memory"})

    assert accepted.status_code == 202
    assert "Deleting every memory" in accepted.content.decode()
    status_url = accepted["Location"]
    settings.MCP_CALL_TIMEOUT = 10.0
    assert alice_client.get(status_url).json()["state"] == "queued"

    database.run_ready_tasks()

    status = alice_client.get(status_url).json()
    assert (status["kind"], status["state"], status["outcome"]) == (
        "reset",
        "done",
        {"deleted": 30},
    )
    job_id = status["id"]
    page = alice_client.get(f"/memory/jobs/{job_id}")
    assert "Memory reset: 30 memories deleted." in page.content.decode()
    assert "memory-list-changed" in page["HX-Trigger"]  # the list reloads
    assert services.list_memories(user=alice)["total"] == 0
    assert services.list_memories(user=bob)["total"] == 1


def test_an_import_answers_202_then_shows_its_progress_and_outcome(
    memory_server, alice, alice_client, bob_client
):
    accepted = alice_client.post(
        "/memory/import", {"file": SimpleUploadedFile("m.json", _export(450))}
    )

    assert accepted.status_code == 202
    assert "Importing… 0 of 450" in accepted.content.decode()
    assert 'hx-trigger="every 1s"' in accepted.content.decode()  # the page follows it
    status_url = accepted["Location"]
    assert alice_client.get(status_url).json()["total"] == 450

    database.run_ready_tasks()

    status = alice_client.get(status_url).json()
    assert (status["state"], status["done"], status["total"]) == ("done", 450, 450)
    assert status["outcome"] == {"restored": 450, "duplicates": 0, "expired": 0, "private_only": 0}
    page = alice_client.get(f"/memory/jobs/{status['id']}").content.decode()
    assert "450 imported, 0 already in memory (450 in the file)." in page
    assert "every 1s" not in page  # ended: no more polling
    assert services.list_memories(user=alice)["total"] == 450
    # Someone else's job is nobody else's business.
    assert bob_client.get(status_url).status_code == 404
    assert bob_client.get(f"/memory/jobs/{status['id']}").status_code == 404


def test_an_import_stopped_by_the_memory_says_what_it_did(
    memory_server, settings, alice, alice_client
):
    accepted = alice_client.post(
        "/memory/import", {"file": SimpleUploadedFile("m.json", _export(5))}
    )
    assert accepted.status_code == 202
    settings.MEMORY_TASK_TIMEOUT = 0.0001  # no batch can be stored in time

    database.run_ready_tasks()

    status = alice_client.get(accepted["Location"]).json()
    assert status["state"] == "failed"
    assert status["error"].startswith("memory unavailable")
    page = alice_client.get(f"/memory/jobs/{status['id']}").content.decode()
    assert "Import stopped" in page and "importing the same file again" in page


def test_a_memory_that_is_only_private_text_is_left_out_and_the_others_imported(
    memory_server, alice, alice_client
):
    memories = [{"content": f"Imported note number {i} about the garden"} for i in range(5)]
    memories.insert(2, {"content": "<private>my bank PIN is 4821</private>"})
    data = {"format": "ikario-memories", "version": 1, "memories": memories}
    file = SimpleUploadedFile("m.json", json.dumps(data).encode())

    accepted = alice_client.post("/memory/import", {"file": file})
    assert accepted.status_code == 202
    database.run_ready_tasks()

    status = alice_client.get(accepted["Location"]).json()
    assert (status["state"], status["done"], status["total"]) == ("done", 6, 6)
    assert status["outcome"] == {"restored": 5, "duplicates": 0, "expired": 0, "private_only": 1}
    page = alice_client.get(f"/memory/jobs/{status['id']}").content.decode()
    assert "1 left out: only private text, nothing to keep." in page
    assert services.list_memories(user=alice)["total"] == 5


def test_the_database_holds_one_job_under_way_per_user(alice, bob):
    """However close together two requests run, the second row cannot be made."""
    MemoryJob.objects.create(user=alice, kind="import")
    MemoryJob.objects.create(user=bob, kind="import")  # another user's: his own
    with pytest.raises(IntegrityError), transaction.atomic():
        MemoryJob.objects.create(user=alice, kind="reset", state="running")
    MemoryJob.objects.filter(user=alice).update(state="done")
    MemoryJob.objects.create(user=alice, kind="reset")  # the first one ended
