"""Reads for the chat pages and API, always scoped to the user."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta

from django.http import Http404
from django.utils import timezone
from django.utils.translation import gettext as _

from chat.models import Conversation, Message

SIDEBAR_PAGE = 40  # conversations per sidebar page; "Show more" loads the next
MESSAGES_SHOWN = 200  # the most recent messages a conversation page renders
# Opened at an older message (a search hit): this many messages before and after it.
CONTEXT_BEFORE, CONTEXT_AFTER = 10, 40


def conversation_for_user(*, user, conversation_id) -> Conversation:
    """The user's conversation, or 404 (other users' conversations do not exist for them)."""
    try:
        return Conversation.objects.get(pk=conversation_id, user=user)
    except (Conversation.DoesNotExist, ValueError, TypeError):
        raise Http404("No such conversation") from None


async def aconversation_for_user(*, user, conversation_id) -> Conversation:
    try:
        return await Conversation.objects.aget(pk=conversation_id, user=user)
    except (Conversation.DoesNotExist, ValueError, TypeError):
        raise Http404("No such conversation") from None


def sidebar_page(*, user, offset=0, limit=SIDEBAR_PAGE) -> tuple[list[Conversation], bool]:
    """One page of the user's conversations, pinned first then most recent: (rows, has_more)."""
    rows = list(
        Conversation.objects.filter(user=user, incognito=False)
        .only("id", "title", "pinned", "updated_at", "source")
        .order_by("-pinned", "-updated_at", "-id")[offset : offset + limit + 1]
    )
    return rows[:limit], len(rows) > limit


def group_by_recency(conversations, *, now=None) -> list[tuple[str, list[Conversation]]]:
    """Sidebar groups, in order: Pinned, Today, Yesterday, Previous 7 days, Older, then one
    group per assistant chats were imported from ("From ChatGPT"), however old."""
    now = timezone.localtime(now or timezone.now())
    today = now.date()
    groups: dict[str, list[Conversation]] = {}
    for conversation in conversations:
        if conversation.pinned:
            label = "pinned"
        elif conversation.source:
            label = f"from:{conversation.source}"
        else:
            day = timezone.localtime(conversation.updated_at).date()
            if day >= today:
                label = "today"
            elif day == today - timedelta(days=1):
                label = "yesterday"
            elif day >= today - timedelta(days=7):
                label = "week"
            else:
                label = "older"
        groups.setdefault(label, []).append(conversation)
    # Translated here, in the request's language (keys stay language-free above).
    order = {
        "pinned": _("Pinned"),
        "today": _("Today"),
        "yesterday": _("Yesterday"),
        "week": _("Previous 7 days"),
        "older": _("Older"),
    }
    for key, found in groups.items():
        if key.startswith("from:"):
            order[key] = _("From %(assistant)s") % {"assistant": found[0].get_source_display()}
    return [(title, groups[key]) for key, title in order.items() if key in groups]


def conversation_messages(*, conversation, limit=MESSAGES_SHOWN) -> list[Message]:
    rows = list(
        Message.objects.filter(conversation=conversation).order_by("-created_at", "-id")[:limit]
    )
    rows.reverse()
    return rows


@dataclass
class MessageWindow:
    """What a conversation page shows: the latest messages and, when it is opened at an
    older one, a stretch around that one first, `hidden` messages left out in between."""

    latest: list[Message]
    earlier: list[Message] = field(default_factory=list)
    hidden: int = 0


def message_window(*, conversation, at=None) -> MessageWindow:
    """The page's messages, with message `at` (an id, from a search hit) among them."""
    latest = conversation_messages(conversation=conversation)
    if at is None or not latest or at >= latest[0].pk:
        return MessageWindow(latest=latest)
    rows = Message.objects.filter(conversation=conversation)
    if not rows.filter(pk=at).exists():
        return MessageWindow(latest=latest)
    before = list(rows.filter(pk__lt=at).order_by("-id")[:CONTEXT_BEFORE])[::-1]
    after = list(rows.filter(pk__gte=at, pk__lt=latest[0].pk).order_by("id")[: CONTEXT_AFTER + 1])
    earlier = before + after
    hidden = rows.filter(pk__gt=earlier[-1].pk, pk__lt=latest[0].pk).count()
    return MessageWindow(latest=latest, earlier=earlier, hidden=hidden)


def pending_user_message(conversation) -> Message | None:
    """The last message when it is the user's and still has no answer (a turn to run)."""
    last = Message.objects.filter(conversation=conversation).order_by("-created_at", "-id").first()
    if last is not None and last.role == Message.Role.USER:
        return last
    return None
