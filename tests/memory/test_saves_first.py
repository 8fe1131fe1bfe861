"""Learning never starves saves (issue 38): with many conversations' learning waiting, a
conversation due a save (pinned) is saved first by the one worker serving both. Real task
backend and worker, real ikario_rag."""

from __future__ import annotations

import pytest
from django_tasks_db.models import DBTaskResult

from chat.models import Conversation
from memory.learning import conversations
from memory.models import LearntExchange, SavedExchange
from memory.worker import database
from tests.fixtures.builders import make_conversation

pytestmark = pytest.mark.django_db(transaction=True)
WAITING = 12


def learning_waits(user) -> list[Conversation]:
    """Short conversations whose turns ended: each one's learning queued and due now."""
    chats = [
        make_conversation(user, f"Bees {n}", f"I keep {n + 2} hives of bees.", "Bees are busy.")
        for n in range(WAITING)
    ]
    for chat in chats:
        conversations.learn_later(chat.pk, delay=0)
    return chats


def pin(chat: Conversation) -> None:
    """What the sidebar's pin does: the conversation pinned, then conversation_pinned sent."""
    Conversation.objects.filter(pk=chat.pk).update(pinned=True)
    conversations.on_conversation_pinned(None, conversation=Conversation.objects.get(pk=chat.pk))


def run_one_job() -> None:
    database.make_worker(batch=True, max_tasks=1).run()


def test_a_pinned_conversation_is_saved_before_the_learning_queued_earlier(alice, memory_server):
    waiting = learning_waits(alice)
    trip = make_conversation(alice, "Trip", "We fly to Oslo on 3 May.", "Oslo on 3 May, noted.")
    pin(trip)

    run_one_job()

    assert SavedExchange.objects.filter(conversation=trip).exists()
    assert not LearntExchange.objects.filter(conversation__in=waiting).exists()
    database.run_ready_tasks()  # the learning still runs, after
    assert LearntExchange.objects.filter(conversation__in=waiting).count() == WAITING


def test_pinning_a_conversation_whose_learning_waits_moves_that_job_ahead(alice, memory_server):
    trip = make_conversation(alice, "Trip", "We fly to Oslo on 3 May.", "Oslo on 3 May, noted.")
    conversations.learn_later(trip.pk, delay=0)  # its turn's learning, queued first...
    waiting = learning_waits(alice)  # ...then others', all behind it by age only
    DBTaskResult.objects.filter(args_kwargs__args=[trip.pk]).update(
        run_after=DBTaskResult.objects.order_by("-run_after").first().run_after
    )  # the latest due of all: by age it would run last
    pin(trip)

    run_one_job()

    assert SavedExchange.objects.filter(conversation=trip).exists()
    assert not LearntExchange.objects.filter(conversation__in=waiting).exists()
    # Moved, not queued twice: two runs at once of one conversation would race.
    assert DBTaskResult.objects.filter(args_kwargs__args=[trip.pk]).count() == 1
