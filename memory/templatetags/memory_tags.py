"""Template helpers for the memory widgets included in the chat page."""

from datetime import timedelta

from django import template
from django.utils import timezone
from django.utils.timesince import timesince
from django.utils.translation import gettext

from chat.models import Conversation, ConversationSettings
from memory.client import controls, mcp
from memory.display import cards, categories
from memory.learning import profile
from memory.learning.backup import backup_counts, failure_of
from memory.models import MemorySettings
from memory.recall.log import answers_with_recall, answers_without_memory

register = template.Library()


@register.simple_tag
def memory_enabled() -> bool:
    """False when MCP_MEMORY_ENABLED is off: the widgets then offer nothing to click."""
    return mcp.memory_enabled()


@register.simple_tag(takes_context=True)
def memory_state(context, message=None) -> str:
    """ "on", "off" (the signed-in user turned memory off) or "disabled" (on this server).

    The user is the request's; a frame sent over the WebSocket has no request, so there
    it is the owner of `message`'s conversation. Computed once per request.
    """
    if not mcp.memory_enabled():
        return "disabled"
    request = context.get("request")
    state = getattr(request, "_memory_state", None)
    if state is not None:
        return state
    user = getattr(request, "user", None)
    if user is not None and user.is_authenticated:
        state = "on" if MemorySettings.is_on_for(user) else "off"
        request._memory_state = state
        return state
    owner = _owner_of(message)
    return "on" if owner is not None and MemorySettings.is_on_for(owner) else "off"


def _owner_of(message):
    if isinstance(message, dict):
        conversation_id = message.get("conversation_id")
    else:
        conversation_id = getattr(message, "conversation_id", None)
    if not conversation_id:
        return None
    return Conversation.objects.filter(pk=conversation_id).values_list("user_id", flat=True).first()


@register.simple_tag
def memory_categories() -> list[tuple[str, str, bool]]:
    """(value, label, is_default) of every category, for the widgets' pickers."""
    return categories.choices()


@register.simple_tag(takes_context=True)
def memory_backup_state(context, message) -> dict:
    """How much of the message's conversation is in memory: {"saved", "total", "complete",
    "failed", "reason"}.

    Computed once per conversation per page (kept on the page's conversation object).
    """
    conversation = context.get("conversation")
    conversation_id = getattr(message, "conversation_id", None) or (
        message.get("conversation_id") if isinstance(message, dict) else None
    )
    if not isinstance(conversation, Conversation) or conversation.pk != conversation_id:
        conversation = Conversation.objects.filter(pk=conversation_id).first()
        if conversation is None:
            return {"saved": 0, "total": 0, "complete": False, "failed": 0, "reason": ""}
    state = getattr(conversation, "_memory_backup_state", None)
    if state is None:
        saved, failed, total = backup_counts(conversation)
        state = {"saved": saved, "total": total, "complete": total > 0 and saved >= total}
        # Exchanges the memory refused (memory/learning/backup.py): said, with the memory's reason.
        state.update(failed=failed, reason=failure_of(conversation) if failed else "")
        conversation._memory_backup_state = state
    return state


def _conversation_of(context, message) -> Conversation | None:
    """The message's conversation: the page's own when it is the one (cached there)."""
    conversation = context.get("conversation")
    conversation_id = getattr(message, "conversation_id", None) or (
        message.get("conversation_id") if isinstance(message, dict) else None
    )
    if isinstance(conversation, Conversation) and conversation.pk == conversation_id:
        return conversation
    return Conversation.objects.filter(pk=conversation_id).first()


@register.simple_tag(takes_context=True)
def memory_save_blocked(context, message) -> str:
    """Why this message's conversation cannot be saved: "incognito", "chat_off" (its own
    memory switch), "paused" or ""."""
    conversation = _conversation_of(context, message)
    if conversation is None:
        return ""
    blocked = getattr(conversation, "_memory_save_blocked", None)
    if blocked is None:
        # The page's own user: the answers the sidebar and the menus already asked for.
        request = context.get("request")
        user = getattr(request, "user", None)
        own = user is not None and user.is_authenticated and user.pk == conversation.user_id
        why = controls.why_memory_off(conversation=conversation)  # incognito: no query
        if not why:
            why = controls.why_memory_off(
                conversation=conversation,
                chat_memory_on=conversation_memory_on(context, conversation)
                if own
                else controls.conversation_memory_on(conversation),
                paused=memory_paused(context)
                if own
                else controls.saving_paused(conversation.user_id),
            )
        blocked = why if why in (controls.INCOGNITO, controls.CHAT_OFF, controls.PAUSED) else ""
        conversation._memory_save_blocked = blocked
    return blocked


def _answer_among(context, message, cache: str, load) -> bool:
    """Whether this assistant answer is among `load(conversation id)`'s, read once a page
    (kept on the conversation as `cache`)."""
    conversation = _conversation_of(context, message)
    if conversation is None or getattr(message, "role", "") != "assistant":
        return False
    answers = getattr(conversation, cache, None)
    if answers is None:
        answers = load(conversation.pk)
        setattr(conversation, cache, answers)
    return message.pk in answers


@register.simple_tag(takes_context=True)
def memory_recalled_for(context, message) -> bool:
    """Auto-recall put memories in front of Claude for this answer."""
    return _answer_among(context, message, "_memory_recalled_answers", answers_with_recall)


@register.simple_tag(takes_context=True)
def memory_missing_for(context, message) -> bool:
    """This answer was given while memory was unavailable (its recall failed)."""
    return _answer_among(context, message, "_memory_missing_answers", answers_without_memory)


@register.simple_tag(takes_context=True)
def memory_paused(context) -> bool:
    """The signed-in user paused memory (once per request)."""
    request = context.get("request")
    paused = getattr(request, "_memory_paused", None)
    if paused is None:
        user = getattr(request, "user", None)
        paused = bool(user and user.is_authenticated and controls.saving_paused(user.pk))
        if request is not None:
            request._memory_paused = paused
    return paused


@register.simple_tag(takes_context=True)
def conversation_memory_on(context, conversation) -> bool:
    """The conversation's own memory switch (one query per page for the whole sidebar)."""
    request = context.get("request")
    off = getattr(request, "_memory_off_conversations", None)
    if off is None:
        user = getattr(request, "user", None)
        off = (
            set(
                ConversationSettings.objects.filter(
                    conversation__user=user, enable_memory=False
                ).values_list("conversation_id", flat=True)
            )
            if user is not None and user.is_authenticated
            else set()
        )
        if request is not None:
            request._memory_off_conversations = off
    return conversation.pk not in off


@register.filter
def score_class(score) -> str:
    """ "score-0" (red, #EF4444) to "score-10" (green, #10B981), in tenths."""
    try:
        value = float(score)
    except (TypeError, ValueError):
        return "score-none"
    return f"score-{round(min(1.0, max(0.0, value)) * 10)}"


@register.filter
def percent(score) -> str:
    try:
        return f"{round(float(score) * 100)}%"
    except (TypeError, ValueError):
        return ""


@register.filter
def category_label(category) -> str:
    return categories.label(category)


@register.filter
def kind_label(kind) -> str:
    return str(cards.KIND_LABELS.get(kind, kind))


@register.filter
def ago(moment) -> str:
    """ "just now" under a minute (timesince alone says "0 minutes"), else "3 hours ago"."""
    if moment is None:
        return ""
    if timezone.now() - moment < timedelta(minutes=1):
        return gettext("just now")
    return gettext("%(time)s ago") % {"time": timesince(moment, depth=1)}


@register.filter
def category_explanation(category) -> str:
    """What the category is for, in one line (its badge's title, the legend)."""
    return categories.explanation(category)


@register.simple_tag
def memory_category_legend() -> list[dict]:
    """Every category's label and explanation, for the /memory page's legend."""
    return categories.legend()


@register.filter
def profile_for_reader(text) -> str:
    """The profile's section headings in the reader's language (memory/learning/profile.py)."""
    return profile.for_reader(str(text or ""))
