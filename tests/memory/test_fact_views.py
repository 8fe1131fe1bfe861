"""/memory's "Add a fact" form and retrieval sliders (memory/web/facts.py), through the
real ikario_rag subprocess where a fact is stored."""

import pytest
from django.test import Client

from memory.client import services
from memory.models import MemorySettings

HTMX = {"HTTP_HX_REQUEST": "true"}


def _add(client, **data):
    return client.post("/memory/facts/add", {"kind": "fact", **data}, **HTMX)


def test_the_page_shows_the_form_and_the_sliders_at_their_values(
    memory_server, alice, alice_client
):
    MemorySettings.objects.update_or_create(user=alice, defaults={"max_results": 6})

    html = alice_client.get("/memory/").content.decode()

    assert 'id="memory-add-fact"' in html
    assert 'id="fact-expiry"' in html
    assert 'id="recall-max-results" name="max_results" min="1" max="10" step="1" value="6"' in html
    assert 'name="min_score" min="0" max="1" step="0.05" value="0.5"' in html


def test_a_fact_is_added_with_its_kind_category_tags_and_expiry(memory_server, alice, alice_client):
    response = _add(
        alice_client,
        content="Alice's train to Turin leaves Friday",
        kind="observation",
        category="contextuelle",
        tags="travel, #train",
        expiry="1d",
    )

    assert response.status_code == 200
    assert 'id="fact-added"' in response.content.decode()
    assert "memory-list-changed" in response["HX-Trigger"]
    [stored] = services.list_memories(user=alice)["memories"]
    assert stored["content"] == "Alice's train to Turin leaves Friday"
    meta = stored["metadata"]
    assert (meta["kind"], meta["category"], meta["tags"]) == (
        "observation",
        "contextuelle",
        ["travel", "train"],
    )
    assert meta["expires_at"]


@pytest.mark.parametrize(
    ("data", "error_id"),
    [
        ({"content": "", "expiry": "1d"}, "fact-content-error"),
        ({"content": "a\x00b"}, "fact-content-error"),
        ({"content": "x", "expiry": "tomorrow"}, "fact-expiry-error"),
        ({"content": "x", "expiry": "0d"}, "fact-expiry-error"),
        ({"content": "x", "kind": "rumour"}, "fact-kind-error"),
        ({"content": "x", "category": "nope"}, "fact-category-error"),
        ({"content": "x", "tags": "t" * 300}, "fact-tags-error"),
    ],
)
def test_a_bad_fact_is_refused_with_the_error_beside_its_field(
    alice, alice_client, no_memory_server, data, error_id
):
    response = _add(alice_client, **data)

    assert response.status_code == 400
    assert f'id="{error_id}"' in response.content.decode()


def test_what_was_typed_is_escaped_when_the_form_comes_back(alice_client, no_memory_server):
    response = _add(alice_client, content="<script>alert(1)</script>", expiry="<b>soon</b>")

    html = response.content.decode()
    assert response.status_code == 400
    assert "<script>alert(1)</script>" not in html and "<b>soon</b>" not in html
    assert "&lt;script&gt;" in html


def test_a_fact_is_not_added_while_memory_is_off(alice, alice_client, no_memory_server):
    MemorySettings.objects.update_or_create(user=alice, defaults={"memory_enabled": False})

    response = _add(alice_client, content="Alice likes figs")

    assert response.status_code == 400
    assert 'id="fact-error"' in response.content.decode()


def test_the_sliders_save_through_the_settings(alice, alice_client):
    response = alice_client.post(
        "/memory/recall-settings", {"max_results": 9, "min_score": 0.35}, **HTMX
    )

    assert response.status_code == 200
    assert 'id="recall-sliders-saved"' in response.content.decode()
    stored = MemorySettings.for_user(alice)
    assert (stored.max_results, stored.min_score) == (9, 0.35)
    api = alice_client.get("/api/memory/settings").json()
    assert (api["max_results"], api["min_score"]) == (9, 0.35)


@pytest.mark.parametrize(
    ("data", "error_id"),
    [
        ({"max_results": 11, "min_score": 0.5}, "recall-max-results-error"),
        ({"max_results": 0, "min_score": 0.5}, "recall-max-results-error"),
        ({"max_results": "9" * 40, "min_score": 0.5}, "recall-max-results-error"),
        ({"max_results": 3, "min_score": 2}, "recall-min-score-error"),
        ({"max_results": 3, "min_score": "nan"}, "recall-min-score-error"),
        ({"max_results": 3}, "recall-min-score-error"),
    ],
)
def test_a_bad_slider_value_is_refused_beside_its_slider(alice, alice_client, data, error_id):
    response = alice_client.post("/memory/recall-settings", data, **HTMX)

    assert response.status_code == 400
    assert f'id="{error_id}"' in response.content.decode()
    assert MemorySettings.for_user(alice).max_results == 4


def test_both_forms_need_a_login_and_the_csrf_token(client, alice):
    for path in ("/memory/facts/add", "/memory/recall-settings"):
        response = client.post(path, {"content": "x", "max_results": 3, "min_score": 0.2})
        assert response.status_code == 302 and "/accounts/login/" in response["Location"]

    guarded = Client(enforce_csrf_checks=True)
    guarded.force_login(alice)
    for path in ("/memory/facts/add", "/memory/recall-settings"):
        assert (
            guarded.post(path, {"content": "x", "max_results": 3, "min_score": 0.2}).status_code
            == 403
        )
    assert MemorySettings.for_user(alice).max_results == 4
