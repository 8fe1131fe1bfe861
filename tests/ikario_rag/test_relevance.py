"""relevance_score: one meaning in every mode and for every query length (0.5 = relevant).

Examples here are not in the benchmark sets (bench/quality/)."""

from __future__ import annotations

import pytest

from ikario_rag import contract
from tests.ikario_rag.conftest import call

MODES = ["hybrid", "semantic", "text"]
CLOCKS = "Noah restores antique clocks in his workshop behind the bakery"
BEES = "Ma voisine Odile élève des abeilles sur le toit de son immeuble"
UNRELATED = "The quarterly tax return is due at the end of the month"
LONG_QUERY = (
    "I found an old pendulum clock at a flea market last weekend and it stopped ticking "
    "after a day; the glass is cracked and one hand is bent, so before I spend money on it "
    "I would like to know who could look at the clocks and tell me whether it is worth "
    "restoring at all"
)


async def _store(client, *contents):
    ids = {}
    for content in contents:
        _, added = await call(client, "add_thought", content=content, context={"kind": "fact"})
        ids[content] = added["id"]
    return ids


def _scores(found) -> dict[str, float]:
    return {r["content"]: r["relevance_score"] for r in found["results"]}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("query", ["clocks", LONG_QUERY], ids=["one word", "forty words"])
async def test_it_scores_the_answering_memory_above_the_threshold(client, mode, query):
    await _store(client, CLOCKS, UNRELATED, BEES)

    _, found = await call(client, "search_memories", query=query, mode=mode, n_results=5)

    scores = _scores(found)
    assert scores[CLOCKS] >= contract.RELEVANT
    assert scores.get(UNRELATED, 0.0) < contract.RELEVANT
    assert scores.get(BEES, 0.0) < contract.RELEVANT


@pytest.mark.parametrize("mode", MODES)
async def test_it_scores_a_french_memory_for_a_french_question_in_every_mode(client, mode):
    await _store(client, CLOCKS, UNRELATED, BEES)

    _, found = await call(
        client, "search_memories", query="Que sais-tu d'Odile ?", mode=mode, n_results=5
    )

    scores = _scores(found)
    assert scores[BEES] >= contract.RELEVANT
    assert all(score < contract.RELEVANT for text, score in scores.items() if text != BEES)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("query", ["clocks clocks clocks clocks", "the", "le", "???"])
async def test_it_matches_nothing_for_a_query_that_says_nothing(client, mode, query):
    await _store(client, CLOCKS, BEES)

    _, found = await call(client, "search_memories", query=query, mode=mode)

    assert found["results"] == []


@pytest.mark.parametrize("mode", MODES)
async def test_it_still_searches_a_query_of_chat_words(client, mode):
    # "remember" and "hello" say nothing of a topic for auto-recall, but a user searching
    # their memories for the word must still find the memory that holds it.
    note = "Granny asked us to remember her hello-kitty teapot when we clear the attic"
    await _store(client, note, BEES, UNRELATED)

    _, found = await call(client, "search_memories", query="remember", mode=mode)

    assert note in [r["content"] for r in found["results"]]


@pytest.mark.parametrize("mode", MODES)
async def test_it_finds_nothing_relevant_for_keyboard_noise(client, mode):
    await _store(client, CLOCKS, BEES, UNRELATED)

    _, found = await call(client, "search_memories", query="qsdfg hjklm", mode=mode)

    assert all(r["relevance_score"] < contract.RELEVANT for r in found["results"])


async def test_it_links_a_meal_to_an_allergy_of_the_person_it_is_for(client):
    allergy = "My nephew Felix cannot eat sesame, he is allergic"
    await _store(client, allergy, CLOCKS, "My nephew Felix plays handball on Wednesdays")

    _, meal = await call(
        client, "search_memories", query="I'm baking for my nephew's party, what can I make?"
    )
    _, mine = await call(client, "search_memories", query="What should I bake this weekend?")

    assert _scores(meal)[allergy] >= contract.RELEVANT
    # The nephew's allergy is not the user's: a meal for nobody in particular does not need it.
    assert _scores(mine).get(allergy, 0.0) < contract.RELEVANT


# A saved exchange (kind conversation) is long: it shares some words with many queries by
# chance, but not every keyword of a query.
JAZZ_CHAT = (
    "User: What could I put on tonight? Assistant: For something mellow, try classic jazz: "
    "Kind of Blue by Miles Davis, or Bill Evans at the Village Vanguard, and for something "
    "newer Kamasi Washington."
)
SINTRA_CHAT = (
    "User: Any idea for a day out from Lisbon? Assistant: Sintra is lovely: the Pena Palace, "
    "the Moorish castle and Quinta da Regaleira are close to the old town; the train from "
    "Rossio takes forty minutes, go early on a weekday."
)
SINTRA_NOTE = "Le week-end dernier à Sintra, il a plu sans arrêt mais le palais valait le détour."


async def _store_as(client, kind, *contents):
    for content in contents:
        await call(client, "add_thought", content=content, context={"kind": kind})


@pytest.mark.parametrize("mode", MODES)
async def test_a_saved_exchange_holding_the_querys_only_keyword_is_relevant(client, memory, mode):
    await _store_as(client, "conversation", JAZZ_CHAT, SINTRA_CHAT)
    await _store(client, CLOCKS, UNRELATED)
    memory.flush()  # exchanges get their vectors behind the add: semantic mode needs them

    _, found = await call(client, "search_memories", query="jazz", mode=mode, n_results=10)

    scores = _scores(found)
    assert scores[JAZZ_CHAT] >= contract.RELEVANT
    assert all(score < contract.RELEVANT for text, score in scores.items() if text != JAZZ_CHAT)


@pytest.mark.parametrize("topic", ["Sintra", "sintra"])
async def test_forgetting_a_place_finds_every_memory_that_names_it(client, memory, topic):
    await _store_as(client, "conversation", SINTRA_CHAT, JAZZ_CHAT)
    await _store_as(client, "observation", SINTRA_NOTE)
    await _store(client, CLOCKS, BEES, UNRELATED)
    memory.flush()  # every vector written: the vector side is part of what is tested

    _, preview = await call(client, "forget", topic=topic, dry_run=True)

    assert sorted(m["content"] for m in preview["removed"]) == sorted([SINTRA_CHAT, SINTRA_NOTE])


@pytest.mark.parametrize(
    "query, needed",
    [
        ("Any tips for my language exchange tonight?", "The user is learning Portuguese."),
        ("Is there a nice bakery nearby?", "The user lives in Ghent."),
        ("Should I call my family this weekend?", "The user's brother Tomas lives in Oslo."),
    ],
)
async def test_a_fact_bearing_on_what_the_message_is_about_scores_as_relevant(
    client, query, needed
):
    """No word shared: the message is about a language, somewhere nearby, the family; the
    fact is the language learnt, where the user lives, a relative."""
    await _store(client, needed, UNRELATED, BEES)

    _, found = await call(client, "search_memories", query=query, n_results=5)

    scores = _scores(found)
    assert scores[needed] >= contract.RELEVANT
    assert all(score < contract.RELEVANT for text, score in scores.items() if text != needed)


async def test_a_relatives_home_is_not_where_the_user_lives(client):
    await _store(client, "The user's brother Tomas lives in Oslo.")

    _, found = await call(client, "search_memories", query="Is there a nice bakery nearby?")

    assert all(score < contract.RELEVANT for score in _scores(found).values())
