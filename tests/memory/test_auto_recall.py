"""Auto-recall decides with more than the nearest vector: names and words the message shares
with a fact, who the fact is about, the life domain it constrains, and what the user said
just before. Through the real turn: facts stored with memory.client.services in the real
ikario_rag, the message through chat's turn, the system prompt read from what the SDK sent.
Examples not in the benchmark sets (bench/quality/)."""

import pytest
from asgiref.sync import sync_to_async

from memory.client import services
from memory.recall.prompts import BLOCK_TAG
from tests.fixtures.builders import make_conversation, send

pytestmark = pytest.mark.django_db(transaction=True)

OPEN = f"\n<{BLOCK_TAG}>\n"
GODSON = "My godson Theo is allergic to kiwi."
AMOXICILLIN = "Je suis allergique à l'amoxicilline."
AUNT = "Beatrice, my aunt, runs a bookshop in Galway."
COELIAC = "Ma tante Colette est cœliaque."
SHED = "I repaired the garden shed with reclaimed wood."


@pytest.fixture
def facts(alice, memory_server):
    for content in (GODSON, AMOXICILLIN, AUNT, COELIAC, SHED):
        services.add_thought(user=alice, content=content, context={"kind": "fact"})
    return alice


def recalled(fake_anthropic) -> str:
    system = fake_anthropic.last_request["system"]
    return system.split(OPEN)[1] if OPEN in system else ""


@pytest.mark.parametrize(
    ("message", "needed"),
    [
        ("I'm cooking dinner for my godson on Friday, any dessert ideas?", GODSON),
        (
            "J'ai une otite et le médecin veut me prescrire un antibiotique, "
            "je dois lui dire quelque chose ?",
            AMOXICILLIN,
        ),
        ("What do you know about Beatrice?", AUNT),
        ("Qu'est-ce que je t'ai dit sur ma tante Colette ?", COELIAC),
    ],
    ids=["meal for a godson with an allergy", "medical question, drug allergy", "a person", "fr"],
)
async def test_it_recalls_the_fact_a_message_needs(fake_anthropic, facts, message, needed):
    chat = await sync_to_async(make_conversation)(facts, "New chat")

    await send(chat, message)

    block = recalled(fake_anthropic)
    assert needed in block
    assert SHED not in block


@pytest.mark.parametrize(
    "message",
    [
        "Good evening, how's it going?",
        "Merci, bonne soirée !",
        "What's the capital of Portugal?",
        "Écris un poème sur les nuages.",
        "test test test test",
        "qsdfg hjklm",
    ],
)
async def test_it_recalls_nothing_for_small_talk_and_junk(fake_anthropic, facts, message):
    chat = await sync_to_async(make_conversation)(facts, "New chat")

    await send(chat, message)

    assert recalled(fake_anthropic) == ""


async def test_it_reads_a_follow_up_with_what_the_user_said_before(fake_anthropic, facts):
    chat = await sync_to_async(make_conversation)(
        facts, "Visit", "Ma tante vient déjeuner dimanche.", "Quelle bonne nouvelle !"
    )

    await send(chat, "Qu'est-ce que je pourrais lui préparer ?")

    assert COELIAC in recalled(fake_anthropic)


async def test_it_does_not_carry_the_previous_subject_into_a_new_one(fake_anthropic, facts):
    chat = await sync_to_async(make_conversation)(
        facts, "Visit", "Tell me about my aunt Beatrice.", "She runs a bookshop in Galway."
    )

    await send(chat, "Write a limerick about a walrus.")

    assert recalled(fake_anthropic) == ""


def test_a_fact_that_stands_out_below_the_cut_is_kept_alone_noise_is_not():
    from memory.recall.retrieval import standout

    def found(*scores, kind="self"):
        return [{"relevance_score": s, "metadata": {"kind": kind}} for s in scores]

    # "What can I order at the pizzeria?" and "has been gluten-free since 2020".
    assert standout(found(0.2089, 0.0063, 0.0061), 0.5) == found(0.2089)
    # "hello", "write a haiku about the sea": every fact at noise level.
    assert standout(found(0.0126, 0.0116, 0.0112), 0.5) == []
    assert standout(found(0.2, 0.1), 0.5) == []  # two alike: none stands out
    assert standout(found(0.3, 0.01, kind="conversation"), 0.5) == []  # facts only
    assert standout(found(0.3, 0.01), 0.8) == []  # a stricter gate is the user's
    # Not a question: "Bonne nuit" and a night nurse's job.
    assert standout(found(0.1776, 0.0068), 0.5, "Bonne nuit") == []
