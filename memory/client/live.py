"""Memory changes, live: every page the user has open hears of them, without a reload.

memory/client/services.py calls `changed` after every write (Claude's tool, the background
worker, a save button, the memory page, another tab), and the UI calls `toast` for what
the user did. Both go out as the user's UI events (chat/events.py): on any page the
header indicator reloads itself with a pulse (an element in #live-updates that loads it)
and a toast appears; the memory page's own socket (memory/web/consumers.py) also reads which
memories were added, changed or removed and updates its list.
"""

from __future__ import annotations

from django.template.loader import render_to_string

from chat import events

TOPIC = "memory"


def _event(added, removed, updated, reset) -> dict:
    return {
        "topic": TOPIC,
        "added": [str(i) for i in added if i],
        "removed": [str(i) for i in removed if i],
        "updated": [str(i) for i in updated if i],
        "reset": bool(reset),
    }


def _pulse() -> str:
    return render_to_string("memory/live.html#pulse")


def changed(*, user, added=(), removed=(), updated=(), reset=False) -> None:
    """Tell the user's open pages that their memory changed (from sync code)."""
    events.publish(user.pk, html=_pulse(), **_event(added, removed, updated, reset))


async def achanged(*, user, added=(), removed=(), updated=(), reset=False) -> None:
    await events.apublish(user.pk, html=_pulse(), **_event(added, removed, updated, reset))


def toast(*, user, text: str) -> None:
    """A short message on every page the user has open ("Saved to memory")."""
    events.publish(user.pk, html=render_to_string("memory/live.html#toast", {"text": text}))


async def atoast(*, user, text: str) -> None:
    html = render_to_string("memory/live.html#toast", {"text": text})
    await events.apublish(user.pk, html=html)
