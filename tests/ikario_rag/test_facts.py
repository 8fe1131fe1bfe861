"""Fact rules through the MCP tools: dedup (add_thought) and contradictions
(check_consistency), English and French. Examples not in the benchmark sets."""

from __future__ import annotations

import itertools

import pytest

from tests.ikario_rag.conftest import call

_NAMESPACES = itertools.count()


async def _add(client, namespace: str, content: str) -> dict:
    _, added = await call(
        client, "add_thought", content=content, context={"kind": "fact"}, namespace=namespace
    )
    return added


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("Ruth teaches yoga.", "Ruth's husband teaches yoga."),  # a person and a relative
        ("Ma cousine est comptable.", "Le mari de ma cousine est comptable."),
        ("Igor is in the garage.", "Igor's bike is in the garage."),  # an owner and a thing
        ("My grandmother is 87.", "My grandmother is 88."),  # a number
        ("Le concert est le 4 mai.", "Le concert est le 4 juin."),  # a date
        ("My dentist appointment is on Tuesday.", "My dentist appointment is on Friday."),
        ("Ruth lives in Oslo.", "Ruth lives in Bergen."),  # a place
        ("Mon cousin habite à Dijon.", "Mon cousin habite à Metz."),
        ("I eat fish.", "I don't eat fish."),  # negation
        ("Ruth parle russe.", "Ruth ne parle pas russe."),
        ("My phone is black.", "My phone is white."),  # another value
        ("Ivan collects stamps.", "Olga collects stamps."),  # another person
    ],
)
async def test_it_keeps_distinct_facts_apart(client, old, new):
    namespace = f"distinct-{next(_NAMESPACES)}"
    await _add(client, namespace, old)

    added = await _add(client, namespace, new)

    assert added["status"] == "created"
    _, stats = await call(client, "memory_stats", namespace=namespace)
    assert stats["total_memories"] == 2


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("My cousin Ivan lives in Oslo.", "Ivan, my cousin, lives in Oslo."),
        ("I'm scared of spiders.", "I am scared of spiders."),
        ("I adopted a cat.", "I adopted a ginger cat in March."),  # more detail
        ("Je suis allergique aux fraises.", "J'ai une allergie aux fraises."),
        ("Mon cousin Ivan habite à Oslo.", "Ivan, mon cousin, habite à Oslo."),
        ("J'ai adopté un chat.", "J'ai adopté un chat roux en mars."),
    ],
)
async def test_it_merges_a_restatement(client, old, new):
    namespace = f"same-{next(_NAMESPACES)}"
    first = await _add(client, namespace, old)

    added = await _add(client, namespace, new)

    assert added["status"] == "updated" and added["replaced_id"] == first["id"]
    _, recent = await call(client, "get_recent_memories", namespace=namespace)
    assert [m["content"] for m in recent["memories"]] == [new]


@pytest.mark.parametrize(
    ("memory", "statement", "rule"),
    [
        ("Mes cours de chant sont le lundi.", "Mes cours de chant sont le jeudi.", "days"),
        ("The party is on 12 May.", "The party is on 19 May.", "numbers"),
        ("I own 4 bikes.", "I own 6 bikes.", "numbers"),
        ("My cousin Ivan lives in Oslo.", "My cousin Ivan lives in Bergen.", "places"),
        ("I eat fish.", "I don't eat fish.", "polarity"),
        ("The pool is open on Mondays.", "The pool is closed on Mondays.", "antonyms"),
        ("I stopped biting my nails.", "I still bite my nails every day.", "ended habit"),
        ("J'ai arrêté de boire du soda.", "Je bois encore du soda tous les jours.", "ended"),
        ("My partner is vegan.", "My partner eats eggs every morning.", "excluded"),
    ],
)
async def test_it_flags_a_contradiction(client, memory, statement, rule):
    namespace = f"conflict-{next(_NAMESPACES)}"
    await _add(client, namespace, "I bought a new kettle last week.")
    stored = await _add(client, namespace, memory)

    _, out = await call(client, "check_consistency", statement=statement, namespace=namespace)

    assert [c["id"] for c in out["contradictions"]] == [stored["id"]]
    assert rule in out["contradictions"][0]["reason"]
    assert out["consistency_score"] <= 0.5


@pytest.mark.parametrize(
    ("memory", "statement"),
    [
        ("I collect stamps.", "I also collect coins."),  # an addition
        ("Je suis allergique au pollen.", "Je suis aussi allergique aux acariens."),
        ("I like Greek food.", "I like Korean food."),  # a relation with several values
        ("I gave up sugar.", "I quit sugar last spring."),  # the same, said again
        ("My partner is vegan.", "My partner doesn't eat eggs."),
        ("Ruth lives in Oslo.", "Igor lives in Bergen."),  # someone else
    ],
)
async def test_it_does_not_flag_what_agrees_or_adds(client, memory, statement):
    namespace = f"agree-{next(_NAMESPACES)}"
    await _add(client, namespace, memory)

    _, out = await call(client, "check_consistency", statement=statement, namespace=namespace)

    assert out["contradictions"] == []
    assert out["consistency_score"] == 1.0
