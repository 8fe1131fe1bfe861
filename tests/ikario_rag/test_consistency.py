"""The consistency check (issue 23): a contradiction the rules can name is flagged, what
they cannot judge is "unknown" rather than a confident 100 %, and who a statement is about
comes first. Through the MCP tool, then the rules alone. Examples not in the benchmark sets
(the three of the issue aside)."""

from __future__ import annotations

import itertools

import pytest

from ikario_rag import consistency
from tests.ikario_rag.conftest import call

_NAMESPACES = itertools.count()


async def _check(client, memory: str, statement: str) -> tuple[dict, dict]:
    namespace = f"consistency-{next(_NAMESPACES)}"
    for noise in ("I bought a new kettle last week.", "J'ai repeint le salon en vert."):
        await call(client, "add_thought", content=noise, namespace=namespace)
    _, stored = await call(client, "add_thought", content=memory, namespace=namespace)
    _, out = await call(client, "check_consistency", statement=statement, namespace=namespace)
    return stored, out


def _ids(findings: list[dict]) -> list[str]:
    return [f["id"] for f in findings]


async def test_two_jobs_of_one_person_contradict(client):
    stored, out = await _check(client, "Sophie works as a nurse.", "Sophie works as a lawyer.")

    assert _ids(out["contradictions"]) == [stored["id"]]
    assert "job" in out["contradictions"][0]["reason"]
    assert out["verdict"] == "contradicted" and out["consistency_score"] <= 0.5


async def test_an_allergy_contradicts_loving_that_food_and_never_supports_it(client):
    stored, out = await _check(
        client, "Claire is allergic to peanuts.", "My sister Claire loves peanut butter."
    )

    assert _ids(out["contradictions"]) == [stored["id"]]
    assert "allergy" in out["contradictions"][0]["reason"]
    assert out["supporting"] == []
    assert out["consistency_score"] <= 0.5


async def test_denying_one_drink_does_not_contradict_another(client):
    stored, out = await _check(client, "Léa never drinks coffee.", "Léa drinks green tea.")

    assert out["contradictions"] == []


async def test_what_no_rule_knows_is_unknown_not_a_confident_100(client):
    stored, out = await _check(client, "Léa never drinks coffee.", "Léa drinks green tea.")

    assert _ids(out["undetermined"]) == [stored["id"]]
    assert out["undetermined"][0]["reason"]
    assert out["verdict"] == "unknown" and out["consistency_score"] == 0.5
    assert out["judged_by"] == "rules"


async def test_nothing_related_is_no_conflict(client):
    _, out = await _check(client, "Sophie works as a nurse.", "Le train pour Nantes part à 8 h.")

    assert out["contradictions"] == out["undetermined"] == []
    assert out["verdict"] in ("no_conflict", "supported") and out["consistency_score"] == 1.0


@pytest.mark.parametrize(
    ("memory", "statement"),
    [
        ("Victor est électricien.", "Victor est devenu menuisier."),  # a job, in French
        ("Omar is a dentist.", "Omar works as a photographer."),
        ("Mon oncle habite à Rouen.", "Mon oncle habite à Nancy."),  # a place one lives in
        ("Our flat is on the second floor.", "Our flat is on the sixth floor."),  # ordinals
        ("Ma taille : 1,72 m.", "Ma taille : 1,90 m."),  # decimals are one number
        ("Hana is vegan.", "Hana eats yoghurt every morning."),  # a diet broken
        ("Je ne bois jamais d'alcool.", "Je prends un verre de rhum chaque soir."),
        ("Yusuf est allergique aux amandes.", "Yusuf adore les amandes grillées."),
        ("I'm allergic to kiwis.", "I love kiwis and eat them every day."),  # any food
        ("I quit cycling after the accident.", "I cycle every morning before work."),
        ("J'ai arrêté le thé.", "Je bois encore du thé tous les soirs."),
        ("I don't like jazz.", "I love jazz."),  # loving is liking
        ("Théo est allergique aux œufs.", "Théo prend une omelette au petit-déjeuner."),
        ("Elles sont mariées.", "Elles sont divorcées."),  # opposites in the plural
        ("J'ai une seule fille.", "J'ai deux filles."),  # "une seule" is a number
        ("Je m'appelle Julie.", "Je m'appelle Marie."),  # one's own name
    ],
)
def test_the_rules_name_a_contradiction(memory, statement):
    judged = consistency.judge(statement, memory, cosine=0.7)

    assert judged.verdict == consistency.CONTRADICTION, judged


@pytest.mark.parametrize(
    ("memory", "statement", "verdict"),
    [
        ("Victor est électricien.", "Inès est menuisière.", "unrelated"),  # someone else
        ("Omar is a dentist.", "Omar's wife is a photographer.", "unrelated"),
        ("I'm vegetarian.", "My father eats steak on Sundays.", "unrelated"),
        ("I love hiking.", "I hate ironing.", None),  # opposites about different things
        ("I don't eat lamb.", "I often eat duck.", None),  # refusing one meat, not all
        ("Hana is vegan.", "Hana drinks soy milk.", None),  # plant milk is not dairy
        ("Yusuf est allergique aux amandes.", "Yusuf adore les gâteaux sans amandes.", None),
        ("I'm allergic to horses.", "I love horses.", None),  # not a food
        ("Ivan speaks Polish.", "Ivan also speaks Czech.", "compatible"),
        ("Mona plays the cello.", "Mona plays the harp.", "compatible"),
        ("My son is vegetarian.", "My son never eats meat.", "support"),
        ("Omar is a dentist.", "Omar is a dentist in Leeds.", "support"),
        ("I used to be a pilot.", "I am a baker.", None),  # then and now
        ("Ines is allergic to milk.", "Ines drinks almond milk every day.", None),
        ("I gave up eating crisps.", "I eat apples every day.", None),  # not any eating
        ("We have a dog named Rex.", "We have a dog named Bolt.", None),  # two dogs?
        ("Je travaille à Nantes.", "Je travaille à Rennes le lundi.", None),  # on Mondays
    ],
)
def test_the_rules_do_not_flag_what_can_both_be_true(memory, statement, verdict):
    judged = consistency.judge(statement, memory, cosine=0.7)

    assert judged.verdict != consistency.CONTRADICTION, judged
    if verdict:
        assert judged.verdict == verdict, judged


def test_naming_what_a_diet_excludes_is_not_another_topic():
    judged = consistency.judge("Nora puts butter on her toast.", "Nora is vegan.", cosine=0.3)

    assert judged.verdict == consistency.UNDETERMINED


def test_a_named_person_may_be_the_user():
    judged = consistency.judge("I live in Paris.", "Alice lives in Lyon.", cosine=0.7)

    assert judged.verdict == consistency.UNDETERMINED


def test_only_leaves_no_room_for_a_confident_addition():
    judged = consistency.judge("Mia speaks Dutch too.", "Mia only speaks French.", cosine=0.7)

    assert judged.verdict == consistency.UNDETERMINED


def test_the_summary_says_how_sure_it_is():
    finding = {"id": "m1", "score": 0.8}

    assert consistency.summary([finding], [], [finding]) == {
        "verdict": "contradicted",
        "consistency_score": 0.2,
    }
    assert consistency.summary([], [finding], [finding])["verdict"] == "unknown"
    assert consistency.summary([], [finding], []) == {
        "verdict": "supported",
        "consistency_score": 1.0,
    }
    assert consistency.summary([], [], [])["verdict"] == "no_conflict"
