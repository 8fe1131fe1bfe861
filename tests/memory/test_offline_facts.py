"""The rule-based extractor (memory/learning/offline_facts.py): facts said in passing become short
third-person facts marked `rules`; questions, hypotheticals, requests, the assistant's
words, restated memories and small talk give nothing; passing states expire."""

from __future__ import annotations

from datetime import date

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ikario_rag import validate
from memory.learning.offline_facts import TAG, as_item, facts_in

FRIDAY = date(2026, 11, 27)  # a Friday


def one(text: str, **kwargs) -> dict:
    facts = facts_in(text, today=FRIDAY, **kwargs)
    assert len(facts) == 1, facts
    return facts[0]


@pytest.mark.parametrize(
    ("said", "content", "kind"),
    [
        (
            "my daughter Zoé turns 7 in June and loves horses",
            "The user's daughter Zoé turns 7 in June and loves horses.",
            "fact",
        ),
        (
            "Je suis infirmier de nuit au CHU de Nantes.",
            "L'utilisateur est infirmier de nuit au CHU de Nantes.",
            "self",
        ),
        ("I'm vegetarian, so no meat recipes please.", "The user is vegetarian.", "preference"),
        (
            "Ma fille Zoé a 7 ans et adore les chevaux.",
            "La fille de l'utilisateur, Zoé, a 7 ans et adore les chevaux.",
            "fact",
        ),
        ("We fly to Lisbon on May 14th.", "The user flies to Lisbon on May 14th.", "goal"),
        ("Je ne mange pas de viande.", "L'utilisateur ne mange pas de viande.", "preference"),
        ("I live in Leeds with my partner.", "The user lives in Leeds with their partner.", "self"),
        ("Je m'appelle Léa.", "L'utilisateur s'appelle Léa.", "self"),
    ],
)
def test_a_statement_said_in_passing_becomes_a_third_person_fact(said, content, kind):
    fact = one(said)
    assert fact["content"] == content
    assert fact["context"]["kind"] == kind
    assert fact["context"]["tags"][0] == TAG
    assert "ttl" not in fact["context"]
    assert fact["context"]["date"] == "2026-11-27"


@pytest.mark.parametrize(
    ("said", "ttl"),
    [
        ("I'm sick this week.", "3d"),  # to Sunday's end
        ("I'm in Lyon until Friday, any restaurant ideas?", "8d"),  # next Friday
        ("Je suis à Lyon jusqu'à vendredi.", "8d"),
        ("Je suis à Lyon jusqu'à mardi.", "5d"),
        ("Je suis en vacances jusqu'au 3 décembre.", "7d"),
        ("I'm off work for two weeks.", "14d"),
        ("Heads up, I'm working from home today.", "1d"),
        ("J'ai la grippe.", "7d"),  # a passing state with no end named
    ],
)
def test_a_passing_state_gets_an_expiry(said, ttl):
    fact = one(said)
    assert fact["context"]["ttl"] == ttl
    assert fact["context"]["category"] == "contextuelle"


def test_a_lasting_state_does_not_expire():
    assert "ttl" not in one("I've been vegetarian for ten years.")["context"]
    assert "ttl" not in one("Je suis diabétique de type 2.")["context"]


@pytest.mark.parametrize(
    "said",
    [
        # questions
        "What's the weather like in Lyon?",
        "Do I need a visa for Japan",
        "Est-ce que je peux courir avec un rhume ?",
        "Je dois prendre un parapluie demain ?",
        # hypotheticals
        "If I were a nurse, what would I do?",
        "I'd love to live in Japan one day.",
        "Si j'étais riche, j'achèterais une maison.",
        "J'aimerais bien vivre au Japon un jour.",
        "Maybe I'll take up painting.",
        # requests
        "Write me a poem about cats.",
        "I need a recipe for tonight.",
        "Écris-moi un poème sur les chats.",
        "Je veux une version plus courte.",
        # the assistant's words
        "Sure! I've noted that you're vegetarian.",
        "I'm Claude, an AI assistant.",
        "Je suis Ikario, ton assistant.",
        # restated memories
        "As I told you, I live in Lyon.",
        "Comme je te l'ai dit, j'habite à Lyon.",
        "The user is vegetarian and lives in Leeds.",
        "L'utilisateur est infirmier de nuit au CHU de Nantes.",
        # small talk
        "I'm fine, thanks.",
        "I love it!",
        "I have a question.",
        "I'm tired today.",
        "Je suis d'accord.",
        "J'adore !",
        "",
        "   ",
    ],
)
def test_what_is_not_a_fact_gives_nothing(said):
    assert facts_in(said, today=FRIDAY) == []


def test_only_the_users_lines_of_a_transcript_are_read():
    transcript = (
        "User: I'm a nurse in Nantes.\n"
        "Assistant: I'm based in the cloud and I love helping.\n"
        "I live in Paris, says the assistant.\n"
        "User: thanks!"
    )
    contents = [f["content"] for f in facts_in(transcript, today=FRIDAY)]
    assert contents == ["The user is a nurse in Nantes."]


def test_a_stored_transcript_on_one_line_gives_the_users_facts_only():
    stored = "User: I'm a nurse in Nantes. Assistant: Great. I live in Paris. User: I love jazz."
    contents = [f["content"] for f in facts_in(stored, today=FRIDAY)]
    assert contents == ["The user is a nurse in Nantes.", "The user loves jazz."]


def test_a_recalled_memories_block_gives_nothing():
    said = "<memories>\nI live in Lyon.\nI'm a nurse.\n</memories>\nI'm vegan."
    assert [f["content"] for f in facts_in(said, today=FRIDAY)] == ["The user is vegan."]


def test_code_and_quoted_text_are_someone_elses_words():
    said = "Look:\n```\nI live in Paris.\n```\n> I am a pilot.\nI live in Lyon."
    assert [f["content"] for f in facts_in(said)] == ["The user lives in Lyon."]


def test_private_spans_never_become_facts():
    facts = facts_in("I live in <private>Lyon</private>. I'm a <private>nurse</private>.")
    assert all("Lyon" not in f["content"] and "nurse" not in f["content"] for f in facts)


def test_several_facts_of_one_message_each_once():
    said = "Hi! I'm a nurse in Nantes. My sister Ana lives in Porto. I'm a nurse in Nantes."
    contents = [f["content"] for f in facts_in(said, today=FRIDAY)]
    assert contents == ["The user is a nurse in Nantes.", "The user's sister Ana lives in Porto."]


def test_language_keeps_only_that_languages_statements():
    said = "I live in Leeds. J'habite à Lyon."
    assert [f["language"] for f in facts_in(said, language="fr")] == ["fr"]
    assert [f["language"] for f in facts_in(said, language="en")] == ["en"]


def test_each_fact_is_an_item_the_memory_server_accepts():
    said = "I'm in Lyon until Friday. My daughter Zoé loves horses. J'ai 34 ans."
    facts = facts_in(said, today=FRIDAY)
    assert len(facts) == 3
    for fact in facts:
        item = as_item(fact)
        stored = validate.new_memory(item["content"], item["context"])
        assert stored.kind == fact["context"]["kind"]
        assert TAG in stored.tags


# Any code point (lone surrogates and NUL included) mixed with the words facts open with.
_TEXT = st.lists(
    st.one_of(
        st.text(st.characters(), max_size=12),
        st.sampled_from(
            ["I'm ", "je suis ", "My sister ", "?", "!", ".", "\n", "<private>", "J'ai ", "in Lyon"]
        ),
    ),
    max_size=40,
).map("".join)


@settings(max_examples=300, deadline=None)
@given(_TEXT)
def test_it_never_crashes_and_never_returns_a_question(text):
    for fact in facts_in(text, today=FRIDAY):
        content = fact["content"]
        assert content.startswith(("The user", "L'utilisateur", "Le ", "La ", "L'", "Les "))
        assert content.endswith(".") and "?" not in content
        assert "\x00" not in content
        content.encode("utf-8")  # no lone surrogate
        validate.new_memory(content, as_item(fact)["context"])


@settings(max_examples=50, deadline=None)
@given(st.sampled_from(["What", "Can you", "Est-ce que", "Tu", "Why do", "Quel"]), _TEXT)
def test_a_question_gives_nothing(opener, rest):
    assert facts_in(f"{opener} {rest.replace('.', ' ').replace(chr(10), ' ')}?") == []


def test_a_long_text_is_read_whole():
    said = ("Lorem ipsum dolor sit amet. " * 4000) + "I live in Leeds."
    assert len(said) > 100_000
    assert [f["content"] for f in facts_in(said)] == ["The user lives in Leeds."]


def test_not_a_string_gives_nothing():
    assert facts_in(None) == []  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("said", "content"),
    [
        (
            "We're going to Peru. We leave on 12 May.",
            "The user is going to Peru and leaves on 12 May.",
        ),
        ("I'm going to Peru next month.", "The user is going to Peru next month."),
        ("I suffer from migraines.", "The user suffers from migraines."),
        ("On a déménagé à Bordeaux.", "L'utilisateur a déménagé à Bordeaux."),
        (
            "I'm on sick leave until the end of February.",
            "The user is on sick leave until the end of February.",
        ),
        ("I've been gluten-free since 2020.", "The user has been gluten-free since 2020."),
        (
            "I moved to Porto last year so what's the weather like there?",
            "The user moved to Porto last year.",
        ),
        ("I'm a nurse, any tips for night shifts?", "The user is a nurse."),
        ("We've just moved to Bristol.", "The user has just moved to Bristol."),
        ("We've relocated to Edinburgh.", "The user has relocated to Edinburgh."),
        ("I've gone fully vegan.", "The user has gone fully vegan."),
        (
            "In April I'm running the Paris marathon, my first one, how should I taper?",
            "The user is running the Paris marathon in April.",
        ),
        (
            "Le 8 avril je pars à Montréal pour un stage, qu'est-ce que je dois emporter ?",
            "L'utilisateur part à Montréal pour un stage le 8 avril.",
        ),
        ("My old bike got stolen.", "The user's old bike got stolen."),
        (
            "Mes chats Pixel et Nougat se battent pour le radiateur.",
            "Les chats de l'utilisateur, Pixel et Nougat, se battent pour le radiateur.",
        ),
        ("Je suis devenue boulangère.", "L'utilisateur est devenue boulangère."),
        ("Je suis maintenant développeuse web.", "L'utilisateur est maintenant développeuse web."),
    ],
)
def test_it_learns_what_people_say_in_passing_across_domains(said, content):
    """Each gave nothing (the plan: its date without its place)."""
    assert one(said)["content"] == content


@pytest.mark.parametrize(
    "said",
    [
        "As the song goes, \"I'm a lonely boy, I'm a lonely boy\".",
        "Let's role-play: I'm a pirate captain and you are my parrot.",
        "I'm going to bed.",
        "I'm going to the gym.",
        "I've gone to the shop.",
        "Je suis passée à la boulangerie.",
    ],
)
def test_lyrics_role_play_and_errands_give_nothing(said):
    assert facts_in(said, today=FRIDAY) == []


@pytest.mark.parametrize(
    ("said", "contents"),
    [
        ("Kenji here, I'm 52, be patient.", ["The user's name is Kenji.", "The user is 52."]),
        (
            "Moi c'est Inès, j'ai 41 ans.",
            ["L'utilisateur s'appelle Inès.", "L'utilisateur a 41 ans."],
        ),
        ("Quick thing: it's Amara, not Amanda.", ["The user's name is Amara."]),
        ("Spent my whole childhood in Nairobi.", ["The user spent their childhood in Nairobi."]),
        (
            "J'ai passé toute mon enfance à Abidjan.",
            ["L'utilisateur a passé son enfance à Abidjan."],
        ),
        # a childhood said as how they were raised
        (
            "Being brought up by the sea in Brest, I love storms.",
            ["The user spent their childhood in Brest."],
        ),
        ("J'ai été élevée à Tunis.", ["L'utilisateur a passé son enfance à Tunis."]),
    ],
)
def test_it_learns_how_people_introduce_themselves(said, contents):
    assert [f["content"] for f in facts_in(said, today=FRIDAY)] == contents


@pytest.mark.parametrize(
    "said",
    ["Paris, here we come!", "I'm Sorry, it's late.", "If I was raised in Paris, I'd know."],
)
def test_an_introduction_look_alike_gives_no_name_nor_age(said):
    assert facts_in(said, today=FRIDAY) == []


@pytest.mark.parametrize(
    ("said", "contents"),
    [
        # what changed is said after what ended, in a clause of its own
        ("I quit the bakery; I'm a plumber now.", ["The user is a plumber now."]),
        ("Left Leeds last year: we live in York now.", ["The user lives in York now."]),
        ("Bye bye Lidl, I start at Aldi on Monday.", ["The user starts at Aldi on Monday."]),
        (
            "J'ai lâché la fac, je suis maintenant électricienne.",
            ["L'utilisateur est maintenant électricienne."],
        ),
        (
            "Biscotte nous a quittés ; on a adopté un chiot qui s'appelle Rox.",
            ["L'utilisateur a adopté un chiot qui s'appelle Rox."],
        ),
        # a child's age said as news of them, by first name
        ("Noah turned 5 yesterday, cake everywhere.", ["Noah is 5."]),
        ("Zoé vient d'avoir 4 ans.", ["Zoé a 4 ans."]),
        ("Malo a fêté ses 9 ans samedi.", ["Malo a 9 ans."]),
        # a new pet, a new partner, a new home, said each its own way
        (
            "RIP Mochi; we got a little whippet named Dash.",
            ["The user got a little whippet named Dash."],
        ),
        ("Ben and I got engaged last night!", []),  # what they did last night: not kept
        ("Ben and I got engaged in Rome.", ["The user and Ben got engaged in Rome."]),
        ("Nina and I are expecting twins.", ["The user and Nina are expecting twins."]),
        ("It's over with Tom; I'm dating again.", ["The user is dating again."]),
        ("Je suis avec Léo depuis mai.", ["L'utilisateur est avec Léo depuis mai."]),
        ("Je me suis installée à Dijon.", ["L'utilisateur s'est installée à Dijon."]),
        (
            "Nous avons quitté Metz pour Nancy.",
            ["L'utilisateur a rejoint Nancy, après avoir quitté Metz."],
        ),
        (
            "We left Glasgow for Dundee in March.",
            ["The user moved to Dundee in March, leaving Glasgow."],
        ),
        ("On a finalement acheté un chien.", ["L'utilisateur a finalement acheté un chien."]),
    ],
)
def test_a_change_said_after_what_ended_is_learnt(said, contents):
    assert [f["content"] for f in facts_in(said, today=FRIDAY)] == contents


@pytest.mark.parametrize(
    "said",
    [
        "If I lose this job, I'm a waiter again.",
        "You keep saying I'm a nurse; I'm a midwife.",
        'She sang "my heart is yours, I\'m a rolling stone".',
        "Anna is 34 and lives in Lyon.",
        "Python is 3 times faster now.",
        "Is Noah 5 already?",
        "Paris and I never got along.",
        "Je suis avec ma mère à Lyon.",
        "I left the keys for Anna.",
        "Imagine Noah turned 5, what would you buy?",
    ],
)
def test_clauses_and_ages_that_are_not_the_users_news_give_nothing(said):
    assert facts_in(said, today=FRIDAY) == []


@pytest.mark.parametrize(
    ("said", "content"),
    [
        # a condition or a language of theirs, said as how it is today
        ("My eczema is bad again, what cream helps?", "The user's eczema is bad again."),
        ("My Japanese is still basic.", "The user's Japanese is still basic."),
        ("Mon anglais est rouillé.", "L'anglais de l'utilisateur est rouillé."),
        ("I'm taking cello lessons on Fridays.", "The user is taking cello lessons on Fridays."),
        # a pet or a family member named in a later clause, or after a few words
        (
            "Bad night, my hamster Ziggy escaped again.",
            "The user's hamster Ziggy escaped again.",
        ),
        (
            "Mes trois filles, Léa et Mia, font de la danse.",
            "Les trois filles de l'utilisateur, Léa et Mia, font de la danse.",
        ),
        ("Mon petit chien a 3 ans.", "Le petit chien de l'utilisateur a 3 ans."),
    ],
)
def test_it_learns_conditions_languages_and_theirs_said_later_in_a_sentence(said, content):
    assert one(said)["content"] == content


@pytest.mark.parametrize(
    "said",
    [
        "My colleague got promoted to head of sales.",
        "Mon voisin a acheté une nouvelle voiture.",
        "My sister says that her husband is a pilot.",
        "Ma mère dit que je suis têtu.",
        "Ugh, my boss is in Lisbon all week.",
    ],
)
def test_the_news_of_people_around_them_and_reported_words_give_nothing(said):
    assert facts_in(said, today=FRIDAY) == []


@pytest.mark.parametrize(
    ("said", "content"),
    [
        # the subject left out, as people write in chat
        ("Moved to Cardiff in June.", "The user moved to Cardiff in June."),
        ("Started a new job at Ocado.", "The user started a new job at Ocado."),
        # a car, by its name, and its change
        (
            "Bought a Kia Niro to replace the Golf.",
            "The user bought a Kia Niro to replace the Golf.",
        ),
        ("Je roule en Twingo.", "L'utilisateur roule en Twingo."),
        # what holds now is said first, whatever order it was said in
        (
            "Sold the Fiesta and bought a Honda Jazz.",
            "The user bought a Honda Jazz, having sold the Fiesta.",
        ),
        (
            "J'ai remplacé mon Kangoo par une Tesla.",
            "L'utilisateur a maintenant une Tesla, à la place de son Kangoo.",
        ),
        (
            "J'ai vendu ma Megane pour une Dacia Spring.",
            "L'utilisateur a vendu sa Megane pour une Dacia Spring.",
        ),
    ],
)
def test_it_learns_a_dropped_subject_and_a_car_by_its_name(said, content):
    assert one(said)["content"] == content


@pytest.mark.parametrize(
    "said", ["Went to the gym.", "Had a long day.", "Bought a coffee.", "Je roule vite."]
)
def test_a_dropped_subject_with_nothing_lasting_gives_nothing(said):
    assert facts_in(said, today=FRIDAY) == []


@pytest.mark.parametrize(
    ("said", "contents"),
    [
        ("We finally called the puppy Waffle.", ["The user's puppy is called Waffle."]),
        ("My son renamed the hamster Turbo.", ["The user's hamster is called Turbo."]),
        (
            "On a baptisé la chienne Praline.",
            ["La chienne de l'utilisateur s'appelle Praline."],
        ),
        (
            "Ma fille a renommé le chat : il s'appelle désormais Pompon.",
            ["Le chat de l'utilisateur s'appelle Pompon."],
        ),
    ],
)
def test_a_pet_named_or_renamed_is_learnt(said, contents):
    assert [f["content"] for f in facts_in(said, today=FRIDAY)] == contents


@pytest.mark.parametrize(
    "said", ["If we had a dog we'd call the dog Rex.", "What if we named the cat Pixel?"]
)
def test_a_pet_name_only_imagined_gives_nothing(said):
    assert facts_in(said, today=FRIDAY) == []
