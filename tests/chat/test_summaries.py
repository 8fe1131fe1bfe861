"""Summaries of long conversations: one per exchange, folded past 5,000 characters."""

import pytest

from chat import extractive, summaries
from chat.models import ConversationSummary
from tests.fixtures.builders import add_message, make_conversation
from tests.fixtures.long_chat import exchange_texts, make_long_conversation

pytestmark = pytest.mark.django_db


@pytest.fixture
def offline(settings):
    settings.ANTHROPIC_API_KEY = ""


def add_exchange(chat, n, **answer_fields):
    question, answer = exchange_texts(n)
    add_message(chat, question)
    return add_message(chat, answer, role="assistant", **answer_fields)


def summary_rows(chat, level=None):
    rows = ConversationSummary.objects.filter(conversation=chat).order_by("level", "id")
    return list(rows.filter(level=level) if level else rows)


def test_it_summarises_each_exchange_and_folds_past_5000_characters(alice, offline):
    chat = make_conversation(alice, "Trips")
    total, n = 0, 0
    while total + sum(map(len, exchange_texts(n))) <= 5_000:
        total += sum(map(len, exchange_texts(n)))
        add_exchange(chat, n)
        summaries.update_summaries(conversation_id=chat.pk)
        assert len(summary_rows(chat, 1)) == n + 1
        assert not summary_rows(chat, 2), f"folded at {total} characters"
        n += 1
    level1 = summary_rows(chat, 1)
    assert [s.method for s in level1] == ["extractive"] * n
    assert "Zanzibar" in level1[0].text and "Reykjavik" in level1[1].text

    add_exchange(chat, n)  # now past 5,000 characters not yet in a level-2 summary
    summaries.update_summaries(conversation_id=chat.pk)

    (level2,) = summary_rows(chat, 2)
    level1 = summary_rows(chat, 1)
    assert len(level1) == n + 1 and {s.parent_id for s in level1} == {level2.pk}
    assert level2.source_chars == sum(s.source_chars for s in level1) > 5_000
    assert (level2.first_message_id, level2.last_message_id) == (
        level1[0].first_message_id,
        level1[-1].last_message_id,
    )
    assert level2.exchanges == n + 1
    assert len(level2.text) < sum(len(s.text) for s in level1)


def test_it_makes_each_summary_once(alice, offline):
    chat = make_long_conversation(alice, messages=60)

    first = summaries.update_summaries(conversation_id=chat.pk)
    again = summaries.update_summaries(conversation_id=chat.pk)

    assert first == len(summary_rows(chat)) > 30
    assert again == 0


def test_it_folds_level_after_level_as_the_conversation_grows(alice, offline):
    chat = make_long_conversation(alice, messages=300)

    summaries.update_summaries(conversation_id=chat.pk)

    tops = summaries.tops(chat.pk)
    assert max(s.level for s in tops) >= 3
    # The tops cover every exchange once, in order.
    assert sum(s.exchanges for s in tops) == 150
    assert all(a.last_message_id < b.first_message_id for a, b in zip(tops, tops[1:], strict=False))
    assert sum(len(s.text) for s in tops) < 8_000  # of 160,000 characters of conversation


def test_it_waits_for_an_answer_to_be_over(alice, offline):
    chat = make_conversation(alice, "Chat")
    add_exchange(chat, 0)
    add_exchange(chat, 1, status="streaming")
    summaries.update_summaries(conversation_id=chat.pk)
    assert len(summary_rows(chat, 1)) == 1

    stopped = chat.messages.get(status="streaming")
    stopped.status = "stopped"
    stopped.save()
    summaries.update_summaries(conversation_id=chat.pk)
    assert len(summary_rows(chat, 1)) == 1  # the user may still retry it

    add_message(chat, "Never mind, next question.")
    summaries.update_summaries(conversation_id=chat.pk)
    assert len(summary_rows(chat, 1)) == 2


def test_it_leaves_failed_answers_out(alice, offline):
    chat = make_conversation(alice, "Chat", "Hello there, I plan a trip to Oslo.")
    add_message(chat, "", role="assistant", status="error", error="API down")
    add_message(chat, "Partial answer about Oslo", role="assistant", status="complete")

    summaries.update_summaries(conversation_id=chat.pk)

    (only,) = summary_rows(chat, 1)
    assert "Oslo" in only.text and "API down" not in only.text


class RacingSummarizer(summaries.ExtractiveSummarizer):
    """Runs a whole second update while its first fold is being written: two jobs at once."""

    def __init__(self, conversation_id):
        self.conversation_id = conversation_id
        self.raced = False

    def fold(self, texts):
        if not self.raced:
            self.raced = True
            summaries.update_summaries(
                conversation_id=self.conversation_id, summarizer=summaries.ExtractiveSummarizer()
            )
        return super().fold(texts)


def test_it_stores_no_double_when_two_jobs_run_at_once(alice, offline):
    chat = make_long_conversation(alice, messages=80)

    summaries.update_summaries(conversation_id=chat.pk, summarizer=RacingSummarizer(chat.pk))

    tops = summaries.tops(chat.pk)
    assert sum(s.exchanges for s in tops) == 40
    level1 = summary_rows(chat, 1)
    assert len(level1) == len({s.last_message_id for s in level1}) == 40
    for level in (2, 3):
        rows = summary_rows(chat, level)
        children = [c for s in rows for c in s.children.all()]
        assert len(children) == len(set(children))


def test_it_asks_the_small_model_when_a_key_is_set(fake_anthropic, settings, alice):
    settings.CHAT_SUMMARY_MODEL = "claude-haiku-5-5"
    chat = make_conversation(alice, "Chat")
    add_exchange(chat, 0)
    fake_anthropic.reply("Alice plans a 3-day sailing trip around Zanzibar on 400 euros.")

    summaries.update_summaries(conversation_id=chat.pk)

    (summary,) = summary_rows(chat, 1)
    assert summary.text == "Alice plans a 3-day sailing trip around Zanzibar on 400 euros."
    assert summary.method == "llm"
    request = fake_anthropic.requests[0]
    assert request["model"] == "claude-haiku-5-5"
    assert "stream" not in request or request["stream"] is False
    assert exchange_texts(0)[0] in request["messages"][0]["content"]
    assert "Keep every name, number" in request["system"]


def test_it_falls_back_to_extracts_when_the_model_fails(fake_anthropic, settings, alice):
    settings.ANTHROPIC_MAX_RETRIES = 0
    chat = make_conversation(alice, "Chat")
    add_exchange(chat, 0)
    fake_anthropic.fail(529, "overloaded_error", "Overloaded")

    summaries.update_summaries(conversation_id=chat.pk)

    (summary,) = summary_rows(chat, 1)
    assert summary.method == "extractive"
    assert "Zanzibar" in summary.text


def test_it_extracts_the_sentences_that_carry_the_most():
    text = (
        "Hello! Thanks for asking. "
        "We booked the chalet in Morzine for 6 nights from 14 February 2026, for 1,450 euros. "
        "The weather was nice. "
        "Claire and Tom will drive from Lyon; the chalet sleeps 8 and has a sauna."
    )

    short = extractive.extract(text, limit=200)

    assert len(short) <= 200
    assert "Morzine" in short and "1,450 euros" in short
    assert "Thanks for asking" not in short
    assert extractive.extract(text, limit=200) == short  # deterministic
    assert extractive.extract("Short and sweet.", limit=200) == "Short and sweet."


def test_it_keeps_names_and_numbers_that_did_not_fit():
    text = (
        "The long and winding explanation of the whole itinerary goes on for quite a while. "
        "Meet Dr Okafor at Gare du Nord. The train leaves at 9:40."
    )

    short = extractive.extract(text, limit=110)

    assert len(short) <= 110
    for kept in ("Okafor", "Gare", "9:40"):
        assert kept in short


def test_it_summarises_an_exchange_by_both_sides():
    text = extractive.summarize_exchange(
        "Can you remind me which **train** we take to Annecy? ```code block```",
        "You take the TGV from Paris Gare de Lyon at 7:56, arriving at 11:40. "
        + "It is a pleasant ride. " * 20,
        limit=300,
    )

    user, answer = text.split("\n")
    assert user.startswith("User: ") and "Annecy" in user and "**" not in user
    assert answer.startswith("Assistant: ") and "7:56" in answer
    assert len(text) <= 330


def test_it_never_summarises_what_the_user_marked_private(alice, offline):
    chat = make_conversation(
        alice,
        "Chat",
        "I moved to Bergen. <PRIVATE>My salary is 91,000 euros.</private> Any tips?",
        "Welcome to Bergen! <private>Noted the salary.",
    )

    summaries.update_summaries(conversation_id=chat.pk)

    (summary,) = summary_rows(chat, 1)
    assert "Bergen" in summary.text
    assert "91,000" not in summary.text and "salary" not in summary.text


def test_it_strips_private_spans_however_they_are_written():
    from chat.private import strip_private

    def words(text):
        return strip_private(text).split()

    assert words("a <private>b</private> c") == ["a", "c"]
    assert words("a < PRIVATE class='x'>b<private>c</private>d</ private > e") == ["a", "e"]
    assert words("a &lt;private&gt;b&lt;/private&gt; c") == ["a", "c"]
    assert words("a <private>never closed") == ["a"]
    assert strip_private("nothing private here") == "nothing private here"
