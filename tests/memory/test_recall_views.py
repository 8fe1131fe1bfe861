""" "Why did Claude know this?": from an answer, the memories auto-recall gave Claude, with
their text, scores and tokens; a memory deleted since is said so; nobody else's."""

from datetime import timedelta

import pytest
from asgiref.sync import sync_to_async
from django.utils import timezone

from chat.models import Message
from memory.client import services
from memory.models import MemoryRetrieval
from tests.fixtures.builders import make_conversation, send

pytestmark = pytest.mark.django_db(transaction=True)


async def _answered(fake_anthropic, alice, question):
    chat = await sync_to_async(make_conversation)(alice, "Chat")
    fake_anthropic.reply("You ski in Chamonix.")
    await send(chat, question)
    return chat, await Message.objects.aget(conversation=chat, role="assistant")


async def test_it_shows_what_was_recalled_for_an_answer(
    fake_anthropic, alice, alice_client, memory_server
):
    kept = await sync_to_async(services.add_thought)(
        user=alice,
        content="Alice skis in Chamonix every February",
        context={"category": "thematique"},
    )
    chat, answer = await _answered(fake_anthropic, alice, "Where do I go skiing in Chamonix?")

    page = (await sync_to_async(alice_client.get)(f"/c/{chat.pk}/")).content.decode()
    assert f'id="memory-why-{answer.pk}"' in page and "Why did Claude know this?" in page
    html = (await sync_to_async(alice_client.get)(f"/memory/recall/{answer.pk}")).content.decode()

    assert "Alice skis in Chamonix every February" in html
    assert "Where do I go skiing in Chamonix?" in html
    assert 'class="score score-' in html and "%" in html
    assert "tokens)" in html and "badge-thematique" in html

    await sync_to_async(services.delete_memory)(user=alice, memory_id=kept["id"])
    html = (await sync_to_async(alice_client.get)(f"/memory/recall/{answer.pk}")).content.decode()
    assert "This memory was deleted since." in html
    assert "Alice skis in Chamonix every February" not in html


async def test_it_offers_no_why_when_nothing_was_recalled(
    fake_anthropic, alice, alice_client, memory_server
):
    chat, answer = await _answered(fake_anthropic, alice, "Hello there")
    page = (await sync_to_async(alice_client.get)(f"/c/{chat.pk}/")).content.decode()
    assert "memory-why" not in page
    html = (await sync_to_async(alice_client.get)(f"/memory/recall/{answer.pk}")).content.decode()
    assert "No memory was recalled for this answer." in html


async def test_it_keeps_an_answers_recall_from_other_users(
    fake_anthropic, alice, bob_client, memory_server
):
    await sync_to_async(services.add_thought)(user=alice, content="Alice skis in Chamonix")
    chat, answer = await _answered(fake_anthropic, alice, "Where do I ski in Chamonix?")
    question = await Message.objects.aget(conversation=chat, role="user")
    for message_id in (answer.pk, question.pk, 10**12):
        response = await sync_to_async(bob_client.get)(f"/memory/recall/{message_id}")
        assert response.status_code == 404


async def test_it_dates_the_log_and_names_the_memories_of_each_recall(
    fake_anthropic, alice, alice_client, bob_client, memory_server
):
    await sync_to_async(services.add_thought)(user=alice, content="Alice skis in Chamonix")
    await _answered(fake_anthropic, alice, "Where do I ski in Chamonix?")
    retrieval = await MemoryRetrieval.objects.aget(user=alice)

    log = (await sync_to_async(alice_client.get)("/memory/settings/")).content.decode()
    assert "just now" in log and "0 minutes" not in log
    assert f"/memory/recall/log/{retrieval.pk}" in log
    html = (
        await sync_to_async(alice_client.get)(f"/memory/recall/log/{retrieval.pk}")
    ).content.decode()
    assert "Alice skis in Chamonix" in html and "Just now" in html

    await MemoryRetrieval.objects.filter(pk=retrieval.pk).aupdate(
        created_at=timezone.now() - timedelta(hours=3, minutes=5)
    )
    log = (await sync_to_async(alice_client.get)("/memory/settings/")).content.decode()
    assert "3\xa0hours ago" in log
    response = await sync_to_async(bob_client.get)(f"/memory/recall/log/{retrieval.pk}")
    assert response.status_code == 404
