"""404 and 500 with DEBUG off (as pytest-django runs tests): the app's pages, JSON under /api/."""

import pytest
from django.test import Client

pytestmark = pytest.mark.urls("tests.deploy.urls")


@pytest.fixture
def visitor():
    # A view that raises must come back as the 500 response, not as the exception.
    return Client(raise_request_exception=False)


def test_it_answers_an_unknown_url_with_its_own_404_page(visitor, settings):
    assert settings.DEBUG is False
    response = visitor.get("/no/such/page/")

    assert response.status_code == 404
    page = response.content.decode()
    assert "<title>Page not found · Ikario</title>" in page
    assert "This page does not exist." in page and 'href="/"' in page
    assert "chat/chat.css" in page  # the app's style
    assert "URLconf" not in page and "api/memory/" not in page and "admin/" not in page


def test_it_answers_another_users_conversation_with_the_same_404_page(alice_client, bob):
    from chat.models import Conversation

    theirs = Conversation.objects.create(user=bob, title="Bob's plans")
    response = alice_client.get(f"/c/{theirs.pk}/")
    assert response.status_code == 404
    page = response.content.decode()
    assert "This page does not exist." in page and "Bob's plans" not in page


def test_it_answers_a_failing_view_with_its_own_500_page(visitor):
    response = visitor.get("/broken/")

    assert response.status_code == 500
    page = response.content.decode()
    assert "<title>Something went wrong · Ikario</title>" in page
    assert "Something went wrong on our side." in page and "chat/chat.css" in page
    assert "Traceback" not in page and "RuntimeError" not in page
    assert "secret detail" not in page and "db.sqlite3" not in page


def test_it_keeps_the_json_api_answering_json(visitor, alice_client):
    missing = alice_client.get("/api/conversations/999999")
    assert missing.status_code == 404
    assert missing.json() == {"error": {"field": "id", "reason": "no such conversation"}}
    unknown = alice_client.get("/api/no/such/endpoint")
    assert unknown.status_code == 404
    assert unknown.json() == {"error": {"field": None, "reason": "not found"}}

    failed = visitor.get("/api/broken")
    assert failed.status_code == 500
    assert failed.json() == {"error": {"field": None, "reason": "server error"}}
    assert b"secret detail" not in failed.content
