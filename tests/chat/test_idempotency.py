"""Writes are safe to retry (issue 24): the same `Idempotency-Key` gets the first answer
back and changes nothing again, on the chat API (the memory API's:
tests/memory/test_idempotent_api.py)."""

import json
import os
import socket

import pytest
from django.test import RequestFactory

from chat import idempotency
from chat.models import Conversation, IdempotentRequest, Message

pytestmark = pytest.mark.django_db


def post_json(client, url, body, key=None, method="post"):
    extra = {"HTTP_IDEMPOTENCY_KEY": key} if key else {}
    data = json.dumps(body)
    return getattr(client, method)(url, data=data, content_type="application/json", **extra)


def test_a_retried_create_makes_one_conversation_and_answers_the_same(alice_client, alice):
    first = post_json(alice_client, "/api/conversations", {"title": "Ski"}, key="k-1")
    again = post_json(alice_client, "/api/conversations", {"title": "Ski"}, key="k-1")

    assert first.status_code == again.status_code == 201
    assert again.json() == first.json()
    assert again["Idempotent-Replayed"] == "true"
    assert Conversation.objects.filter(user=alice).count() == 1


def test_without_a_key_each_request_is_a_new_write(alice_client, alice):
    post_json(alice_client, "/api/conversations", {"title": "Ski"})
    post_json(alice_client, "/api/conversations", {"title": "Ski"})

    assert Conversation.objects.filter(user=alice).count() == 2


def test_a_key_reused_for_another_request_is_refused(alice_client, alice):
    post_json(alice_client, "/api/conversations", {"title": "Ski"}, key="k-2")
    other = post_json(alice_client, "/api/conversations", {"title": "Sailing"}, key="k-2")

    assert other.status_code == 422
    assert other.json()["error"]["field"] == "Idempotency-Key"
    assert Conversation.objects.filter(user=alice).count() == 1


def test_keys_are_each_users_own(alice_client, bob_client, alice, bob):
    post_json(alice_client, "/api/conversations", {"title": "Ski"}, key="k-3")
    theirs = post_json(bob_client, "/api/conversations", {"title": "Ski"}, key="k-3")

    assert theirs.status_code == 201 and "Idempotent-Replayed" not in theirs
    assert Conversation.objects.get(user=bob).pk == theirs.json()["id"]


def test_a_retried_delete_answers_as_the_first_did(alice_client, alice):
    chat = Conversation.objects.create(user=alice, title="Old")
    url = f"/api/conversations/{chat.pk}"

    first = alice_client.delete(url, HTTP_IDEMPOTENCY_KEY="k-4")
    again = alice_client.delete(url, HTTP_IDEMPOTENCY_KEY="k-4")

    assert first.status_code == again.status_code == 204


def test_a_bad_key_is_refused_and_nothing_is_written(alice_client, alice):
    response = post_json(alice_client, "/api/conversations", {"title": "Ski"}, key="a b")

    assert response.status_code == 400
    assert response.json()["error"]["field"] == "Idempotency-Key"
    assert not Conversation.objects.exists()


def test_a_claim_whose_process_died_is_run_again(alice_client, alice, settings):
    request = RequestFactory().post(
        "/api/conversations", data=json.dumps({"title": "Ski"}), content_type="application/json"
    )
    dead = f"{socket.gethostname()}:{_a_dead_pid()}"
    IdempotentRequest.objects.create(
        user=alice, key="k-5", fingerprint=idempotency._fingerprint(request), owner=dead
    )

    response = post_json(alice_client, "/api/conversations", {"title": "Ski"}, key="k-5")

    assert response.status_code == 201
    assert Conversation.objects.filter(user=alice).count() == 1


def test_a_claim_still_running_answers_409(alice_client, alice):
    request = RequestFactory().post(
        "/api/conversations", data=json.dumps({"title": "Ski"}), content_type="application/json"
    )
    IdempotentRequest.objects.create(
        user=alice,
        key="k-6",
        fingerprint=idempotency._fingerprint(request),
        owner=f"{socket.gethostname()}:{os.getppid()}",  # alive
    )

    response = post_json(alice_client, "/api/conversations", {"title": "Ski"}, key="k-6")

    assert response.status_code == 409 and response["Retry-After"] == "1"
    assert not Conversation.objects.exists()


def test_a_retried_message_runs_one_turn(alice_client, alice, fake_anthropic):
    fake_anthropic.reply("Bring gloves.")
    chat = Conversation.objects.create(user=alice)
    url = f"/api/conversations/{chat.pk}/messages"

    first = post_json(alice_client, url, {"content": "Ski tips?"}, key="k-7")
    again = post_json(alice_client, url, {"content": "Ski tips?"}, key="k-7")

    assert first.status_code == again.status_code == 201
    assert again.json() == first.json()
    assert Message.objects.filter(conversation=chat).count() == 2
    assert len(fake_anthropic.requests) == 1


def _a_dead_pid() -> int:
    pid = 4_000_000
    while True:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return pid
        except PermissionError:
            pass
        pid += 1


def _claim_left_by(user, key: str, url: str, body: dict, owner: str) -> IdempotentRequest:
    request = RequestFactory().post(url, data=json.dumps(body), content_type="application/json")
    return IdempotentRequest.objects.create(
        user=user, key=key, fingerprint=idempotency._fingerprint(request), owner=owner
    )


def test_a_claim_this_process_no_longer_runs_is_run_again(alice_client, alice):
    # A request of this process failed without recording its answer (the database went
    # away until its end): the claim is its own, but nothing runs it any more.
    _claim_left_by(alice, "k-8", "/api/conversations", {"title": "Ski"}, idempotency._owner())

    response = post_json(alice_client, "/api/conversations", {"title": "Ski"}, key="k-8")

    assert response.status_code == 201
    assert Conversation.objects.filter(user=alice).count() == 1


def test_a_turn_run_again_answers_the_message_its_first_attempt_saved(
    alice_client, alice, fake_anthropic
):
    fake_anthropic.reply("Bring gloves.")
    chat = Conversation.objects.create(user=alice)
    url = f"/api/conversations/{chat.pk}/messages"
    dead = f"{socket.gethostname()}:{_a_dead_pid()}"
    claim = _claim_left_by(alice, "k-9", url, {"content": "Ski tips?"}, dead)
    # What the first attempt wrote before its process died: the message, half an answer.
    said = Message.objects.create(conversation=chat, role="user", content="Ski tips?")
    IdempotentRequest.objects.filter(pk=claim.pk).update(saved_message=said)
    Message.objects.create(
        conversation=chat, role="assistant", content="Bring", status="streaming",
        stream_host=socket.gethostname(), stream_pid=_a_dead_pid(), stream_token="gone",
    )  # fmt: skip

    response = post_json(alice_client, url, {"content": "Ski tips?"}, key="k-9")

    assert response.status_code == 201, response.content
    assert response.json()["user_message"]["id"] == said.pk
    messages = list(chat.messages.order_by("id").values_list("role", "content", "status"))
    assert messages == [
        ("user", "Ski tips?", "complete"),
        ("assistant", "Bring gloves.", "complete"),
    ]


def test_a_turn_whose_first_attempt_finished_is_not_run_twice(alice_client, alice, fake_anthropic):
    chat = Conversation.objects.create(user=alice)
    url = f"/api/conversations/{chat.pk}/messages"
    claim = _claim_left_by(alice, "k-10", url, {"content": "Ski tips?"}, idempotency._owner())
    said = Message.objects.create(conversation=chat, role="user", content="Ski tips?")
    IdempotentRequest.objects.filter(pk=claim.pk).update(saved_message=said)
    answer = Message.objects.create(conversation=chat, role="assistant", content="Gloves.")

    response = post_json(alice_client, url, {"content": "Ski tips?"}, key="k-10")

    assert response.status_code == 201
    assert response.json()["assistant_message"]["id"] == answer.pk
    assert chat.messages.count() == 2 and said.pk == response.json()["user_message"]["id"]
    assert fake_anthropic.requests == []


def _killed_after_saving_the_message(key: str) -> Message:
    """What a Daphne killed mid-answer leaves of a turn that ran: the claim unanswered and
    owned by a dead process, the answer half written and still marked streaming by it."""
    dead = _a_dead_pid()
    IdempotentRequest.objects.filter(key=key).update(
        status=None, body=b"", owner=f"{socket.gethostname()}:{dead}"
    )
    answer = Message.objects.filter(role="assistant").latest("id")
    Message.objects.filter(pk=answer.pk).update(
        content="Bring", status="streaming", stream_host=socket.gethostname(), stream_pid=dead
    )
    return answer


def test_a_retry_after_another_message_answers_its_own_and_stores_nothing_twice(
    alice_client, alice, fake_anthropic
):
    chat = Conversation.objects.create(user=alice)
    url = f"/api/conversations/{chat.pk}/messages"
    fake_anthropic.reply("Bring gloves.")
    first = post_json(alice_client, url, {"content": "Ski tips?"}, key="k-20")
    assert first.status_code == 201
    _killed_after_saving_the_message("k-20")
    # The user goes on in the chat before the client retries.
    fake_anthropic.reply("Two hours.")
    assert post_json(alice_client, url, {"content": "How long?"}, key="k-21").status_code == 201

    retry = post_json(alice_client, url, {"content": "Ski tips?"}, key="k-20")

    assert retry.status_code == 409, retry.content
    assert retry.json()["user_message"]["id"] == first.json()["user_message"]["id"]
    said = list(chat.messages.filter(role="user").values_list("content", flat=True))
    assert said == ["Ski tips?", "How long?"]
    answers = list(chat.messages.filter(role="assistant").values_list("content", "status"))
    assert answers == [("Bring", "stopped"), ("Two hours.", "complete")]
    assert len(fake_anthropic.requests) == 2
    # Sent again, the same answer: nothing more stored.
    again = post_json(alice_client, url, {"content": "Ski tips?"}, key="k-20")
    assert (again.status_code, again.json()) == (409, retry.json())
    assert chat.messages.count() == 4


def test_a_retry_finds_its_message_when_the_same_words_were_sent_since(
    alice_client, alice, fake_anthropic
):
    chat = Conversation.objects.create(user=alice)
    url = f"/api/conversations/{chat.pk}/messages"
    fake_anthropic.reply("Bring gloves.")
    first = post_json(alice_client, url, {"content": "Ski tips?"}, key="k-22")
    answer = _killed_after_saving_the_message("k-22")
    Message.objects.filter(pk=answer.pk).update(content="Bring gloves.", status="complete")
    fake_anthropic.reply("Wax the skis.")
    sent = post_json(alice_client, url, {"content": "Ski tips?"}, key="k-23")
    assert sent.status_code == 201

    retry = post_json(alice_client, url, {"content": "Ski tips?"}, key="k-22")

    # Its own message and answer, not the later message with the same words.
    assert retry.status_code == 201, retry.content
    assert retry.json()["user_message"]["id"] == first.json()["user_message"]["id"]
    assert retry.json()["assistant_message"]["id"] == answer.pk
    assert chat.messages.count() == 4
