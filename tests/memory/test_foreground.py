"""The memory server's background work waits while this process writes a reply.

memory/foreground.py turns chat's `reply_writing` signal into the memory server's hold and
release (ikario_rag/foreground.py); the server's health says whether it is holding.
"""

from __future__ import annotations

from chat.models import Message
from chat.signals import reply_writing
from memory import services


def _paused() -> bool:
    return services.server_stats()["health"]["background_paused"]


def test_it_pauses_the_memory_servers_background_work_while_a_reply_is_written(memory_server):
    memory_server.wait_connected()
    before = _paused()
    reply_writing.send(sender=Message, writing=True)
    during = _paused()
    reply_writing.send(sender=Message, writing=False)
    after = _paused()
    assert (before, during, after) == (False, True, False)


def test_it_leaves_the_server_alone_when_background_work_never_yields(memory_server, settings):
    memory_server.wait_connected()
    settings.TASKS_YIELD_TO_CHAT = 0
    reply_writing.send(sender=Message, writing=True)
    try:
        assert _paused() is False
    finally:
        settings.TASKS_YIELD_TO_CHAT = 10
        reply_writing.send(sender=Message, writing=False)


def test_it_tells_nobody_without_a_server_on_this_machine(no_memory_server):
    # No lock file names a server: the signal goes nowhere, the reply goes on.
    sent = reply_writing.send_robust(sender=Message, writing=True)
    reply_writing.send_robust(sender=Message, writing=False)
    assert [outcome for _, outcome in sent if isinstance(outcome, Exception)] == []
