"""Nothing a user types stalls a conversation's auto-save (issue 24).

A long token (a SHA-512, a JWT, an API key) is no tag; an exchange the memory refuses for
good is recorded as failed once (admin, the save button) and the conversation's other and
later exchanges still save. Real task backend and worker, real ikario_rag.
"""

from __future__ import annotations

import hashlib

import pytest
from django.urls import reverse
from django_tasks_db.models import DBTaskResult

from chat.models import Message
from memory.client import services
from memory.learning.conversations import enqueue_save
from memory.learning.tags import extract_tags
from memory.models import FailedExchange, SavedExchange
from memory.worker import database
from tests.fixtures.builders import add_message, make_conversation

pytestmark = pytest.mark.django_db(transaction=True)

# Letters first, so the tagger reads each as one word: 128 and 300 characters.
SHA512 = "f" + hashlib.sha512(b"ikario").hexdigest()[1:]
JWT = "eyJhbGciOiJIUzI1NiJ9" + "x" * 280


def saved_sources(user) -> set[str]:
    found = services.get_recent_memories(user=user, limit=100, kinds=["conversation"])
    return {m["metadata"]["source"] for m in found["memories"]}


def test_a_long_token_is_not_a_tag():
    tags = extract_tags(f"Here is the checksum {SHA512} and my token {JWT} for Chamonix.")

    assert "Chamonix" in tags
    assert all(len(tag) <= 40 for tag in tags), tags


def test_every_exchange_of_a_conversation_with_long_tokens_is_auto_saved(alice, memory_server):
    said = []
    for n in range(1, 9):
        token = SHA512 if n % 2 else JWT
        said += [f"Exchange {n}: check {token} please", f"Answer {n}: the token {token} is fine."]
    chat = make_conversation(alice, "Tokens", *said, pinned=True)

    enqueue_save(chat.pk)
    database.run_ready_tasks()

    answers = Message.objects.filter(conversation=chat, role="assistant")
    assert saved_sources(alice) == {f"conversation:{chat.pk}:{a.pk}" for a in answers}
    assert not DBTaskResult.objects.exclude(status="SUCCESSFUL").exists()


def test_an_exchange_the_memory_refuses_fails_once_and_later_ones_still_save(
    alice, memory_server, client
):
    # A message stored before the edge refused NUL (the memory's validation still does).
    chat = make_conversation(alice, "Refused", "First question", "First answer", pinned=True)
    add_message(chat, "A broken \x00 question")
    broken = add_message(chat, "An answer to it", role="assistant")
    add_message(chat, "Third question")
    add_message(chat, "Third answer", role="assistant")

    enqueue_save(chat.pk)
    database.run_ready_tasks()

    answers = list(Message.objects.filter(conversation=chat, role="assistant").order_by("id"))
    good = {f"conversation:{chat.pk}:{a.pk}" for a in answers if a.pk != broken.pk}
    assert saved_sources(alice) == good
    failed = FailedExchange.objects.get()
    assert failed.answer_id == broken.pk and "cannot be stored" in failed.error
    assert DBTaskResult.objects.get().status == "SUCCESSFUL"

    # Later exchanges still save; the failed one is not tried again by auto-save.
    add_message(chat, "Fourth question")
    fourth = add_message(chat, "Fourth answer", role="assistant")
    enqueue_save(chat.pk)
    database.run_ready_tasks()
    assert f"conversation:{chat.pk}:{fourth.pk}" in saved_sources(alice)
    assert FailedExchange.objects.count() == 1
    assert not SavedExchange.objects.filter(answer=broken).exists()
    assert not DBTaskResult.objects.exclude(status="SUCCESSFUL").exists()

    # The save button says so.
    client.force_login(alice)
    page = client.get(reverse("chat:conversation", args=[chat.pk])).content.decode()
    assert "1 exchange could not be saved to memory" in page

    # And so does the admin.
    alice.is_staff = alice.is_superuser = True
    alice.save()
    listing = client.get(reverse("admin:memory_failedexchange_changelist")).content.decode()
    assert "cannot be stored" in listing


def test_a_job_that_fails_on_refused_input_is_not_retried(settings):
    settings.TASKS_MAX_ATTEMPTS = 5
    from tests.memory.tasks_for_tests import refuse_input

    result = refuse_input.enqueue()
    database.run_ready_tasks()

    row = DBTaskResult.objects.get(id=result.id)
    assert row.status == "FAILED"
    assert len(row.worker_ids) == 1
