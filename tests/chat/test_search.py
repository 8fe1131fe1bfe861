"""Searching past chats: the FTS index follows the messages, and only the user's own."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chat import search
from chat.models import Message
from tests.fixtures.builders import add_message, make_conversation

pytestmark = pytest.mark.django_db


def found(user, query, **kwargs):
    return [hit.message_id for hit in search.search_messages(user=user, query=query, **kwargs)]


def test_it_finds_a_word_from_an_old_message(alice):
    old = make_conversation(
        alice, "Holidays", "We skied in Chamonix in 2019.", "Nice!", days_ago=400
    )
    for n in range(30):
        make_conversation(alice, f"Chat {n}", f"Something else entirely, number {n}.")
    target = old.messages.get(role="user")

    hits = search.search_messages(user=alice, query="chamonix")

    assert [hit.message_id for hit in hits] == [target.pk]
    hit = hits[0]
    assert (hit.conversation_id, hit.conversation_title, hit.role) == (old.pk, "Holidays", "user")
    assert hit.snippet == "We skied in Chamonix in 2019."
    assert hit.snippet_html == "We skied in <mark>Chamonix</mark> in 2019."
    assert hit.url == f"/c/{old.pk}/?m={target.pk}#message-{target.pk}"


def test_it_follows_edits_and_deletes(alice):
    chat = make_conversation(alice, "Plans")
    message = add_message(chat, "Book the hotel in Lisbon")
    assert found(alice, "lisbon") == [message.pk]

    message.content = "Book the hotel in Porto"
    message.save()
    assert found(alice, "lisbon") == []
    assert found(alice, "porto") == [message.pk]

    Message.objects.filter(pk=message.pk).update(content="Book a flat in Madrid")
    assert found(alice, "porto") == []
    assert found(alice, "madrid") == [message.pk]

    message.delete()
    assert found(alice, "madrid") == []


def test_it_forgets_the_messages_of_a_deleted_conversation(alice):
    chat = make_conversation(alice, "Secret", "The code name is Bluebird.", "Noted: Bluebird.")
    assert len(found(alice, "bluebird")) == 2

    chat.delete()

    assert found(alice, "bluebird") == []


def test_it_indexes_the_answer_once_it_is_written(alice):
    chat = make_conversation(alice, "Q", "What grows in Provence?")
    answer = add_message(chat, "", role="assistant", status="streaming")
    answer.content = "Lavender grows in Provence."
    answer.status = "complete"
    answer.save(update_fields=["content", "status"])

    assert found(alice, "lavender") == [answer.pk]


def test_it_never_shows_another_users_messages(alice, bob):
    mine = make_conversation(alice, "Mine", "My dentist is Dr Okafor.")
    make_conversation(bob, "Bob's", "Bob's dentist is Dr Okafor too.")

    assert found(alice, "okafor") == [mine.messages.get().pk]
    assert len(found(bob, "okafor")) == 1
    assert found(bob, "okafor") != found(alice, "okafor")


def test_it_leaves_out_a_conversation_when_asked(alice):
    here = make_conversation(alice, "Here", "Tell me about volcanoes.")
    there = make_conversation(alice, "There", "Etna is a volcano in Sicily.")

    hits = found(alice, "volcano", exclude_conversation_id=here.pk)

    assert hits == [there.messages.get().pk]


def test_it_matches_every_word_and_the_start_of_longer_ones(alice):
    chat = make_conversation(alice, "Sport", "Skiing in Austria", "Skating in Norway")
    skiing, skating = chat.messages.order_by("id")

    assert found(alice, "ski") == [skiing.pk]
    assert set(found(alice, "sk")) == set()  # two letters: whole words only
    assert found(alice, "skating norway") == [skating.pk]
    assert found(alice, "skating austria") == []
    assert found(alice, "autriche élève") == []


def test_it_folds_accents_and_case(alice):
    chat = make_conversation(alice, "École", "Mon élève préféré s'appelle Zoé.")

    assert found(alice, "ELEVE zoe") == [chat.messages.get().pk]


def test_it_escapes_the_snippet_and_marks_only_the_match(alice):
    make_conversation(alice, "XSS", '<script>alert("pwned")</script> and <b>bold</b> pwned')

    hit = search.search_messages(user=alice, query="pwned")[0]

    assert "<script>" not in hit.snippet_html
    assert hit.snippet_html.count("<mark>") == 2
    stripped = hit.snippet_html.replace("<mark>", "").replace("</mark>", "")
    assert "<" not in stripped and ">" not in stripped
    assert "&lt;script&gt;" in hit.snippet_html


@pytest.mark.parametrize(
    "query",
    [
        '"',
        '"unbalanced',
        "*",
        "ski*",
        "NEAR(ski chamonix, 2)",
        "-ski",
        "content:ski",
        "ski OR",
        "AND",
        "\ud800ski\udfff",
        "ski\x00",
        "x" * 10_000,
        "ski " * 5_000,
        "^ski",
        "{content}: ski",
        "'; DROP TABLE messages; --",
        "",
        "   ",
        None,
        42,
    ],
)
def test_it_never_raises_on_a_hostile_query(alice, query):
    chat = make_conversation(alice, "Snow", "Ski in Chamonix, AND near the lake")

    hits = search.search_messages(user=alice, query=query)

    assert all(hit.conversation_id == chat.pk for hit in hits)
    assert Message.objects.filter(conversation=chat).count() == 1


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(query=st.text(max_size=80))
def test_it_takes_any_text_as_a_query(alice, query):
    hits = search.search_messages(user=alice, query=query)

    assert hits == [] or all(hit.snippet for hit in hits)


def test_it_cuts_a_query_into_quoted_words():
    assert search.search_terms('NEAR("ski" chamonix*) -lake:x') == [
        "near",
        "ski",
        "chamonix",
        "lake",
        "x",
    ]
    assert search.search_terms("\ud800") == []
    assert len(search.search_terms(" ".join(f"w{n}" for n in range(100)))) == search.MAX_TERMS
