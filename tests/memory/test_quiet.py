"""Background work steps aside while an answer streams (memory/quiet.py): a task starts,
and an auto-save sends its next batch, only once no answer is being written."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.utils import timezone

from chat import streaming
from chat.models import Message
from memory import backup, quiet, worker
from memory.autosave import save_conversation
from memory.models import SavedExchange
from tests.fixtures.builders import add_message, make_conversation

pytestmark = pytest.mark.django_db(transaction=True)

# Bounds a test that would otherwise hang; the waits below end on an event, not a clock.
WAIT = 60.0


def exchanges(n):
    said = []
    for i in range(1, n + 1):
        said += [f"Question {i} about the Vercors?", f"Answer {i}: the Vercors plateau."]
    return said


def streaming_answer(user, *, heartbeat_age=0.0, **owner) -> Message:
    """An answer a process on another host is writing: only its heartbeat tells."""
    chat = make_conversation(user, "Elsewhere", "Tell me a story.")
    fields = {
        "stream_token": "another-process",
        "stream_host": "another-host",
        "stream_pid": 1,
        "stream_heartbeat": timezone.now() - timedelta(seconds=heartbeat_age),
        **owner,
    }
    return add_message(chat, "Once upon", role="assistant", status="streaming", **fields)


def counted_looks(monkeypatch) -> tuple[list[bool], threading.Event]:
    """Background work's looks at the chat, recorded (busy or not); the event is set once
    three of them found it busy, i.e. the work has been waiting."""
    looks: list[bool] = []
    looked_thrice = threading.Event()

    def counted_look():
        looks.append(busy := streaming.chat_is_busy())
        if sum(looks) >= 3:
            looked_thrice.set()
        return busy

    monkeypatch.setattr(quiet, "chat_is_busy", counted_look)
    return looks, looked_thrice


def test_it_sees_an_answer_streaming_in_another_process_and_not_an_abandoned_one(alice, settings):
    assert not streaming.chat_is_busy()
    answer = streaming_answer(alice)
    assert streaming.chat_is_busy()

    settings.CHAT_STREAM_STALE_AFTER = 60
    Message.objects.filter(pk=answer.pk).update(
        stream_heartbeat=timezone.now() - timedelta(seconds=120)
    )
    assert not streaming.chat_is_busy()  # its writer stopped beating: abandoned

    Message.objects.filter(pk=answer.pk).update(stream_heartbeat=timezone.now(), status="complete")
    assert not streaming.chat_is_busy()


async def test_it_sees_an_answer_this_process_is_writing(alice):
    from asgiref.sync import sync_to_async

    chat = await sync_to_async(make_conversation)(alice, "Here", "Hello?")
    answer = await Message.objects.acreate(
        conversation=chat, role="assistant", status="streaming", **streaming.owner_fields()
    )
    async with streaming.writing(answer):
        assert await sync_to_async(streaming.chat_is_busy)()
    await Message.objects.filter(pk=answer.pk).aupdate(status="complete")
    assert not await sync_to_async(streaming.chat_is_busy)()


def test_it_starts_a_task_only_once_no_answer_is_streaming(alice, bob, memory_server, monkeypatch):
    chat = make_conversation(alice, "Vercors", *exchanges(6))
    answer = streaming_answer(bob)
    looks, looked_thrice = counted_looks(monkeypatch)
    save_conversation.enqueue(chat.pk)
    runner = threading.Thread(target=worker.run_ready_tasks)
    runner.start()
    try:
        assert looked_thrice.wait(WAIT)
        assert SavedExchange.objects.filter(conversation=chat).count() == 0
    finally:
        Message.objects.filter(pk=answer.pk).update(status="complete")
        runner.join(WAIT)
    assert not runner.is_alive()
    assert SavedExchange.objects.filter(conversation=chat).count() == 6
    assert looks[:3] == [True, True, True] and looks[-1] is False


def test_it_pauses_an_auto_save_between_batches_while_an_answer_streams(
    alice, bob, memory_server, monkeypatch
):
    # An answer starts streaming once the save has sent its first batch: that batch's
    # records (SQLite's one writer) and the next batch wait until it ends.
    chat = make_conversation(alice, "Vercors", *exchanges(6))
    sent = []
    answer = []
    add_thoughts = backup.services.add_thoughts

    def first_batch_then_an_answer(**kwargs):
        sent.append(len(kwargs["items"]))
        out = add_thoughts(**kwargs)
        if len(sent) == 1:
            answer.append(streaming_answer(bob))
        return out

    monkeypatch.setattr(backup.services, "add_thoughts", first_batch_then_an_answer)
    _, looked_thrice = counted_looks(monkeypatch)
    saving = threading.Thread(target=lambda: backup.backup_conversation(chat, background=True))
    saving.start()
    try:
        assert looked_thrice.wait(WAIT)
        assert len(sent) == 1
        assert SavedExchange.objects.filter(conversation=chat).count() == 0
    finally:
        if answer:
            Message.objects.filter(pk=answer[0].pk).update(status="complete")
        saving.join(WAIT)
    assert SavedExchange.objects.filter(conversation=chat).count() == 6
    assert len(sent) == 6 // backup.BATCH_ITEMS


def test_it_goes_on_when_the_chat_stays_busy_past_its_most(alice, bob, memory_server, settings):
    settings.TASKS_YIELD_TO_CHAT = 0.2
    chat = make_conversation(alice, "Vercors", *exchanges(6))
    streaming_answer(bob)  # never ends

    save_conversation.enqueue(chat.pk)
    worker.run_ready_tasks()

    assert SavedExchange.objects.filter(conversation=chat).count() == 6


def test_it_does_not_wait_at_all_when_turned_off(alice, settings, monkeypatch):
    settings.TASKS_YIELD_TO_CHAT = 0
    monkeypatch.setattr(quiet, "chat_is_busy", lambda: pytest.fail("looked at the chat"))
    assert quiet.wait_until_chat_is_quiet() == 0.0


def test_it_saves_from_the_button_at_once_while_an_answer_streams(
    alice, bob, memory_server, monkeypatch
):
    # The person clicking Save waits for nobody else's answer: only background work yields.
    chat = make_conversation(alice, "Vercors", *exchanges(6))
    streaming_answer(bob)
    monkeypatch.setattr(
        backup, "wait_until_chat_is_quiet", lambda **_: pytest.fail("the button waited")
    )

    result = backup.backup_conversation(chat)

    assert result.saved == 6
