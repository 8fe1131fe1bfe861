"""The memory API's writes are safe to retry (issue 24): the same `Idempotency-Key` gets
the first answer back. Through the real ikario_rag."""

import json

import pytest

pytestmark = pytest.mark.django_db


def post_json(client, url, body, key):
    return client.post(
        url, data=json.dumps(body), content_type="application/json", HTTP_IDEMPOTENCY_KEY=key
    )


def test_a_retried_memory_save_answers_as_the_first_did(memory_server, alice_client):
    body = {"content": "Alice keeps her skis in Chamonix"}

    first = post_json(alice_client, "/api/memory/add", body, key="m-1")
    again = post_json(alice_client, "/api/memory/add", body, key="m-1")

    assert first.status_code == again.status_code == 201
    assert again.json() == first.json()
    assert again["Idempotent-Replayed"] == "true"


def test_a_retried_delete_answers_as_the_first_did(memory_server, alice_client):
    saved = post_json(alice_client, "/api/memory/add", {"content": "Bob likes rye"}, "m-2")
    url = f"/api/memory/{saved.json()['id']}"

    first = alice_client.delete(url, HTTP_IDEMPOTENCY_KEY="m-3")
    again = alice_client.delete(url, HTTP_IDEMPOTENCY_KEY="m-3")

    assert first.status_code == again.status_code == 200
    assert alice_client.delete(url).status_code == 404  # without the key: a new request
