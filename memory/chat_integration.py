"""The one seam between the chat loop and the memory.

The chat turn (chat/) asks `prepare_turn` what memory brings to this turn: text for the
system prompt, tools to offer Claude, and an executor for those tools. chat/ never
imports the MCP client or the services directly.

Memory is off for a turn (no tools, no guide, no memories: an empty TurnMemory) when
MCP_MEMORY_ENABLED is false, the conversation's enable_memory is off, or the user's
MemorySettings.memory_enabled is off. Otherwise the turn gets the guiding prompt and the
tools in the user's language, and, when the user's auto_retrieve is on, the memories found
for the message. If the memory is down or slow, the turn goes on without memories and the
user is told once per outage per conversation (again only after a retrieval worked).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field


@dataclass
class ToolOutcome:
    """What one tool call gave back, ready to become a tool_result block."""

    content: str  # the text sent back to the model (JSON for structured results)
    is_error: bool = False
    # One line for the UI, e.g. "Searched memories for 'ski trip' — 3 results".
    summary: str = ""


ToolExecutor = Callable[[str, dict], Awaitable[ToolOutcome]]


@dataclass
class TurnMemory:
    # Appended to the system prompt, in order, after the user's custom instructions.
    system_blocks: list[str] = field(default_factory=list)
    # Anthropic tool definitions ({"name", "description", "input_schema"}) for this turn.
    tools: list[dict] = field(default_factory=list)
    # Runs one tool call; None when no tools are offered.
    execute_tool: ToolExecutor | None = None
    # Said once to the user in the UI (e.g. "Memory unavailable: answering without it").
    notices: list[str] = field(default_factory=list)


async def prepare_turn(*, user, conversation, user_message) -> TurnMemory:
    """What the memory brings to this turn (called once per turn, before the first LLM call).

    `user_message` is the saved chat.Message the user just sent.
    """
    # Imported here: chat/ imports this module early, and these pull in models/services.
    from django.conf import settings

    from chat.models import ConversationSettings
    from memory.models import MemorySettings
    from memory.prompts import GUIDE, NOTICES
    from memory.retrieval import auto_retrieve, memory_was_down_last_turn
    from memory.tools import make_executor, memory_tools

    if not settings.MCP_MEMORY_ENABLED:
        return TurnMemory()
    conversation_settings, _ = await ConversationSettings.objects.aget_or_create(
        conversation=conversation
    )
    if not conversation_settings.enable_memory:
        return TurnMemory()
    memory_settings, _ = await MemorySettings.objects.aget_or_create(user=user)
    if not memory_settings.memory_enabled:
        return TurnMemory()

    lang = await _language_of(conversation, user_message)
    turn = TurnMemory(
        system_blocks=[GUIDE[lang]],
        tools=memory_tools(lang),
        execute_tool=make_executor(user=user, conversation=conversation),
    )
    if memory_settings.auto_retrieve:
        found = await auto_retrieve(
            user=user,
            conversation=conversation,
            message=user_message,
            memory_settings=memory_settings,
            lang=lang,
        )
        if found.block:
            turn.system_blocks.append(found.block)
        if found.error and not await memory_was_down_last_turn(
            conversation, before_id=found.log_id
        ):
            turn.notices.append(NOTICES["unavailable"][lang])
    return turn


async def _language_of(conversation, user_message) -> str:
    """The language of the user's message; a message too short to tell ("ok") falls back
    on the user's previous messages in this conversation, then English."""
    from memory.prompts import choose_language, detect_language

    said = detect_language(user_message.content)
    if said:
        return said
    earlier = (
        conversation.messages.filter(role="user")
        .exclude(pk=user_message.pk)
        .order_by("-created_at", "-id")
        .values_list("content", flat=True)[:5]
    )
    return choose_language(*[content async for content in earlier])
