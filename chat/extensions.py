"""What a turn may be given by the rest of the app: chat's side of the seam.

chat knows no other app. An extension is an async callable, listed by dotted path in
`settings.CHAT_TURN_EXTENSIONS` and called once per turn before the first LLM call::

    async def prepare_turn(*, user, conversation, user_message) -> TurnExtension

It brings text for the system prompt, tools for Claude with the executor that runs them
and how long the turn waits for one call, and notices for the user. The turn merges what
every extension brings, in the settings' order. An extension that raises is logged and the
turn goes on without it; the user reads its `failure_notice` (an attribute the callable
may carry) or a generic one.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import cache

from django.conf import settings
from django.utils.module_loading import import_string

logger = logging.getLogger(__name__)

DEFAULT_TOOL_TIMEOUT = 10.0  # seconds, for an extension that does not say
DEFAULT_FAILURE_NOTICE = "Part of the assistant is unavailable: answering without it."


@dataclass
class ToolOutcome:
    """What one tool call gave back, ready to become a tool_result block."""

    content: str  # the text sent back to the model (JSON for structured results)
    is_error: bool = False
    # One line for the UI, e.g. "Searched memories for 'ski trip' — 3 results".
    summary: str = ""


ToolExecutor = Callable[[str, dict], Awaitable[ToolOutcome]]


@dataclass
class TurnExtension:
    """What one extension brings to one turn."""

    # Appended to the system prompt, in order, after the user's custom instructions.
    system_blocks: list[str] = field(default_factory=list)
    # Anthropic tool definitions ({"name", "description", "input_schema"}).
    tools: list[dict] = field(default_factory=list)
    # Runs one call of any of `tools`; None when no tools are offered.
    execute_tool: ToolExecutor | None = None
    # Seconds the turn waits for one call of these tools before it answers "timed out".
    tool_timeout: float = DEFAULT_TOOL_TIMEOUT
    # Said once to the user in the UI (e.g. "Memory unavailable: answering without it").
    notices: list[str] = field(default_factory=list)


Extension = Callable[..., Awaitable[TurnExtension]]


@dataclass
class ToolRoute:
    execute: ToolExecutor
    timeout: float


@dataclass
class PreparedTurn:
    """Every extension's contribution, merged: what run_turn works with."""

    system_blocks: list[str] = field(default_factory=list)
    tools: list[dict] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    routes: dict[str, ToolRoute] = field(default_factory=dict)

    def add(self, extension: TurnExtension) -> None:
        self.system_blocks.extend(extension.system_blocks)
        self.notices.extend(extension.notices)
        if extension.execute_tool is None:
            return
        for tool in extension.tools:
            if tool["name"] in self.routes:
                logger.warning("tool %s offered twice; the first extension keeps it", tool["name"])
                continue
            self.tools.append(tool)
            self.routes[tool["name"]] = ToolRoute(extension.execute_tool, extension.tool_timeout)


@cache
def _load(paths: tuple[str, ...]) -> tuple[Extension, ...]:
    return tuple(import_string(path) for path in paths)


def turn_extensions() -> tuple[Extension, ...]:
    """The configured extensions (read at call time: tests stand in their own)."""
    return _load(tuple(settings.CHAT_TURN_EXTENSIONS))


async def prepare_turn(*, user, conversation, user_message) -> PreparedTurn:
    prepared = PreparedTurn()
    for extension in turn_extensions():
        try:
            brought = await extension(
                user=user, conversation=conversation, user_message=user_message
            )
        except Exception:
            logger.exception("turn extension %r failed; answering without it", extension)
            prepared.notices.append(getattr(extension, "failure_notice", DEFAULT_FAILURE_NOTICE))
            continue
        prepared.add(brought)
    return prepared
