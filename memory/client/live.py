"""Memory changes, live: every page the user has open hears of them, without a reload.

memory/client/services.py calls `changed` after every write (Claude's tool, the background
worker, a save button, the memory page, another tab): it sends the `memory_changed`
signal, which the web wing receives (memory/web/consumers.py) and renders: on any page the
header indicator reloads itself with a pulse (an element in #live-updates that loads it),
and the memory page's own socket reads which memories were added, changed or removed and
updates its list. The UI calls `toast` for what the user did. Both go out as the user's UI
events (chat/events.py).
"""

from __future__ import annotations

from django.dispatch import Signal
from django.template.loader import render_to_string

from chat import events

TOPIC = "memory"
# Sent with user=, added=, removed=, updated= (memory ids) and reset= (everything went).
memory_changed = Signal()


def _event(added, removed, updated, reset) -> dict:
    return {
        "added": [str(i) for i in added if i],
        "removed": [str(i) for i in removed if i],
        "updated": [str(i) for i in updated if i],
        "reset": bool(reset),
    }


def changed(*, user, added=(), removed=(), updated=(), reset=False) -> None:
    """Tell whoever listens that the user's memory changed (from sync code)."""
    memory_changed.send(sender=TOPIC, user=user, **_event(added, removed, updated, reset))


async def achanged(*, user, added=(), removed=(), updated=(), reset=False) -> None:
    await memory_changed.asend(sender=TOPIC, user=user, **_event(added, removed, updated, reset))


def toast(*, user, text: str) -> None:
    """A short message on every page the user has open ("Saved to memory")."""
    events.publish(user.pk, html=render_to_string("memory/live.html#toast", {"text": text}))


async def atoast(*, user, text: str) -> None:
    html = render_to_string("memory/live.html#toast", {"text": text})
    await events.apublish(user.pk, html=html)
