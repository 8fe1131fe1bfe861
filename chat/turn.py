"""One assistant turn: prompt assembly, streaming, the tool loop, and persistence.

`run_turn(conversation=..., user_message=...)` is an async generator of typed events,
consumed alike by the WebSocket consumer (chat/consumers.py) and the JSON/SSE API
(chat/api.py). In order, a turn yields:

* `TurnStarted(message)`: the assistant `Message` row now exists (status "streaming").
* `Notice(text)`: something the user should read once (from the memory, e.g.
  "Memory unavailable: answering without it"). Zero or more, before the first text.
* `TextDelta(text)`: a piece of the answer, as it streams. Raw model text: escape it
  before it reaches a page.
* `ToolStarted(id, name, input)` / `ToolFinished(id, name, summary, is_error)`: one tool
  call the model made and its outcome (`summary` is `ToolOutcome.summary`, the UI line).
* then exactly one of `TurnDone(message)` (status "complete", content, tool_calls and
  usage saved) or `TurnError(message, error)` (status "error", the partial text kept, a
  readable `error` for the UI's Retry box).

The conversation so far is sent within CHAT_CONTEXT_BUDGET estimated tokens, counted after
the system prompt and tools: whole when it fits, else the last turns in full and the earlier
exchanges as summaries (chat/history.py).

Cancelling the consuming task (the Stop button, chat/answers.py; a closed SSE request)
saves the partial answer with status "stopped" and re-raises CancelledError.

What else the turn gets comes from the extensions in `settings.CHAT_TURN_EXTENSIONS`
(chat/extensions.py; the memory is one), called once per turn: their `system_blocks`
follow the custom instructions in the system prompt, their `tools` are offered, and each
tool_use runs through the offering extension's executor, waited for as long as that
extension's `tool_timeout`; an exception or timeout becomes a tool_result with `is_error`.
Once the answer is saved (complete, error or stopped), `chat.signals.turn_finished` is
sent with the conversation and the message. At most
`MAX_TOOL_ROUNDS` (5) rounds of tools run per turn: a sixth request is refused with an
error result and the next call forbids tools (`tool_choice: none`), so the model answers.
Every event has `.kind` and `.as_dict()` (JSON-ready) for the API's SSE stream.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass

from django.conf import settings
from django.contrib.auth import get_user_model
from django.utils import timezone
from django.utils.translation import gettext as _

from chat import extensions, history, llm, streaming
from chat.models import Conversation, ConversationSettings, Message, UserPreferences
from chat.prompt_text import without_tags
from chat.signals import log_failed_listeners, turn_finished

logger = logging.getLogger(__name__)

MAX_TOOL_ROUNDS = 5
STORED_RESULT_LIMIT = 4000  # characters of a tool result kept in Message.tool_calls

BASE_SYSTEM_PROMPT = (
    "You are Claude, a helpful, honest assistant, talking with a user in Ikario, "
    "a chat application. Answer in Markdown when formatting helps."
)
TOOL_LIMIT_TEXT = (
    f"Tool limit reached: no more than {MAX_TOOL_ROUNDS} rounds of tools per answer. "
    "Answer now with what you have, without tools."
)


# --- events ------------------------------------------------------------------------------


@dataclass
class TurnStarted:
    message: Message
    kind = "started"

    def as_dict(self):
        return {"message_id": self.message.pk}


@dataclass
class Notice:
    text: str
    kind = "notice"

    def as_dict(self):
        return {"text": self.text}


@dataclass
class TextDelta:
    text: str
    kind = "text"

    def as_dict(self):
        return {"text": self.text}


@dataclass
class ToolStarted:
    id: str
    name: str
    input: dict
    kind = "tool_started"

    def as_dict(self):
        return {"id": self.id, "name": self.name, "input": self.input}


@dataclass
class ToolFinished:
    id: str
    name: str
    summary: str
    is_error: bool
    kind = "tool_finished"

    def as_dict(self):
        return {
            "id": self.id,
            "name": self.name,
            "summary": self.summary,
            "is_error": self.is_error,
        }


@dataclass
class TurnDone:
    message: Message
    kind = "done"

    def as_dict(self):
        return message_dict(self.message)


@dataclass
class TurnError:
    message: Message
    error: str
    kind = "error"

    def as_dict(self):
        return {**message_dict(self.message), "error": self.error}


TurnEvent = TurnStarted | Notice | TextDelta | ToolStarted | ToolFinished | TurnDone | TurnError


def message_dict(message: Message) -> dict:
    return {
        "id": message.pk,
        "role": message.role,
        "content": message.content,
        "tool_calls": message.tool_calls,
        "usage": message.usage,
        "model": message.model,
        "status": message.status,
        "error": message.error,
        "created_at": message.created_at.isoformat() if message.created_at else None,
    }


# --- prompt ------------------------------------------------------------------------------


def build_system_prompt(custom_instructions: str, system_blocks: list[str]) -> str:
    parts = [BASE_SYSTEM_PROMPT]
    if custom_instructions.strip():
        # The user's own words, yet no block of the prompt can be closed or forged from them.
        instructions = without_tags(custom_instructions.strip())
        parts.append("The user's custom instructions:\n" + instructions)
    parts.extend(block for block in system_blocks if block and block.strip())
    return "\n\n".join(parts)


async def _custom_instructions(user) -> str:
    prefs = await UserPreferences.objects.filter(user=user).afirst()
    return prefs.custom_instructions if prefs else ""


async def _conversation_settings(conversation) -> ConversationSettings | None:
    return await ConversationSettings.objects.filter(conversation=conversation).afirst()


# --- tools -------------------------------------------------------------------------------


async def _run_tool(prepared: extensions.PreparedTurn, name: str, tool_input: dict):
    """(content, is_error, summary) for one call: never raises, never waits past the
    offering extension's deadline."""
    route = prepared.routes.get(name)
    if route is None:
        return f"Unknown tool: {name}", True, _("%(tool)s: not available") % {"tool": name}
    try:
        async with asyncio.timeout(route.timeout):
            outcome = await route.execute(name, tool_input)
    except TimeoutError:
        return (
            f"Tool {name} timed out after {route.timeout:g} s.",
            True,
            _("%(tool)s: timed out after %(seconds)s s")
            % {"tool": name, "seconds": f"{route.timeout:g}"},
        )
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        logger.exception("tool %s failed", name)
        return f"Tool {name} failed: {exc}", True, _("%(tool)s: failed") % {"tool": name}
    content = outcome.content if isinstance(outcome.content, str) else json.dumps(outcome.content)
    return content, bool(outcome.is_error), outcome.summary or name


# --- errors ------------------------------------------------------------------------------


def describe_error(exc: BaseException) -> str:
    """What the user reads in the error box."""
    import anthropic  # here: manage.py commands load this module and would pay ~2 s for it

    if isinstance(exc, anthropic.AuthenticationError):
        return _("The Anthropic API rejected the API key (401). Check ANTHROPIC_API_KEY.")
    if isinstance(exc, anthropic.RateLimitError):
        return _("The Anthropic API is rate limiting requests (429). Try again in a moment.")
    if isinstance(exc, anthropic.APIStatusError):
        detail = ""
        if isinstance(exc.body, dict):
            detail = (exc.body.get("error") or {}).get("message", "")
        return _("The Anthropic API returned an error (%(status)s): %(detail)s") % {
            "status": exc.status_code,
            "detail": detail or exc.message,
        }
    if isinstance(exc, anthropic.APITimeoutError):
        return _("The Anthropic API did not answer in time.")
    if isinstance(exc, anthropic.APIConnectionError):
        return _("Could not reach the Anthropic API.")
    if isinstance(exc, anthropic.APIError):
        return _("The Anthropic API failed: %(error)s") % {"error": exc}
    return _("Something went wrong while writing the answer.")


# --- the turn ----------------------------------------------------------------------------


async def run_turn(
    *, conversation: Conversation, user_message: Message, model: str | None = None
) -> AsyncIterator[TurnEvent]:
    user = await _conversation_user(conversation)
    # The model saved now: the header's selector may have changed it since `conversation`
    # was read (a page's socket holds it for its whole life).
    saved = await Conversation.objects.filter(pk=conversation.pk).values_list("model").afirst()
    conversation.model = saved[0] if saved else conversation.model
    model = model or conversation.model or llm.default_model()
    message = await Message.objects.acreate(
        conversation=conversation,
        role=Message.Role.ASSISTANT,
        status=Message.Status.STREAMING,
        model=llm.OFFLINE_LABEL if llm.is_offline() else model,
        # Its row says who writes it (chat/streaming.py), for every process to see.
        **streaming.owner_fields(),
    )
    events = _run(conversation, user_message, message, user, model)
    async with streaming.writing(message):
        try:
            async for event in events:
                yield event
        finally:
            # Closed early (a client went away): let _run save the partial answer now.
            await events.aclose()


async def _run(conversation, user_message, message, user, model):
    yield TurnStarted(message)

    text_parts: list[str] = []
    tool_calls: list[dict] = []
    usage = {"input_tokens": 0, "output_tokens": 0}

    async def save(status, error=""):
        message.content = "".join(text_parts)
        message.tool_calls = tool_calls
        message.usage = usage
        message.status = status
        message.error = error
        await message.asave(update_fields=["content", "tool_calls", "usage", "status", "error"])
        await Conversation.objects.filter(pk=conversation.pk).aupdate(updated_at=timezone.now())
        # Robust: a listener's bug must not lose the answer or the stop.
        sent = await turn_finished.asend_robust(
            sender=Message, conversation=conversation, message=message
        )
        log_failed_listeners("turn_finished", sent)

    try:
        prepared = await extensions.prepare_turn(
            user=user, conversation=conversation, user_message=user_message
        )
        conv_settings = await _conversation_settings(conversation)
        for notice in prepared.notices:
            yield Notice(notice)
        custom_instructions = await _custom_instructions(user)
        system = build_system_prompt(custom_instructions, prepared.system_blocks)
        # One budget for the whole request: what the extensions bring is counted first.
        fixed = history.estimate_tokens(system + json.dumps(prepared.tools))
        past = await history.aassemble(
            conversation_id=conversation.pk,
            before_id=message.pk,
            budget=max(0, settings.CHAT_CONTEXT_BUDGET - fixed),
        )
        if past.summary_block:
            system = build_system_prompt(
                custom_instructions, [*prepared.system_blocks, past.summary_block]
            )
        api_messages = past.messages
        max_tokens = (conv_settings and conv_settings.max_tokens) or settings.ANTHROPIC_MAX_TOKENS
        temperature = conv_settings.temperature if conv_settings else None

        tool_rounds = 0
        refused = False
        while True:
            result = None
            first_piece = True
            async for item in llm.stream_round(
                model=model,
                system=system,
                messages=api_messages,
                max_tokens=max_tokens,
                tools=prepared.tools or None,
                tool_choice={"type": "none"} if refused else None,
                temperature=temperature,
            ):
                if isinstance(item, str):
                    if first_piece and text_parts and not text_parts[-1].endswith("\n"):
                        # A new round after tools: start a new paragraph.
                        text_parts.append("\n\n")
                        yield TextDelta("\n\n")
                    first_piece = False
                    text_parts.append(item)
                    yield TextDelta(item)
                else:
                    result = item
            usage["input_tokens"] += result.usage.get("input_tokens", 0)
            usage["output_tokens"] += result.usage.get("output_tokens", 0)
            if result.stop_reason != "tool_use" or not result.tool_uses or refused:
                break

            api_messages.append({"role": "assistant", "content": result.content})
            refused = tool_rounds >= MAX_TOOL_ROUNDS
            results = []
            for call in result.tool_uses:
                yield ToolStarted(call["id"], call["name"], call["input"])
                if refused:
                    content, is_error, summary = TOOL_LIMIT_TEXT, True, _("Refused: tool limit")
                else:
                    content, is_error, summary = await _run_tool(
                        prepared, call["name"], call["input"]
                    )
                tool_calls.append(
                    {
                        "id": call["id"],
                        "name": call["name"],
                        "input": call["input"],
                        "result": content[:STORED_RESULT_LIMIT],
                        "is_error": is_error,
                        "summary": summary,
                    }
                )
                results.append(
                    {
                        "type": "tool_result",
                        "tool_use_id": call["id"],
                        "content": content,
                        "is_error": is_error,
                    }
                )
                yield ToolFinished(call["id"], call["name"], summary, is_error)
            api_messages.append({"role": "user", "content": results})
            if not refused:
                tool_rounds += 1
    except (asyncio.CancelledError, GeneratorExit):
        # Stopped by the user or a closed connection: keep what was written so far.
        await save(Message.Status.STOPPED)
        raise
    except Exception as exc:
        import anthropic

        if not isinstance(exc, anthropic.APIError):
            logger.exception("turn failed in conversation %s", conversation.pk)
        error = describe_error(exc)
        await save(Message.Status.ERROR, error)
        yield TurnError(message, error)
        return
    await save(Message.Status.COMPLETE)
    yield TurnDone(message)


async def _conversation_user(conversation):
    if "user" in conversation._state.fields_cache:
        return conversation.user
    return await get_user_model().objects.aget(pk=conversation.user_id)
