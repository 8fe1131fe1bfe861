"""Fair shares (memory/client/limits.py): one user over a limit is refused at once with 429, a
Retry-After and the limit's name, before anything is sent or stored; another user is
served as before."""

from __future__ import annotations

import contextlib
import json

import pytest
from django.core.cache import cache
from django.core.files.uploadedfile import SimpleUploadedFile

from memory.client import limits, services


@pytest.fixture(autouse=True)
def limits_on(settings):
    settings.MEMORY_LIMITS_ENABLED = True
    cache.clear()  # the counts of earlier tests (user pks come back after each rollback)
    yield
    cache.clear()


def _add(client, content: str):
    return client.post(
        "/api/memory/add", json.dumps({"content": content}), content_type="application/json"
    )


def test_a_user_over_the_api_rate_gets_429_naming_it_and_others_are_served(
    memory_server, settings, alice_client, bob_client
):
    settings.MEMORY_API_RATE = "3/m"
    answers = [alice_client.get("/api/memory/recent").status_code for _ in range(4)]

    assert answers == [200, 200, 200, 429]
    refused = alice_client.get("/api/memory/recent")
    assert refused.status_code == 429
    assert int(refused["Retry-After"]) >= 1
    body = refused.json()
    assert body["error"]["limit"] == "MEMORY_API_RATE" and body["retry_after"] >= 1
    assert "3/m" in body["error"]["reason"]
    assert bob_client.get("/api/memory/recent").status_code == 200


def test_a_user_with_every_place_taken_is_refused_before_anything_is_stored(
    memory_server, settings, alice, bob, alice_client, bob_client
):
    """Alice's requests under way fill her places: one more is refused at once, and what
    it asked is not stored (under load, adds were answered "no answer within 10 s" while
    the server stored them: told failed, done all the same)."""
    settings.MEMORY_USER_CALLS = 2
    with contextlib.ExitStack() as under_way:
        for _ in range(2):
            under_way.enter_context(limits.one_of_a_few(alice))

        refused = _add(alice_client, "Alice's extra note")
        served = _add(bob_client, "Bob's note")

    assert refused.status_code == 429
    assert refused.json()["error"]["limit"] == "MEMORY_USER_CALLS"
    assert refused["Retry-After"] == "1"
    assert served.status_code == 201
    assert services.list_memories(user=alice)["total"] == 0
    # Her places come back when her requests end.
    assert _add(alice_client, "Alice's next note").status_code == 201


def _export(*contents: str) -> bytes:
    memories = [{"content": c} for c in contents]
    return json.dumps({"format": "ikario-memories", "version": 1, "memories": memories}).encode()


def test_imports_and_resets_run_one_at_a_time_and_within_their_rate(
    memory_server, settings, alice_client, bob_client
):
    settings.MEMORY_BULK_RATE = "2/h"

    def upload(client, name: str):
        file = SimpleUploadedFile("m.json", _export(f"{name}'s note"))
        return client.post("/memory/import", {"file": file})

    assert upload(alice_client, "Alice").status_code == 202
    waiting = upload(alice_client, "Alice")  # the first one has not run yet
    assert waiting.status_code == 429
    assert "already under way" in waiting.content.decode()
    assert upload(bob_client, "Bob").status_code == 202

    from memory.worker import database

    database.run_ready_tasks()
    assert upload(alice_client, "Alice").status_code == 202
    database.run_ready_tasks()
    over = alice_client.post("/memory/reset", {"confirmation": "reset my memory"})
    assert over.status_code == 429
    assert "MEMORY_BULK_RATE" in over.content.decode()


def test_a_job_that_stopped_moving_does_not_hold_the_next_one_up(
    memory_server, settings, alice, alice_client
):
    """A job whose task failed for good stays "running"; after TASKS_RUNNING_TIMEOUT
    without a move it no longer counts as under way."""
    from datetime import timedelta

    from django.utils import timezone

    from memory.models import MemoryJob

    stuck = MemoryJob.objects.create(user=alice, kind="reset", state="running")
    reset = {"confirmation": "reset my memory"}
    assert alice_client.post("/memory/reset", reset).status_code == 429
    long_ago = timezone.now() - timedelta(seconds=settings.TASKS_RUNNING_TIMEOUT + 1)
    MemoryJob.objects.filter(pk=stuck.pk).update(updated_at=long_ago)

    assert alice_client.post("/memory/reset", reset).status_code == 202
