"""The one JSON API (ikario_clone/api.py): its OpenAPI document, for signed-in users, and one
error shape whichever part of the API refuses."""

import json

import pytest
from django.test import Client

from chat.models import Conversation

pytestmark = pytest.mark.django_db


def _send(client, method, url, raw):
    return getattr(client, method)(url, data=raw, content_type="application/json")


def test_it_publishes_its_openapi_document_to_signed_in_users(alice_client):
    anonymous = Client()
    assert anonymous.get("/api/openapi.json").status_code == 302  # to the login page
    assert anonymous.get("/api/docs").status_code == 302

    document = alice_client.get("/api/openapi.json").json()

    paths = document["paths"]
    assert {"get", "post"} <= set(paths["/api/memory/search"])
    assert set(paths["/api/conversations/{pk}"]) == {"get", "patch", "delete"}
    messages = paths["/api/conversations/{pk}/messages"]["post"]
    assert messages["requestBody"]["content"]["application/json"]["schema"][
        "properties"
    ].keys() == {
        "content",
        "model",
    }
    assert "Idempotency-Key" in document["info"]["description"]
    assert alice_client.get("/api/docs").status_code == 200


@pytest.mark.parametrize(
    ("method", "url", "raw", "status", "field"),
    [
        # The schema's refusals (strict types, unknown fields), both parts of the API.
        ("patch", "/api/conversations/{pk}", '{"pinned": "yes"}', 400, "pinned"),
        ("post", "/api/conversations", '{"colour": "red"}', 400, "colour"),
        ("post", "/api/memory/forget", '{"topic": "x", "dry_run": 1}', 400, "dry_run"),
        ("post", "/api/memory/facts", '{"content": "x", "mood": "ok"}', 400, "mood"),
        # The edge's parser, before any schema.
        ("post", "/api/memory/add", '{"content": NaN}', 400, "body"),
        ("post", "/api/conversations", '{"title": ' + "9" * 40 + "}", 400, "body"),
        # A method the path does not have.
        ("put", "/api/memory/search", "{}", 405, None),
        ("post", "/api/conversations/{pk}", "{}", 405, None),
    ],
)
def test_every_refusal_has_the_one_shape(alice_client, alice, method, url, raw, status, field):
    conversation = Conversation.objects.create(user=alice, title="Keep")

    response = _send(alice_client, method, url.format(pk=conversation.pk), raw)

    assert response.status_code == status
    error = response.json()["error"]
    assert set(error) >= {"field", "reason"} and error["field"] == field
    assert error["reason"]
    if field:
        assert error["reason"].startswith(f"{field}: ")


def test_a_method_refused_lists_the_allowed_ones_in_order(alice_client):
    response = alice_client.put("/api/memory/settings", "{}", content_type="application/json")

    assert response.status_code == 405
    assert response["Allow"] == "GET, PATCH"
    assert json.loads(response.content)["error"]["reason"] == "method PUT not allowed"
