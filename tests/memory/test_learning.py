"""Learning what the user says in passing (memory/learning/conversations.py,
memory/learning/extraction.py): through the real turn, the real task backend and worker, the real
`anthropic` SDK against the fake Messages API (a scripted extraction model) and the real
ikario_rag."""

from __future__ import annotations

import sqlite3
from datetime import UTC, timedelta

import pytest
from asgiref.sync import sync_to_async
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from chat.models import Conversation
from memory.client import services
from memory.learning import conversations
from memory.learning.conversations import enqueue_save
from memory.models import LearntExchange, MemoryRetrieval, MemorySettings, PendingLearning
from memory.recall.prompts import BLOCK_TAG
from memory.worker import database
from tests.fixtures.builders import make_conversation, send
from tests.fixtures.scripted_extractor import ScriptedExtractor, fact
from tests.memory import unreachable_queue

pytestmark = pytest.mark.django_db(transaction=True)

FACT_KINDS = ["fact", "preference", "goal", "self"]
ZOE = "Alice's daughter Zoé turns 7 in June and loves horses"
run_worker = sync_to_async(database.run_ready_tasks)


def facts_of(user) -> list[dict]:
    return services.get_recent_memories(user=user, limit=100, kinds=FACT_KINDS)["memories"]


def recalled_block(fake_anthropic) -> str:
    chat_calls = [r for r in fake_anthropic.requests if "tool_choice" not in r]
    system = chat_calls[-1]["system"]
    system = system if isinstance(system, str) else " ".join(b["text"] for b in system)
    opening = f"<{BLOCK_TAG}>"
    return system.split(opening, 1)[1] if opening in system else ""


def extraction_calls(fake_anthropic) -> list[dict]:
    return [r for r in fake_anthropic.requests if "tool_choice" in r]


async def new_chat(user, title="Chat") -> Conversation:
    return await sync_to_async(make_conversation)(user, title)


async def test_a_two_message_chats_fact_is_stored_and_recalled_in_a_new_chat(
    alice, memory_server, fake_anthropic
):
    fake_anthropic.respond_with(
        ScriptedExtractor(
            {"Zoé turns 7": [fact(ZOE, subjects=["zoé", "horses"], date="2026-06-01")]},
            reply="Happy early birthday to her!",
        )
    )
    chat = await new_chat(alice, "Cake")

    await send(chat, "My daughter Zoé turns 7 in June and loves horses. Any easy cake idea?")
    await run_worker()

    # The old gate (more than 10 messages, pinned, or Save) is gone: two messages suffice.
    facts = await sync_to_async(facts_of)(alice)
    assert [f["content"] for f in facts] == [ZOE]
    assert facts[0]["metadata"]["date"].startswith("2026-06-01")
    assert await LearntExchange.objects.filter(conversation=chat, facts=1).aexists()
    # No transcript of a short chat: the fact is what is kept.
    saved = await sync_to_async(services.get_recent_memories)(user=alice, kinds=["conversation"])
    assert saved["memories"] == []

    await send(await new_chat(alice, "Gift"), "What could I give Zoé for her birthday?")

    assert ZOE in recalled_block(fake_anthropic)


@pytest.mark.parametrize("how", ["paused", "incognito"])
async def test_nothing_is_learnt_from_a_paused_or_incognito_chat(
    alice, memory_server, fake_anthropic, how
):
    fake_anthropic.respond_with(
        ScriptedExtractor({"nurse": [fact("Alice works night shifts as a nurse", "self")]})
    )
    if how == "paused":
        await MemorySettings.objects.aupdate_or_create(user=alice, defaults={"paused": True})
    chat = await sync_to_async(make_conversation)(alice, "Shifts", incognito=(how == "incognito"))

    await send(chat, "I'm a night-shift nurse at the CHU, so I sleep in the morning.")
    await MemorySettings.objects.filter(user=alice).aupdate(paused=False)  # back on: still never
    await run_worker()
    await sync_to_async(enqueue_save)(chat.pk)  # and asked again once memory is back on
    await run_worker()

    assert extraction_calls(fake_anthropic) == []
    assert await sync_to_async(facts_of)(alice) == []
    assert not await PendingLearning.objects.aexists()


async def test_a_recalled_fact_restated_by_the_assistant_creates_nothing(
    alice, memory_server, fake_anthropic
):
    allergy = "Alice is allergic to peanuts"
    stored = await sync_to_async(services.add_thought)(
        user=alice, content=allergy, context={"kind": "self"}
    )
    before = await sync_to_async(facts_of)(alice)
    # A model that echoes: it takes the assistant's restatement for something learnt.
    fake_anthropic.respond_with(
        ScriptedExtractor(
            {"hike": [fact("The user is allergic to peanuts", "self", ["peanuts"])]},
            reply="Since you are allergic to peanuts, pack apples and seed bars.",
        )
    )
    chat = await new_chat(alice, "Hike")

    await send(chat, "What snack should I pack for my hike, given my peanut allergy?")
    await run_worker()

    logged = await MemoryRetrieval.objects.filter(conversation=chat).afirst()
    assert stored["id"] in [m["id"] for m in logged.memories]  # it was recalled
    [request] = extraction_calls(fake_anthropic)
    sent = request["messages"][0]["content"]
    assert "What snack should I pack" in sent
    # Neither the answer (not confirmed), nor the recalled block, nor the system prompt.
    assert "pack apples" not in sent and BLOCK_TAG not in sent
    assert request["system"] != chat_system(fake_anthropic)
    assert await sync_to_async(facts_of)(alice) == before
    assert await LearntExchange.objects.filter(conversation=chat, facts=0).aexists()


@pytest.mark.parametrize(
    ("recalled", "said", "correction"),
    [
        (
            "The user eats meat",
            "I no longer eat meat, so what should I cook for dinner tonight?",
            "The user no longer eats meat",
        ),
        (
            "The user has 2 children",
            "We had a baby, so I have 3 children now: what car fits the children?",
            "The user has 3 children",
        ),
    ],
)
async def test_a_correction_of_a_recalled_fact_is_learnt_not_dropped_as_an_echo(
    alice, memory_server, fake_anthropic, recalled, said, correction
):
    stored = await sync_to_async(services.add_thought)(
        user=alice, content=recalled, context={"kind": "self"}
    )
    fake_anthropic.respond_with(ScriptedExtractor({said[:10]: [fact(correction, "self")]}))
    chat = await new_chat(alice, "Dinner")

    await send(chat, said)
    await run_worker()

    logged = await MemoryRetrieval.objects.filter(conversation=chat).afirst()
    assert stored["id"] in [m["id"] for m in logged.memories]  # it was recalled
    assert correction in [f["content"] for f in await sync_to_async(facts_of)(alice)]
    assert await LearntExchange.objects.filter(conversation=chat, facts=1).aexists()


@pytest.mark.parametrize("gone", ["deleted", "replaced"])
async def test_a_recalled_memory_deleted_or_replaced_since_never_stops_learning(
    alice, memory_server, fake_anthropic, gone
):
    stored = await sync_to_async(services.add_thought)(
        user=alice, content="Alice is allergic to peanuts", context={"kind": "self"}
    )
    fake_anthropic.respond_with(
        ScriptedExtractor({"Porto": [fact("The user lives in Porto", "self")]})
    )
    chat = await new_chat(alice, "Hike")
    await send(chat, "What snack should I pack for my hike, given my peanut allergy?")
    await run_worker()
    logged = await MemoryRetrieval.objects.filter(conversation=chat).afirst()
    assert stored["id"] in [m["id"] for m in logged.memories]  # it was recalled here
    if gone == "deleted":
        await sync_to_async(services.delete_memory)(user=alice, memory_id=stored["id"])
    else:
        await sync_to_async(services.add_thought)(
            user=alice,
            content="Alice is allergic to peanuts and to cashews",
            context={"kind": "self", "replaces": stored["id"]},
        )

    await send(chat, "By the way, I moved to Porto last month: any good hikes near it?")
    await run_worker()

    assert "The user lives in Porto" in [f["content"] for f in await sync_to_async(facts_of)(alice)]
    assert await LearntExchange.objects.filter(conversation=chat, facts=1).aexists()


def chat_system(fake_anthropic) -> str:
    return [r for r in fake_anthropic.requests if "tool_choice" not in r][-1]["system"]


async def test_a_passing_state_expires(alice, memory_server, fake_anthropic):
    state = "Alice is in Lyon until Friday for a conference"
    fake_anthropic.respond_with(
        ScriptedExtractor({"Lyon until Friday": [fact(state, subjects=["lyon"], expires="5d")]})
    )
    await send(await new_chat(alice), "I'm in Lyon until Friday for a conference, any bistro?")
    await run_worker()

    [kept] = await sync_to_async(facts_of)(alice)
    assert kept["content"] == state
    expires = timezone.datetime.fromisoformat(kept["metadata"]["expires_at"].replace("Z", "+00:00"))
    # Until the end it names (the model said five days): the end of the next Friday.
    today = timezone.now().date()
    friday = today + timedelta(days=(4 - today.weekday()) % 7 or 7)
    assert expires.date() in (friday, friday + timedelta(days=1))

    # Let the days pass: move the expiry into the past where the server keeps it.
    with sqlite3.connect(memory_server.index_dir / "memories.sqlite3") as db:
        db.execute("UPDATE memories SET expires_ts = expires_ts - 8 * 86400")
    assert await sync_to_async(facts_of)(alice) == []


async def test_quick_turns_make_one_pending_task_run_once_the_chat_pauses(
    alice, memory_server, fake_anthropic, settings
):
    settings.MEMORY_LEARN_DELAY = 30.0
    script = ScriptedExtractor(
        {
            "cello": [fact("Alice plays the cello", "self")],
            "Porto": [fact("Alice's sister Ana lives in Porto")],
            "vegetarian": [fact("Alice is vegetarian", "preference")],
        }
    )
    fake_anthropic.respond_with(script)
    chat = await new_chat(alice)

    await send(chat, "I play the cello, which étude should I start?")
    await send(chat, "My sister Ana lives in Porto, we meet at Easter.")
    await send(chat, "I'm vegetarian by the way, what should we cook?")

    tasks = DBTaskResult.objects.filter(task_path="memory.learning.conversations.save_conversation")
    assert await tasks.acount() == 1
    pending = await PendingLearning.objects.aget(conversation=chat)
    first = await tasks.aget()
    assert pending.learn_after > first.run_after  # the last turn pushed it back
    await run_worker()
    assert script.calls == []  # not due yet

    # The task's time comes, but the chat went on since: it waits again, still one pending.
    await tasks.aupdate(run_after=timezone.now())
    await run_worker()
    assert script.calls == []
    assert await tasks.filter(status="READY").acount() == 1

    # The pause is over: one run reads the three exchanges.
    await PendingLearning.objects.aupdate(learn_after=timezone.now())
    await tasks.filter(status="READY").aupdate(run_after=timezone.now())
    await run_worker()
    assert len(script.calls) == 3
    contents = {f["content"] for f in await sync_to_async(facts_of)(alice)}
    assert contents == {
        "Alice plays the cello",
        "Alice's sister Ana lives in Porto",
        "Alice is vegetarian",
    }
    assert not await PendingLearning.objects.aexists()

    # Read once: another pass finds nothing new to read.
    await sync_to_async(enqueue_save)(chat.pk)
    await run_worker()
    assert len(script.calls) == 3


async def test_with_no_key_the_rules_learn_a_two_message_chat(alice, memory_server, settings):
    settings.ANTHROPIC_API_KEY = ""
    chat = await new_chat(alice, "Nuits")

    await send(chat, "Je suis infirmière de nuit au CHU de Nantes. Une idée de dîner rapide ?")
    await run_worker()

    [learnt] = await sync_to_async(facts_of)(alice)
    assert learnt["content"] == "L'utilisateur est infirmière de nuit au CHU de Nantes."
    assert "rules" in learnt["metadata"]["tags"]
    assert await LearntExchange.objects.filter(conversation=chat, extractor="rules").aexists()


@pytest.mark.parametrize(
    "said, learnt, asked",
    [
        (
            "We fly to Lisbon on May 14th. Is a carry-on enough?",
            "The user flies to Lisbon on May 14th.",
            "What should I pack for my trip?",
        ),
        (
            "Je travaille chez Renault depuis 2019, tu connais ?",
            "L'utilisateur travaille chez Renault depuis 2019.",
            "Comment préparer mon entretien annuel au travail ?",
        ),
    ],
)
async def test_a_fact_said_in_passing_is_recalled_by_the_natural_question_in_a_new_chat(
    alice, memory_server, fake_anthropic, said, learnt, asked
):
    """The question shares no word with the fact: what the message is about (a trip, work)
    is what the fact bears on (a flight, a job)."""
    fake_anthropic.respond_with(ScriptedExtractor({said[:12]: [fact(learnt)]}, reply="Sure."))
    await send(await new_chat(alice, "In passing"), said)
    await run_worker()
    assert [f["content"] for f in await sync_to_async(facts_of)(alice)] == [learnt]

    await send(await new_chat(alice, "Later"), asked)

    assert learnt in recalled_block(fake_anthropic)


async def test_a_turn_ended_while_the_queue_was_away_is_learnt_once_it_is_back(
    alice, memory_server, fake_anthropic, settings
):
    script = ScriptedExtractor({"cello": [fact("Alice plays the cello", "self")]})
    fake_anthropic.respond_with(script)
    chat = await new_chat(alice)
    # The queue cannot be reached: the enqueue after the turn is refused.
    db_tasks = settings.TASKS
    settings.TASKS = unreachable_queue.TASKS

    await send(chat, "I play the cello, which étude should I start?")

    answer = await chat.messages.filter(role="assistant").alast()
    assert answer.status == "complete"  # the turn itself is not failed by the queue
    pending = await PendingLearning.objects.aget(conversation=chat)
    assert pending.queued is False

    # The queue is back; no other turn comes: the workers' sweep queues what never reached
    # the queue, once its time has come.
    settings.TASKS = db_tasks
    await PendingLearning.objects.aupdate(learn_after=timezone.now() - timedelta(minutes=1))
    assert await sync_to_async(conversations.queue_unqueued)() == 1
    assert (await PendingLearning.objects.aget(conversation=chat)).queued is True
    await run_worker()

    assert {f["content"] for f in await sync_to_async(facts_of)(alice)} == {"Alice plays the cello"}
    assert not await PendingLearning.objects.aexists()
    assert await sync_to_async(conversations.queue_unqueued)() == 0


async def test_the_next_turn_queues_the_learning_an_earlier_one_could_not(
    alice, memory_server, fake_anthropic, settings
):
    fake_anthropic.respond_with(ScriptedExtractor({}))
    chat = await new_chat(alice)
    db_tasks = settings.TASKS
    settings.TASKS = unreachable_queue.TASKS
    await send(chat, "First message while the queue is away.")
    settings.TASKS = db_tasks

    await send(chat, "Second message, the queue is back.")

    assert (await PendingLearning.objects.aget(conversation=chat)).queued is True
    tasks = DBTaskResult.objects.filter(task_path="memory.learning.conversations.save_conversation")
    assert await tasks.acount() == 1


@pytest.mark.parametrize("with_key", [False, True])
async def test_a_changed_home_supersedes_the_old_one_kept_in_its_history(
    alice, memory_server, fake_anthropic, settings, with_key
):
    """Newest wins: "I moved to Porto" after "I live in Lyon" used to leave both stored (dedup
    rightly keeps two places apart), and the follow-up was given the stale one alone."""
    if with_key:  # a model that does not say what the fact replaces: the slot rule does
        fake_anthropic.respond_with(
            ScriptedExtractor(
                {
                    "Lyon": [fact("The user lives in Lyon", "self", ["lyon"])],
                    "Porto": [fact("The user moved to Porto", "self", ["porto"])],
                }
            )
        )
    else:
        settings.ANTHROPIC_API_KEY = ""
    await send(await new_chat(alice, "One"), "I live in Lyon. Any good bakery nearby?")
    await run_worker()
    await send(await new_chat(alice, "Two"), "I moved to Porto. Where can I buy a bike?")
    await run_worker()

    [home] = (await sync_to_async(services.list_memories)(user=alice, kinds=FACT_KINDS))["memories"]
    assert "Porto" in home["content"]
    assert [v["content"] for v in home["history"]] == [
        "The user lives in Lyon" + ("" if with_key else ".")
    ]
    search = sync_to_async(services.search_memories)
    found = await search(user=alice, query="Lyon", kinds=FACT_KINDS)
    assert all("Lyon" not in r["content"] for r in found["results"])


async def test_a_negation_ends_the_value_it_names(alice, memory_server, settings):
    settings.ANTHROPIC_API_KEY = ""
    # Nothing recalled: the echo filter (its own rule, its own tests) stays out of this one.
    await MemorySettings.objects.acreate(user=alice, auto_retrieve=False)
    await send(await new_chat(alice, "One"), "I'm vegetarian. What should I cook tonight?")
    await run_worker()
    await send(await new_chat(alice, "Two"), "Je mange de la viande. Une idée pour ce soir ?")
    await run_worker()
    await send(await new_chat(alice, "Three"), "Je ne mange plus de viande. Une recette ?")
    await run_worker()

    facts = (await sync_to_async(services.list_memories)(user=alice, kinds=FACT_KINDS))["memories"]
    assert [f["content"] for f in facts] == ["L'utilisateur ne mange plus de viande."]
    assert [v["content"] for v in facts[0]["history"]] == [
        "The user is vegetarian.",
        "L'utilisateur mange de la viande.",
    ]


def _next(month: int, day: int):
    """The next `day` of `month` after today (a date the user names, read as to come)."""
    from datetime import date

    today = timezone.now().date()
    named = date(today.year, month, day)
    return named if named > today else named.replace(year=today.year + 1)


async def test_a_learnt_fact_is_dated_by_its_message_and_a_plan_by_its_own_date(
    alice, memory_server, settings
):
    """A fact was dated midnight UTC of the chat's day, and a plan ("on 12 May for three
    weeks") expired three weeks from the day it was said, months before the trip."""
    from chat.models import Message

    settings.ANTHROPIC_API_KEY = ""
    chat = await new_chat(alice, "Trip")
    await send(chat, "I live in Porto. We leave for Peru on 12 May for three weeks.")
    await run_worker()

    said = await Message.objects.filter(conversation=chat, role="user").afirst()
    facts = {f["content"]: f["metadata"] for f in await sync_to_async(facts_of)(alice)}
    home = facts["The user lives in Porto."]
    assert home["date"][:19] == said.created_at.astimezone(UTC).isoformat()[:19]
    trip = facts["The user leaves for Peru on 12 May for three weeks."]
    assert trip["date"].startswith(_next(5, 12).isoformat())
    assert trip["expires_at"] is None and "planned" in trip["tags"]


async def test_a_state_said_to_last_until_a_date_expires_then(alice, memory_server, fake_anthropic):
    """The model gave "on sick leave until the end of February" a week."""
    leave = "The user is on sick leave until the end of February"
    fake_anthropic.respond_with(
        ScriptedExtractor({"sick leave": [fact(leave, "fact", ["sick leave"], expires="7d")]})
    )
    await send(await new_chat(alice, "Leave"), "I'm on sick leave until the end of February.")
    await run_worker()

    [stored] = await sync_to_async(facts_of)(alice)
    end = _next(3, 1) - timedelta(days=1)  # the last day of the next February
    assert stored["metadata"]["expires_at"][:10] in (end.isoformat(), _next(3, 1).isoformat())


@pytest.mark.parametrize(
    "asked, needed",
    [
        ("Where did I spend my childhood?", "Dakar"),
        ("What's the weather like where I live?", "Porto"),
        ("What do I do for a living?", "nurse"),
        ("What can I order at the pizzeria tonight?", "gluten"),
    ],
)
async def test_a_question_that_does_not_repeat_the_facts_words_recalls_it(
    alice, memory_server, settings, asked, needed
):
    """ "The user grew up in Dakar" scored 0.01 against "where did I spend my childhood?" and
    was left out of the prompt: the rules store the words of the questions a fact answers."""
    settings.ANTHROPIC_API_KEY = ""
    await send(
        await new_chat(alice, "About me"),
        "I grew up in Dakar. I moved to Porto last year. I work as a nurse. "
        "I've been gluten-free since 2020.",
    )
    await run_worker()
    assert len(await sync_to_async(facts_of)(alice)) == 4

    answer = (await send(await new_chat(alice, "Later"), asked))[-1].message.content

    # The offline responder says back what memory recalled for the message.
    recalled = answer.partition("What my memory recalled for this message:")[2]
    assert needed in recalled, answer


async def test_an_unrelated_message_recalls_none_of_those_facts(alice, memory_server, settings):
    settings.ANTHROPIC_API_KEY = ""
    await send(
        await new_chat(alice, "About me"),
        "I grew up in Dakar. I moved to Porto last year. I work as a nurse. "
        "I've been gluten-free since 2020.",
    )
    await run_worker()

    for unrelated in ("Write a haiku about the sea.", "Explain how a hash map works."):
        answer = (await send(await new_chat(alice, "Other"), unrelated))[-1].message.content
        assert "What my memory recalled" not in answer, answer


async def test_a_change_the_model_marks_is_never_dropped_as_an_echo(
    alice, memory_server, fake_anthropic
):
    """ "Idris is 7" against the recalled "Idris is 6" was dropped as an echo (the same
    words): the sheet then gave the model the old age alone."""
    six, seven = "The user's son Idris is 6", "The user's son Idris is 7"
    await sync_to_async(services.add_thought)(user=alice, content=six, context={"kind": "fact"})
    fake_anthropic.respond_with(
        ScriptedExtractor({"Idris turned 7": [fact(seven, "fact", ["idris"], replaces="K1")]})
    )
    chat = await new_chat(alice, "Cake")

    await send(chat, "Idris turned 7 on Sunday, we made a volcano cake.")
    await run_worker()

    logged = await MemoryRetrieval.objects.filter(conversation=chat).afirst()
    assert logged.memories  # "Idris is 6" was recalled in this chat
    assert [f["content"] for f in await sync_to_async(facts_of)(alice)] == [seven]
