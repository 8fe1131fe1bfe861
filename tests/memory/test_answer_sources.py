"""The memories under an answer, each with Not relevant here, Correct and Delete (with Undo),
and the same for a whole conversation from its menu. Through the real turn and the real
ikario_rag: the retrieval log (memory_retrievals) says what auto-recall gave Claude.

The held-out leakage set: preferences that must not colour unrelated requests. After one
"not relevant", the preference is never recalled for the same request, ranks lower for a
similar one, and is still recalled, as before, where it is relevant."""

import pytest
from asgiref.sync import sync_to_async

from chat.models import Message
from memory.client import services
from memory.models import MemoryRetrieval, MemorySettings, NotRelevantRecall
from tests.fixtures.builders import make_conversation, send

pytestmark = pytest.mark.django_db(transaction=True)

# (the preference, an unrelated request it leaks into at the default min_score, a similar
# one, a relevant one): each leak found with the real relevance scorer.
LEAKAGE_SET = [
    (
        "The user prefers answers in French",
        "Tell me about the history of French cuisine",
        "Tell me about the history of French wine",
        "In which language do I like your answers?",
    ),
    (
        "The user is vegan",
        "Recommend a restaurant for a business dinner with clients",
        "Recommend a quiet restaurant for a dinner with my clients",
        "What could I cook for myself tonight, given my diet?",
    ),
    (
        "The user loves horror movies",
        "Suggest a movie to watch with my 6 year old",
        "Suggest a movie to watch with my 8 year old daughter",
        "Which horror film should I watch tonight?",
    ),
]


@pytest.fixture
def everything_recalled(alice, memory_server):
    """Every memory scored is logged (min_score 0): "recalled less" is a lower score."""
    MemorySettings.objects.update_or_create(
        user=alice, defaults={"min_score": 0.0, "max_results": 10}
    )
    return alice


async def _score(user, request, memory_id):
    """What auto-recall gave this memory for `request` in a new chat (None: left out)."""
    chat = await sync_to_async(make_conversation)(user, "Chat")
    await send(chat, request)
    retrieval = await MemoryRetrieval.objects.filter(conversation=chat).alatest("id")
    return retrieval, next((m["score"] for m in retrieval.memories if m["id"] == memory_id), None)


@pytest.mark.parametrize(("preference", "unrelated", "similar", "relevant"), LEAKAGE_SET)
async def test_it_recalls_a_preference_less_once_it_was_not_relevant(
    fake_anthropic, everything_recalled, alice_client, preference, unrelated, similar, relevant
):
    alice = everything_recalled
    memory = await sync_to_async(services.add_thought)(
        user=alice, content=preference, context={"kind": "preference"}
    )
    retrieval, before = await _score(alice, unrelated, memory["id"])
    _, similar_before = await _score(alice, similar, memory["id"])
    _, relevant_before = await _score(alice, relevant, memory["id"])
    assert before >= 0.5  # it leaks: recalled at the default min_score
    assert similar_before is not None and relevant_before is not None

    url = f"/memory/sources/answer/{retrieval.pk}/{memory['id']}/not-relevant"
    html = (await sync_to_async(alice_client.post)(url)).content.decode()
    assert "Relevant after all" in html and preference in html

    _, again = await _score(alice, unrelated, memory["id"])
    _, similar_after = await _score(alice, similar, memory["id"])
    _, relevant_after = await _score(alice, relevant, memory["id"])
    assert again is None  # never for the same request
    # Recalled less for a similar request: here, below the default min_score.
    assert similar_after is None or similar_after < min(similar_before, 0.5)
    assert relevant_after == relevant_before  # still recalled where it is relevant
    # Kept: the memory itself is untouched.
    got = await sync_to_async(services.get_memories)(user=alice, ids=[memory["id"]])
    assert [m["content"] for m in got["memories"]] == [preference]


async def _answered(fake_anthropic, alice, question):
    chat = await sync_to_async(make_conversation)(alice, "Chat")
    fake_anthropic.reply("Noted.")
    await send(chat, question)
    answer = await Message.objects.aget(conversation=chat, role="assistant")
    return chat, answer, await MemoryRetrieval.objects.aget(conversation=chat)


async def test_it_offers_the_three_actions_under_an_answer_and_escapes(
    fake_anthropic, alice, alice_client, memory_server
):
    await sync_to_async(services.add_thought)(
        user=alice, content="Alice skis in Chamonix <b>every</b> February"
    )
    chat, answer, retrieval = await _answered(fake_anthropic, alice, "Where do I ski?")
    html = (await sync_to_async(alice_client.get)(f"/memory/recall/{answer.pk}")).content.decode()
    assert "Not relevant here" in html and ">Correct<" in html and ">Delete<" in html
    assert "&lt;b&gt;every&lt;/b&gt;" in html and "<b>every" not in html


async def test_it_corrects_a_memory_in_place_keeping_its_history(
    fake_anthropic, alice, alice_client, memory_server
):
    kept = await sync_to_async(services.add_thought)(user=alice, content="Alice skis in Chamonix")
    chat, answer, retrieval = await _answered(fake_anthropic, alice, "Where do I ski?")
    url = f"/memory/sources/answer/{retrieval.pk}/{kept['id']}/correct"

    form = (await sync_to_async(alice_client.get)(url)).content.decode()
    assert 'name="content"' in form and "Alice skis in Chamonix" in form
    empty = await sync_to_async(alice_client.post)(url, {"content": ""})
    assert empty.status_code == 400 and "Memory: This field is required." in empty.content.decode()
    done = await sync_to_async(alice_client.post)(url, {"content": "Alice skis in Val d'Isère"})

    assert "Corrected." in done.content.decode()
    got = await sync_to_async(services.get_memories)(
        user=alice, ids=[kept["id"]], with_history=True
    )
    record = got["memories"][0]
    assert record["content"] == "Alice skis in Val d'Isère"
    assert "Alice skis in Chamonix" in str(record.get("history"))


async def test_it_deletes_a_memory_with_undo(fake_anthropic, alice, alice_client, memory_server):
    kept = await sync_to_async(services.add_thought)(user=alice, content="Alice skis in Chamonix")
    chat, answer, retrieval = await _answered(fake_anthropic, alice, "Where do I ski?")
    base = f"/memory/sources/answer/{retrieval.pk}/{kept['id']}/"

    html = (await sync_to_async(alice_client.post)(base + "delete")).content.decode()
    assert "Memory deleted." in html and "Undo" in html
    left = await sync_to_async(services.list_memories)(user=alice)
    assert kept["id"] not in [m["id"] for m in left["memories"]]

    html = (await sync_to_async(alice_client.post)(base + "undo")).content.decode()
    assert "Alice skis in Chamonix" in html
    got = await sync_to_async(services.get_memories)(user=alice, ids=[kept["id"]])
    assert [m["content"] for m in got["memories"]] == ["Alice skis in Chamonix"]


async def test_it_lists_a_whole_conversations_memories_from_its_menu(
    fake_anthropic, alice, alice_client, memory_server
):
    kept = await sync_to_async(services.add_thought)(user=alice, content="Alice skis in Chamonix")
    chat, answer, retrieval = await _answered(fake_anthropic, alice, "Where do I ski?")
    fake_anthropic.reply("In February.")
    await send(chat, "And when do I ski in Chamonix?")

    page = (await sync_to_async(alice_client.get)(f"/c/{chat.pk}/")).content.decode()
    assert f'id="memory-sources-{chat.pk}"' in page
    html = (
        await sync_to_async(alice_client.get)(f"/memory/sources/chat/{chat.pk}")
    ).content.decode()
    assert html.count("Alice skis in Chamonix") == 1

    await sync_to_async(alice_client.post)(
        f"/memory/sources/chat/{chat.pk}/{kept['id']}/not-relevant"
    )
    queries = {q async for q in NotRelevantRecall.objects.values_list("query", flat=True)}
    assert queries == {"Where do I ski?", "And when do I ski in Chamonix?"}


async def test_it_keeps_each_users_sources_to_themselves(
    fake_anthropic, alice, alice_client, bob_client, memory_server
):
    kept = await sync_to_async(services.add_thought)(user=alice, content="Alice skis in Chamonix")
    chat, answer, retrieval = await _answered(fake_anthropic, alice, "Where do I ski?")
    for url in (
        f"/memory/sources/answer/{retrieval.pk}/{kept['id']}/not-relevant",
        f"/memory/sources/answer/{retrieval.pk}/{kept['id']}/delete",
        f"/memory/sources/chat/{chat.pk}/{kept['id']}/not-relevant",
    ):
        assert (await sync_to_async(bob_client.post)(url)).status_code == 404
    assert (
        await sync_to_async(bob_client.get)(f"/memory/sources/chat/{chat.pk}")
    ).status_code == 404
    assert not await NotRelevantRecall.objects.aexists()
    got = await sync_to_async(services.get_memories)(user=alice, ids=[kept["id"]])
    assert len(got["memories"]) == 1
