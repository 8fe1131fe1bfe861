"""The memory server's background work waits while this process writes a reply.

memory/foreground.py turns chat's `reply_writing` signal into the memory server's hold and
release (ikario_rag/foreground.py); the server's health says whether it is holding.

A signal is delivered when the kernel and the server's signal thread get to it, not when
os.kill returns: each look waits (at most TOLD_WAIT, a bound, not an expectation) for the
state the signal asks for, and the assertion is on what the server finally said.
"""

from __future__ import annotations

import time

from chat.models import Message
from chat.signals import reply_writing
from memory import foreground, services

# A bound on a signal's delivery on a loaded machine, not an expectation of speed.
TOLD_WAIT = 30.0


def _paused() -> bool:
    return services.server_stats()["health"]["background_paused"]


def _paused_once_told(expected: bool) -> bool:
    """What the server's health says once it shows `expected`, or when the bound runs out."""
    deadline = time.monotonic() + TOLD_WAIT
    while (paused := _paused()) != expected and time.monotonic() < deadline:
        time.sleep(0.02)
    return paused


def test_it_pauses_the_memory_servers_background_work_while_a_reply_is_written(memory_server):
    memory_server.wait_connected()
    before = _paused()
    reply_writing.send(sender=Message, writing=True)
    during = _paused_once_told(True)
    reply_writing.send(sender=Message, writing=False)
    after = _paused_once_told(False)
    assert (before, during, after) == (False, True, False)


def test_it_leaves_the_server_alone_when_background_work_never_yields(
    memory_server, settings, monkeypatch
):
    memory_server.wait_connected()
    # Every signal the app would send goes through here (and still goes out): a signal in
    # flight would not show in the health yet, so the sends themselves are counted.
    told: list[bool] = []
    tell = foreground.tell_foreground

    def counted(index_dir, *, busy):
        told.append(busy)
        return tell(index_dir, busy=busy)

    monkeypatch.setattr(foreground, "tell_foreground", counted)
    settings.TASKS_YIELD_TO_CHAT = 0
    reply_writing.send(sender=Message, writing=True)
    try:
        assert (told, _paused()) == ([], False)
    finally:
        settings.TASKS_YIELD_TO_CHAT = 10
        reply_writing.send(sender=Message, writing=False)


def test_it_tells_nobody_without_a_server_on_this_machine(no_memory_server):
    # No lock file names a server: the signal goes nowhere, the reply goes on.
    sent = reply_writing.send_robust(sender=Message, writing=True)
    reply_writing.send_robust(sender=Message, writing=False)
    assert [outcome for _, outcome in sent if isinstance(outcome, Exception)] == []
