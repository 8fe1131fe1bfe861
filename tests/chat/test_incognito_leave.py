"""No GET has a side effect (issue 24): an incognito chat ends on an explicit leave (a POST
with CSRF), when its page's socket closes, or when found abandoned, never because a page
was fetched (an image in an answer, `![x](/memory/?x=1)`, makes the browser GET it)."""

from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from chat import incognito
from chat.models import Conversation
from tests.fixtures.builders import make_conversation

pytestmark = pytest.mark.django_db


def _incognito(user, *contents):
    return make_conversation(user, "Secret plans", *contents, incognito=True)


@pytest.mark.parametrize(
    "url",
    ["/memory/?x=1", "/", "/?incognito=1", "/settings/", "/memory/settings/", "/search/?q=x"],
)
def test_fetching_a_page_leaves_the_incognito_chat_alone(alice_client, alice, url):
    secret = _incognito(alice, "Hi", "Hello")

    alice_client.get(url)

    assert Conversation.objects.filter(pk=secret.pk).exists()


def test_leaving_explicitly_ends_it(alice_client, alice):
    secret = _incognito(alice, "Hi", "Hello")

    response = alice_client.post(reverse("chat:conversation-leave", args=[secret.pk]))

    assert response.status_code == 302 and response["Location"] == reverse("chat:home")
    assert not Conversation.objects.filter(pk=secret.pk).exists()


def test_leaving_needs_a_post_with_csrf_and_ends_only_ones_own_incognito_chat(alice, bob):
    secret = _incognito(alice, "Hi")
    kept = make_conversation(alice, "Normal", "Hi")
    theirs = _incognito(bob, "Hi")
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(alice)
    leave = lambda c: reverse("chat:conversation-leave", args=[c.pk])  # noqa: E731

    assert strict.get(leave(secret)).status_code == 405
    assert strict.post(leave(secret)).status_code == 403  # no CSRF token
    client = Client()
    client.force_login(alice)
    assert client.post(leave(kept)).status_code == 404  # not incognito: Delete is for that
    assert client.post(leave(theirs)).status_code == 404
    assert Conversation.objects.filter(pk__in=[secret.pk, kept.pk, theirs.pk]).count() == 3


def test_the_sweep_ends_abandoned_incognito_chats_only(alice, bob, settings):
    settings.CHAT_INCOGNITO_ABANDONED_AFTER = 3600
    old = _incognito(alice, "Hi")
    theirs = _incognito(bob, "Hi")
    fresh = _incognito(alice, "Hello")
    normal = make_conversation(alice, "Normal", "Hi")
    long_ago = timezone.now() - timedelta(hours=2)
    Conversation.objects.filter(pk__in=[old.pk, theirs.pk, normal.pk]).update(updated_at=long_ago)

    assert incognito.sweep_abandoned() == 2

    left = set(Conversation.objects.values_list("pk", flat=True))
    assert left == {fresh.pk, normal.pk}
