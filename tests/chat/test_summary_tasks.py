"""Summaries in the background: enqueued after each answer, made by the worker."""

import pytest
from asgiref.sync import sync_to_async
from django_tasks_db.models import DBTaskResult

from chat import tasks
from chat.models import ConversationSummary
from memory.worker import database
from tests.fixtures.builders import make_conversation, send
from tests.fixtures.fake_anthropic import Reply, TextBlock
from tests.fixtures.long_chat import make_long_conversation

pytestmark = pytest.mark.django_db(transaction=True)


async def summary_jobs():
    return [
        row
        async for row in DBTaskResult.objects.filter(task_path="chat.tasks.summarize_conversation")
    ]


def level_one(chat):
    return ConversationSummary.objects.filter(conversation=chat, level=1).order_by("id")


def summary_reply(body):
    """The fake small model: names the question it summarised."""
    text = body["messages"][0]["content"]
    asked = text.split("Question ")[1].split(":")[0] if "Question " in text else "?"
    return Reply([TextBlock(f"Summary of question {asked}.")])


async def test_it_summarises_a_long_conversation_in_the_background_with_the_small_model(
    fake_anthropic, alice, settings
):
    settings.CHAT_SUMMARY_MODEL = "claude-haiku-5-5"
    chat = await sync_to_async(make_long_conversation)(alice, messages=10)  # > 5,000 chars
    fake_anthropic.reply("Take the night train to Vienna, it leaves at 21:40.")

    await send(chat, "How do I get to Vienna from Zurich?")

    (job,) = await summary_jobs()
    assert job.args_kwargs["args"] == [chat.pk]
    assert not await ConversationSummary.objects.filter(conversation=chat).aexists()
    fake_anthropic.respond_with(summary_reply)

    await sync_to_async(database.run_ready_tasks)()

    level1 = [s async for s in level_one(chat)]
    assert [s.text for s in level1[:5]] == [f"Summary of question {n}." for n in range(5)]
    assert len(level1) == 6 and {s.method for s in level1} == {"llm"}
    assert await ConversationSummary.objects.filter(conversation=chat, level=2).aexists()
    summary_requests = fake_anthropic.requests[1:]
    assert {r["model"] for r in summary_requests} == {"claude-haiku-5-5"}
    assert any("How do I get to Vienna" in r["messages"][0]["content"] for r in summary_requests)


async def test_it_leaves_a_short_conversation_unsummarised(fake_anthropic, alice):
    chat = await sync_to_async(make_conversation)(alice, "Short", "Hi", "Hello!")

    await send(chat, "How are you?")

    assert await summary_jobs() == []


async def test_it_summarises_extractively_without_a_key(settings, alice):
    settings.ANTHROPIC_API_KEY = ""
    chat = await sync_to_async(make_long_conversation)(alice, messages=10)

    await send(chat, "Remind me: the Vienna train leaves Zurich at 21:40.")
    await sync_to_async(database.run_ready_tasks)()

    level1 = [s async for s in level_one(chat)]
    assert len(level1) == 6  # the offline responder's answer closes the sixth exchange
    assert {s.method for s in level1} == {"extractive"}
    assert "Zanzibar" in level1[0].text and "21:40" in level1[-1].text


async def test_it_enqueues_nothing_after_a_failed_answer(fake_anthropic, alice, settings):
    settings.ANTHROPIC_MAX_RETRIES = 0
    chat = await sync_to_async(make_conversation)(alice, "Plans")
    fake_anthropic.fail(500, "api_error", "Down")

    events = await send(chat, "Hello?")

    assert events[-1].kind == "error"
    assert await summary_jobs() == []


def test_it_does_nothing_for_a_deleted_conversation(alice, settings):
    settings.ANTHROPIC_API_KEY = ""
    chat = make_conversation(alice, "Gone", "Question?", "Answer.")
    chat_id = chat.pk
    chat.delete()

    assert tasks.summarize_conversation.call(chat_id) == 0


def test_it_stores_nothing_twice_when_the_job_runs_again(alice, settings):
    settings.ANTHROPIC_API_KEY = ""
    chat = make_conversation(alice, "Twice", "Question about Oslo?", "Oslo is in Norway.")

    assert tasks.summarize_conversation.call(chat.pk) == 1
    assert tasks.summarize_conversation.call(chat.pk) == 0
    assert ConversationSummary.objects.filter(conversation=chat).count() == 1
