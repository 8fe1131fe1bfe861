"""Claude's look at the conversation it is in: `conversation_summary` (asked, learnt, done, next).

A turn extension of chat's own (chat/extensions.py), listed in CHAT_TURN_EXTENSIONS. The
tool answers with chat/summaries.py's `session_summary` of this conversation before the
message being answered: what the user asked, what was learnt, what was done (the tools
used and what they found), what comes next, and the story so far from the conversation's
summaries. Offered once the conversation has SESSION_FROM answered exchanges (a shorter
one is in the request whole), never in an incognito chat (which looks at nothing).
"""

from __future__ import annotations

import json

from asgiref.sync import sync_to_async
from django.utils.translation import ngettext

from chat import summaries
from chat.extensions import ToolOutcome, TurnExtension
from chat.models import Message

SESSION_FROM = 2

TOOLS = [
    {
        "name": "conversation_summary",
        "description": "Summarise this conversation so far: what the user asked (a line per "
        "exchange), what you learnt about them, what was done (each tool used and what it "
        "found), what comes next, and the story so far. Use it when the user asks where you "
        "are, what was decided, or to recap, or when the earliest part of a long "
        "conversation matters.",
        "input_schema": {"type": "object", "properties": {}},
    }
]


async def prepare_turn(*, user, conversation, user_message) -> TurnExtension:
    if conversation.incognito:
        return TurnExtension()
    answered = Message.objects.filter(
        conversation=conversation, role=Message.Role.ASSISTANT, status=Message.Status.COMPLETE
    )
    if user_message is not None:
        answered = answered.filter(pk__lt=user_message.pk)
    if await answered.acount() < SESSION_FROM:
        return TurnExtension()
    before_id = user_message.pk if user_message is not None else None
    return TurnExtension(tools=TOOLS, execute_tool=make_executor(conversation, before_id))


prepare_turn.failure_notice = "Conversation summary unavailable: answering without it."


def make_executor(conversation, before_id):
    async def execute(name: str, tool_input: dict) -> ToolOutcome:
        if name != "conversation_summary":
            return ToolOutcome(content=f"Unknown tool: {name}", is_error=True, summary=name)
        found = await sync_to_async(summaries.session_summary)(conversation.pk, before_id=before_id)
        summary = ngettext(
            "Summarised this conversation — %(count)d exchange",
            "Summarised this conversation — %(count)d exchanges",
            found["exchanges"],
        ) % {"count": found["exchanges"]}
        return ToolOutcome(content=json.dumps(found, ensure_ascii=False), summary=summary)

    return execute
