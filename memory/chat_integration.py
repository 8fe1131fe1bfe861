"""The one seam between the chat loop and the memory.

The chat turn (chat/) asks `prepare_turn` what memory brings to this turn: text for the
system prompt, tools to offer Claude, and an executor for those tools. chat/ never
imports the MCP client or the services directly.

Issue 5 (memory tools, auto-retrieval, guiding prompt) fills this in; until then the
turn gets no memory at all, which is also what a disabled memory gives.
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
    return TurnMemory()
