"""The memory settings page: what a user sees and what a save really changes."""

import re

import pytest
from django.urls import reverse

from memory.models import MemoryRetrieval, MemorySettings

pytestmark = pytest.mark.django_db

URL = "/memory/settings/"


def _form(**overrides):
    data = {"auto_retrieve": "on", "max_results": "4", "min_score": "0.5"}
    data.update(overrides)
    return {k: v for k, v in data.items() if v is not None}


def test_it_is_reachable_by_name():
    assert reverse("memory-settings") == URL


def test_it_requires_login(client):
    response = client.get(URL)
    assert response.status_code == 302
    assert "/accounts/login/" in response["Location"]


def test_it_shows_the_defaults(alice_client):
    response = alice_client.get(URL)
    assert response.status_code == 200
    html = response.content.decode()
    assert 'name="max_results" value="4"' in html
    assert 'name="min_score" value="0.5"' in html
    assert 'name="memory_enabled"' not in html  # switched on the memory page's Controls
    assert re.search(r'name="auto_retrieve"[^>]*checked', html)
    assert "csrfmiddlewaretoken" in html


def test_it_saves_the_settings(alice_client, alice):
    response = alice_client.post(URL, _form(auto_retrieve=None, max_results="7", min_score="0.35"))
    assert response.status_code == 302
    saved = MemorySettings.for_user(alice)
    assert (saved.memory_enabled, saved.auto_retrieve) == (True, False)
    assert (saved.max_results, saved.min_score) == (7, 0.35)


def test_it_leaves_memory_on_or_off_as_the_controls_set_it(alice_client, alice):
    alice_client.post("/memory/controls", {"control": "enabled", "on": ""})
    alice_client.post(URL, _form())
    assert MemorySettings.for_user(alice).memory_enabled is False


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("max_results", "0"),
        ("max_results", "11"),
        ("max_results", "four"),
        ("min_score", "-0.1"),
        ("min_score", "1.5"),
        ("min_score", ""),
    ],
)
def test_it_refuses_out_of_range_values(alice_client, alice, field, value):
    response = alice_client.post(URL, _form(**{field: value}))
    assert response.status_code == 400
    html = response.content.decode()
    assert 'class="errorlist' in html
    assert f'name="{field}"' in html
    # Nothing stored is lost: the previous values stay.
    kept = MemorySettings.for_user(alice)
    assert (kept.max_results, kept.min_score) == (4, 0.5)


def test_it_answers_htmx_with_the_form_fragment(alice_client, alice):
    response = alice_client.post(URL, _form(max_results="2"), HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    html = response.content.decode()
    assert html.lstrip().startswith("<form")
    assert "Settings saved." in html
    assert MemorySettings.for_user(alice).max_results == 2


def test_it_only_changes_the_logged_in_users_settings(alice_client, alice, bob):
    alice_client.post(URL, _form(max_results="9"))
    assert MemorySettings.for_user(bob).max_results == 4


def test_it_lists_the_users_latest_recalls_only(alice_client, alice, bob):
    from chat.models import Conversation

    mine = Conversation.objects.create(user=alice, title="Ski plans")
    theirs = Conversation.objects.create(user=bob, title="Bob's secret")
    MemoryRetrieval.objects.create(
        user=alice,
        conversation=mine,
        query="ski trip",
        memories=[{"id": "a", "score": 0.81}],
        tokens_added=42,
        latency_ms=12.5,
    )
    MemoryRetrieval.objects.create(user=bob, conversation=theirs, query="bob query")
    html = alice_client.get(URL).content.decode()
    assert "Ski plans" in html and "0.81" in html and "42" in html
    assert "Bob&#x27;s secret" not in html and "bob query" not in html
