"""The person sheet (memory/learning/person/sheet.py) and what a fact is about
(memory/learning/person/about.py): rules, no memory server."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memory.learning.person import about, sheet

NOW = datetime(2027, 6, 1, 12, tzinfo=UTC)


def fact(content, **meta):
    return {"content": content, "metadata": meta}


@pytest.mark.parametrize(
    ("content", "slot", "domain"),
    [
        ("The user lives in Porto.", "home", "home"),
        ("The user moved to Porto", "home", "home"),
        ("L'utilisateur habite à Nantes", "home", "home"),
        ("The user grew up in Dakar", None, "home"),
        ("The user works night shifts as a nurse", "job", "work"),
        ("The user works at Airbus", "employer", "work"),
        ("L'utilisateur est végétarien", "diet", "health"),
        ("The user no longer eats meat", "diet", "health"),
        ("The user is married", "relationship", "identity"),
        ("The user's daughter Zoé is 7", "child_age:zoe", "family"),
        ("The user's son is 4", "child_age:son", "family"),
        ("The user's cat is called Miso", "pet_name:cat", "pets"),
        ("The user speaks Portuguese", None, "languages"),
        ("The user is allergic to peanuts", None, "health"),
        ("Alice's brother Tom lives in Oslo", None, "family"),
        ("Alice prefers short answers", None, "answers"),
        ("The user's name is Kenji.", None, "identity"),
        # a child by first name, as the rules write a birthday's news; a grown-up's age is not
        ("Noah is 5.", "child_age:noah", "family"),
        ("Zoé a 4 ans.", "child_age:zoe", "family"),
        ("Alice is 34", "age", "identity"),
        ("Le fils de l'utilisateur, Malo, a 9 ans", "child_age:malo", "family"),
        # a pet's slot is its species, however it is said
        ("Le chien de l'utilisateur s'appelle Rox", "pet_name:chien", "pets"),
        ("L'utilisateur a adopté une chienne qui s'appelle Praline", "pet_name:chien", "pets"),
        ("The user got a kitten named Pesto", "pet_name:cat", "pets"),
        ("The user adopted a lurcher called Bramble", "pet_name:dog", "pets"),
        # a new partner, a new home, however said
        ("The user is seeing someone called Sam", "relationship", "identity"),
        ("L'utilisateur est avec Léo depuis mai", "relationship", "identity"),
        ("L'utilisateur est avec sa mère à Lyon", None, "family"),
        ("L'utilisateur s'est installés à Dijon", "home", "home"),
        ("The user left Glasgow for Dundee", "home", "home"),
        ("The user moved to Dundee, leaving Glasgow", "home", "home"),
        ("L'utilisateur a maintenant une Zoé, à la place de sa Clio", "car", "other"),
        # the car they drive is one at a time
        ("The user drives a Renault Zoe", "car", "other"),
        ("L'utilisateur a remplacé sa Clio par une Tesla", "car", "other"),
        ("The user's son drives a Fiat", None, "family"),
    ],
)
def test_it_knows_what_a_fact_is_about(content, slot, domain):
    assert about.slot_of(content) == slot
    assert about.domain_of(content) == domain


def test_a_negation_ends_a_value_in_english_and_french():
    assert about.negates("The user no longer eats meat")
    assert about.negates("L'utilisateur n'habite plus à Lyon")
    assert not about.negates("The user eats meat")


def test_the_questions_a_fact_answers_bridge_its_words():
    assert "childhood" in about.question_words("The user grew up in Dakar")
    assert "live" in about.question_words("The user moved to Porto")
    assert "food" in about.question_words("The user has been gluten-free since 2020")
    assert "job" in about.question_words("The user works as a nurse")


def test_it_shows_the_newest_value_of_a_slot_only_most_important_domain_first():
    facts = [  # newest first
        fact("The user loves jazz"),
        fact("The user lives in Porto"),
        fact("The user speaks Portuguese"),
        fact("The user lives in Lyon"),
        fact("The user speaks German"),
        fact("The user is 34"),
    ]

    built = sheet.build(facts, now=NOW).splitlines()

    assert built == [
        "Identity: The user is 34",
        "Home and places: The user lives in Porto",
        "Languages: The user speaks Portuguese; The user speaks German",
        "Hobbies and tastes: The user loves jazz",
    ]


def test_a_plan_reads_as_planned_then_as_past_once_its_date_has_passed():
    trip = fact("The user leaves for Peru", kind="goal", date="2027-05-12", tags=["planned"])

    assert "(planned for 12 May 2027)" in sheet.build([trip], now=datetime(2027, 4, 1, tzinfo=UTC))
    past = sheet.build([trip], now=NOW)
    assert past == "Plans: Past plan (its date, 12 May 2027, has passed): The user leaves for Peru"


def test_it_keeps_within_its_budget_the_least_important_left_out():
    facts = [fact(f"The user's friend Friend{n} lives in Town{n}") for n in range(40)]
    facts.append(fact("The user lives in Porto"))

    built = sheet.build(facts, now=NOW, budget=300)

    assert len(built) <= 300
    assert built.startswith("Home and places: The user lives in Porto\nFamily and people: ")


def test_a_new_value_of_a_slot_or_a_negation_replaces_the_stored_fact_others_accumulate():
    from memory.learning.person.newest import replaced_by

    stored = [
        {"id": "a", "content": "The user speaks German"},
        {"id": "b", "content": "The user lives in Lyon"},
        {"id": "c", "content": "The user plays tennis"},
    ]
    assert replaced_by("The user moved to Porto", stored) == "b"
    assert replaced_by("The user lives in Lyon.", stored) is None  # said again: dedup's
    assert replaced_by("The user speaks Portuguese", stored) is None  # languages accumulate
    assert replaced_by("The user no longer plays tennis", stored) == "c"
