"""Summaries in the background: enqueued after each answer, made by the worker."""

import pytest
from asgiref.sync import sync_to_async
from django_tasks_db.models import DBTaskResult

from chat import tasks
from chat.models import ConversationSummary
from memory import worker
from tests.fixtures.builders import make_conversation, send

pytestmark = pytest.mark.django_db(transaction=True)


async def summary_jobs():
    return [
        row
        async for row in DBTaskResult.objects.filter(task_path="chat.tasks.summarize_conversation")
    ]


async def test_it_summarises_an_answer_in_the_background_with_the_small_model(
    fake_anthropic, alice, settings
):
    settings.CHAT_SUMMARY_MODEL = "claude-haiku-5-5"
    chat = await sync_to_async(make_conversation)(alice, "Plans")
    fake_anthropic.reply("Take the night train to Vienna, it leaves at 21:40.")

    await send(chat, "How do I get to Vienna from Zurich?")

    (job,) = await summary_jobs()
    assert job.args_kwargs["args"] == [chat.pk]
    assert not await ConversationSummary.objects.filter(conversation=chat).aexists()
    fake_anthropic.reply("The user asked how to reach Vienna; night train at 21:40.")

    await sync_to_async(worker.run_ready_tasks)()

    summary = await ConversationSummary.objects.aget(conversation=chat)
    assert (summary.level, summary.method) == (1, "llm")
    assert summary.text == "The user asked how to reach Vienna; night train at 21:40."
    request = fake_anthropic.requests[-1]
    assert request["model"] == "claude-haiku-5-5"
    assert "How do I get to Vienna from Zurich?" in request["messages"][0]["content"]


async def test_it_summarises_extractively_without_a_key(settings, alice):
    settings.ANTHROPIC_API_KEY = ""
    chat = await sync_to_async(make_conversation)(alice, "Plans")

    await send(chat, "Remind me: the Vienna train leaves Zurich at 21:40.")
    await sync_to_async(worker.run_ready_tasks)()

    summary = await ConversationSummary.objects.aget(conversation=chat)
    assert summary.method == "extractive"
    assert "21:40" in summary.text


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
