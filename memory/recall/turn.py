"""What the memory brings to a chat turn: memory's side of the seam (chat/extensions.py).

Listed in settings.CHAT_TURN_EXTENSIONS, `prepare_turn` is called once per turn and
returns a chat TurnExtension: the user's profile (memory/learning/profile.py) at the top of the
memory's system text, the guiding prompt and the memory tools in the user's language,
the executor for those tools (waited for as long as MCP_CALL_TIMEOUT, the one timeout of
a memory call), and, when the user's auto_retrieve is on, the memories found
for the message.

Memory is off for a turn (an empty TurnExtension) when controls.why_memory_off says so
(MCP_MEMORY_ENABLED false, an incognito chat, memory off for the user or the chat). When
the user paused memory, Claude still gets the profile, the recalled memories and the tools
that read or forget, but no save_memory, and is told memory is paused; nothing of the
message is recorded (no recall log row: its text was the query).
If the memory is down or slow, the turn goes on without memories and the user is told
once per outage per conversation (again only after a retrieval worked).
"""

from __future__ import annotations

from chat.extensions import TurnExtension
from chat.models import ConversationSettings
from memory.client import controls, mcp
from memory.learning import kept_out
from memory.learning.profile import aprofile_block
from memory.models import MemorySettings
from memory.recall import notes
from memory.recall.prompts import GUIDE, NOTICES, PAUSED, choose_language, detect_language
from memory.recall.retrieval import auto_retrieve, memory_was_down_last_turn
from memory.recall.tools import make_executor, memory_tools

# What pausing memory takes away from Claude: the tools that add.
ADDING_TOOLS = ("save_memory",)


async def prepare_turn(*, user, conversation, user_message) -> TurnExtension:
    """What the memory brings to this turn (`user_message` is the saved chat.Message)."""
    if controls.why_memory_off(conversation=conversation):  # this server, an incognito chat
        return TurnExtension()
    conversation_settings, _ = await ConversationSettings.objects.aget_or_create(
        conversation=conversation
    )
    memory_settings, _ = await MemorySettings.objects.aget_or_create(user=user)
    why_off = controls.why_memory_off(
        conversation=conversation,
        memory_on=memory_settings.memory_enabled,
        chat_memory_on=conversation_settings.enable_memory,
        paused=memory_settings.paused,
    )
    # Said while memory is paused or off: never saved to memory, even once it is back on.
    why = kept_out.kept_out_for(why_off)
    await kept_out.arecord(user_message, why)
    if why_off in controls.SHUT:
        return TurnExtension()

    lang = await _language_of(conversation, user_message)
    # The user's profile first: what Ikario knows about them frames everything else.
    profile = await aprofile_block(user)
    turn_notes = await notes.for_turn(user, lang)  # the user's fixed notes
    tools = memory_tools(lang)
    blocks = [profile, turn_notes.block, GUIDE[lang]]
    if why_off == controls.PAUSED:
        tools = [tool for tool in tools if tool["name"] not in ADDING_TOOLS]
        blocks.append(PAUSED[lang])
    turn = TurnExtension(
        system_blocks=[block for block in blocks if block],
        tools=tools,
        execute_tool=make_executor(user=user, conversation=conversation),
        tool_timeout=mcp.call_timeout(),
    )
    if memory_settings.auto_retrieve:
        # Said while paused (now, or then: a retry after resuming): recalled for Claude only.
        logged = not why and not await kept_out.akept(user_message)
        found = await auto_retrieve(
            user=user,
            conversation=conversation,
            message=user_message,
            memory_settings=memory_settings,
            lang=lang,
            logged=logged,
        )
        if found.block:
            turn.system_blocks.append(found.block)
        await notes.log(turn_notes, found)
        if found.error and not await memory_was_down_last_turn(
            conversation, before_id=found.log_id
        ):
            turn.notices.append(NOTICES["unavailable"][lang])
    return turn


# What the user reads when preparing the memory itself failed (a bug of ours).
prepare_turn.failure_notice = "Memory unavailable: answering without it."


async def _language_of(conversation, user_message) -> str:
    """The language of the user's message; a message too short to tell ("ok") falls back
    on the user's previous messages in this conversation, then English."""
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
