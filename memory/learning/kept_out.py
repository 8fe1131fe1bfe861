"""Paused means never: what is said while memory is paused, or off for the user or the
chat, is never saved to memory, whoever saves later (auto-save, the Save button, the admin,
`manage.py memory_backfill`, extraction) and whatever the switches say by then.

So it is decided when it is said: every message is looked at as it is created
(`on_message_created`, whoever creates it), the turn looks again at its user message
(prepare_turn, memory/recall/turn.py: a retry while paused) and, once written, at its answer
(`on_turn_finished`: paused while it was written); a message kept out is recorded as a
KeptFromMemory row. memory/learning/backup.py leaves out every exchange with a message recorded.

What the memory server keeps out of a memory it stores (a password, a card number...,
ikario_rag/secrets.py) is said where it happened: `secrets_line` words it for the user.
"""

from __future__ import annotations

from django.utils.translation import gettext as _

from chat.models import Message
from memory.client import controls
from memory.models import KeptFromMemory


def secret_names() -> dict[str, str]:
    """Each kind of secret (ikario_rag/secrets.py), as the user reads it."""
    return {
        "password": _("a password"),
        "pin": _("a PIN"),
        "code": _("a code"),
        "key": _("an access key"),
        "private key": _("a private key"),
        "card number": _("a card number"),
        "bank account": _("a bank account number"),
        "id number": _("an id number"),
    }


def secrets_line(kinds) -> str:
    """ "Kept out: a password, a card number" for what a write left out ("" for nothing)."""
    if not kinds:
        return ""
    names = secret_names()
    return _("Kept out: %(what)s") % {"what": ", ".join(names.get(k, k) for k in kinds)}


def kept_out_for(why_off: str) -> str:
    """What is said while memory is off for this reason (controls.why_memory_off) is
    recorded as kept out: paused, or off for the user or the chat ("" otherwise: an
    incognito chat or a server without memory never saves anything anyway)."""
    return why_off if why_off in KeptFromMemory.Why.values else ""


def why_kept_out(*, conversation) -> str:
    """Why what is said in `conversation` now is kept from memory ("" when it is not)."""
    return kept_out_for(controls.memory_off_for(conversation=conversation))


async def arecord(message, why: str) -> None:
    if why:
        await KeptFromMemory.objects.aget_or_create(message=message, defaults={"why": why})


async def akept(message) -> bool:
    """`message` was said while memory was paused or off (recorded when it was said)."""
    return await KeptFromMemory.objects.filter(message=message).aexists()


def on_turn_finished(sender, *, conversation, message, **kwargs) -> None:
    """turn_finished receiver: the answer is kept out with its question, or when memory
    was paused or switched off while it was being written."""
    why_off = controls.memory_off_for(conversation=conversation)
    if why_off in (controls.DISABLED, controls.INCOGNITO):
        return
    why = kept_out_for(why_off)
    if not why:
        question = (
            Message.objects.filter(
                conversation=conversation, role=Message.Role.USER, pk__lt=message.pk
            )
            .order_by("-pk")
            .values_list("pk", flat=True)
            .first()
        )
        kept = KeptFromMemory.objects.filter(message_id=question).first()
        why = kept.why if kept else ""
    if why:
        KeptFromMemory.objects.get_or_create(message=message, defaults={"why": why})


def on_message_created(sender, *, instance, created: bool, raw=False, **kwargs) -> None:
    """post_save of chat.Message: a message said while memory is paused or off is kept out."""
    if not created or raw:
        return
    why = why_kept_out(conversation=instance.conversation)
    if why:
        KeptFromMemory.objects.get_or_create(message=instance, defaults={"why": why})
