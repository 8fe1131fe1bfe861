"""The JSON API, as a script sees it: session auth, CSRF, 400s that name the field."""

import json

import pytest
from django.test import AsyncClient, Client

from chat.models import Conversation, Message

pytestmark = pytest.mark.django_db


def post_json(client, url, body, method="post", **extra):
    data = body if isinstance(body, str) else json.dumps(body)
    return getattr(client, method)(url, data=data, content_type="application/json", **extra)


def test_it_requires_login(client):
    response = client.get("/api/conversations")
    assert response.status_code == 401
    assert response.json()["error"]["reason"] == "login required"


def test_it_creates_lists_updates_and_deletes_conversations(alice_client):
    created = post_json(alice_client, "/api/conversations", {"title": "Ski", "model": ""})
    assert created.status_code == 201
    conversation_id = created.json()["id"]
    assert created.json()["title"] == "Ski"

    listed = alice_client.get("/api/conversations").json()
    assert [c["id"] for c in listed["conversations"]] == [conversation_id]

    patched = post_json(
        alice_client,
        f"/api/conversations/{conversation_id}",
        {"title": "Ski 2026", "pinned": True, "model": "claude-haiku-5-5"},
        method="patch",
    )
    assert patched.status_code == 200
    assert (patched.json()["title"], patched.json()["pinned"], patched.json()["model"]) == (
        "Ski 2026",
        True,
        "claude-haiku-5-5",
    )
    assert alice_client.get(f"/api/conversations/{conversation_id}").json()["messages"] == []

    assert alice_client.delete(f"/api/conversations/{conversation_id}").status_code == 204
    assert not Conversation.objects.filter(pk=conversation_id).exists()


@pytest.mark.parametrize(
    ("body", "field", "reason"),
    [
        ("{not json", "body", "is not valid JSON"),
        ("[1, 2]", "body", "must be a JSON object"),
        ({"title": 42}, "title", "must be a string"),
        ({"model": "gpt-4"}, "model", "unknown model"),
        ({"colour": "red"}, "colour", "unknown field"),
    ],
)
def test_it_rejects_bad_conversation_input(alice_client, alice, body, field, reason):
    response = post_json(alice_client, "/api/conversations", body)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["field"] == field and reason in error["reason"]
    assert not Conversation.objects.filter(user=alice).exists()


@pytest.mark.parametrize(
    ("body", "field", "reason"),
    [
        ({"pinned": "yes"}, "pinned", "must be true or false"),
        ({"title": ""}, "title", "must not be empty"),
        ({"model": "nope"}, "model", "unknown model"),
    ],
)
def test_it_rejects_bad_updates_and_keeps_the_conversation(
    alice_client, alice, body, field, reason
):
    conversation = Conversation.objects.create(user=alice, title="Keep")
    response = post_json(alice_client, f"/api/conversations/{conversation.pk}", body, "patch")
    assert response.status_code == 400
    assert response.json()["error"]["field"] == field
    assert reason in response.json()["error"]["reason"]
    conversation.refresh_from_db()
    assert (conversation.title, conversation.pinned) == ("Keep", False)


def test_it_hides_other_users_conversations(alice_client, bob):
    theirs = Conversation.objects.create(user=bob, title="Bob's")
    assert alice_client.get(f"/api/conversations/{theirs.pk}").status_code == 404
    assert alice_client.delete(f"/api/conversations/{theirs.pk}").status_code == 404
    response = post_json(alice_client, f"/api/conversations/{theirs.pk}/messages", {"content": "x"})
    assert response.status_code == 404
    assert Conversation.objects.filter(pk=theirs.pk).exists()
    assert not Message.objects.filter(conversation=theirs).exists()


def test_it_enforces_csrf(alice):
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    response = post_json(client, "/api/conversations", {"title": "x"})
    assert response.status_code == 403
    client.get("/")  # the page sets the CSRF cookie, as a browser session would
    token = client.cookies["csrftoken"].value
    response = post_json(client, "/api/conversations", {"title": "x"}, HTTP_X_CSRFTOKEN=token)
    assert response.status_code == 201


def test_it_runs_a_turn_and_returns_both_messages(alice_client, alice, fake_anthropic):
    fake_anthropic.reply("Bring **gloves**.")
    conversation = Conversation.objects.create(user=alice)

    response = post_json(
        alice_client, f"/api/conversations/{conversation.pk}/messages", {"content": "Ski tips?"}
    )

    assert response.status_code == 201
    body = response.json()
    assert body["user_message"]["content"] == "Ski tips?"
    assert body["assistant_message"]["content"] == "Bring **gloves**."
    assert body["assistant_message"]["tool_calls"] == []
    assert fake_anthropic.last_request["messages"][-1] == {"role": "user", "content": "Ski tips?"}
    conversation.refresh_from_db()
    assert conversation.title == "Ski tips?"


@pytest.mark.parametrize(
    ("body", "field", "reason"),
    [
        ({"content": ""}, "content", "must not be empty"),
        ({"content": 5}, "content", "must be a string"),
        ({}, "content", "must be a string"),
        ({"content": "hi", "model": "gpt"}, "model", "unknown model"),
        ("oops", "body", "is not valid JSON"),
    ],
)
def test_it_rejects_bad_messages_without_storing_them(
    alice_client, alice, fake_anthropic, body, field, reason
):
    conversation = Conversation.objects.create(user=alice)
    response = post_json(alice_client, f"/api/conversations/{conversation.pk}/messages", body)
    assert response.status_code == 400
    assert response.json()["error"]["field"] == field
    assert reason in response.json()["error"]["reason"]
    assert not Message.objects.exists()
    assert fake_anthropic.requests == []


def test_it_reports_api_failures_as_502_and_keeps_the_question(alice_client, alice, fake_anthropic):
    fake_anthropic.fail(401, "authentication_error", "invalid x-api-key")
    conversation = Conversation.objects.create(user=alice)
    response = post_json(
        alice_client, f"/api/conversations/{conversation.pk}/messages", {"content": "Hello"}
    )
    assert response.status_code == 502
    assert "API key" in response.json()["error"]
    assert response.json()["assistant_message"]["status"] == "error"
    assert conversation.messages.get(role="user").content == "Hello"


@pytest.mark.django_db(transaction=True)  # async: the ORM runs on another thread
async def test_it_streams_the_turn_as_server_sent_events(alice, fake_anthropic):
    fake_anthropic.reply("One two three")
    conversation = await Conversation.objects.acreate(user=alice)
    client = AsyncClient()
    await client.aforce_login(alice)

    response = await client.post(
        f"/api/conversations/{conversation.pk}/messages",
        data=json.dumps({"content": "Count"}),
        content_type="application/json",
        headers={"Accept": "text/event-stream"},
    )

    assert response["Content-Type"] == "text/event-stream"
    raw = b"".join([chunk async for chunk in response.streaming_content]).decode()
    events = [
        (block.split("\n")[0].removeprefix("event: "), json.loads(block.split("\n")[1][6:]))
        for block in raw.strip().split("\n\n")
    ]
    names = [name for name, _ in events]
    assert names == ["user_message", "started", "text", "text", "text", "done"]
    assert "".join(data["text"] for name, data in events if name == "text") == "One two three"
    assert events[-1][1]["content"] == "One two three"
    assert events[-1][1]["status"] == "complete"
