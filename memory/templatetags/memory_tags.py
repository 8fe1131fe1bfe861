"""Template helpers for the memory widgets included in the chat page."""

from django import template

from chat.models import Conversation
from memory import categories, mcp_client
from memory.backup import backup_state
from memory.models import MemorySettings

register = template.Library()


@register.simple_tag
def memory_enabled() -> bool:
    """False when MCP_MEMORY_ENABLED is off: the widgets then offer nothing to click."""
    return mcp_client.memory_enabled()


@register.simple_tag(takes_context=True)
def memory_state(context, message=None) -> str:
    """ "on", "off" (the signed-in user turned memory off) or "disabled" (on this server).

    The user is the request's; a frame sent over the WebSocket has no request, so there
    it is the owner of `message`'s conversation. Computed once per request.
    """
    if not mcp_client.memory_enabled():
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
    """How much of the message's conversation is in memory: {"saved", "total", "complete"}.

    Computed once per conversation per page (kept on the page's conversation object).
    """
    conversation = context.get("conversation")
    conversation_id = getattr(message, "conversation_id", None) or (
        message.get("conversation_id") if isinstance(message, dict) else None
    )
    if not isinstance(conversation, Conversation) or conversation.pk != conversation_id:
        conversation = Conversation.objects.filter(pk=conversation_id).first()
        if conversation is None:
            return {"saved": 0, "total": 0, "complete": False}
    state = getattr(conversation, "_memory_backup_state", None)
    if state is None:
        saved, total = backup_state(conversation)
        state = {"saved": saved, "total": total, "complete": total > 0 and saved >= total}
        conversation._memory_backup_state = state
    return state
