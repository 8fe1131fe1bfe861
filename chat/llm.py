"""Talking to Claude: the real `anthropic` SDK client, and the offline responder used without a key.

Both expose the same shape to the turn (chat/turn.py): `stream_round(...)` is an async
generator that yields text pieces (str) as they arrive and finally one `RoundResult` with
the assistant content blocks, the stop reason and the token usage.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from django.conf import settings

from chat import offline

if TYPE_CHECKING:
    import anthropic

# The models offered by the header's selector; ANTHROPIC_MODEL is always among them.
KNOWN_MODELS = [
    "claude-sonnet-5-5",
    "claude-opus-5-5",
    "claude-haiku-5-5",
]

OFFLINE_LABEL = offline.LABEL


def available_models() -> list[str]:
    models = list(KNOWN_MODELS)
    if settings.ANTHROPIC_MODEL not in models:
        models.insert(0, settings.ANTHROPIC_MODEL)
    return models


def default_model() -> str:
    return settings.ANTHROPIC_MODEL


def is_offline() -> bool:
    """No API key: answers come from the labelled offline responder."""
    return not settings.ANTHROPIC_API_KEY


@dataclass
class RoundResult:
    content: list[dict] = field(default_factory=list)  # API content blocks, as dicts
    stop_reason: str = "end_turn"
    usage: dict = field(default_factory=dict)

    @property
    def tool_uses(self) -> list[dict]:
        return [block for block in self.content if block.get("type") == "tool_use"]


# One SDK client per event loop and configuration: the httpx pool inside is bound to a
# loop, and reusing it saves a connection set-up on every turn.
_clients: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def get_client() -> anthropic.AsyncAnthropic:
    loop = asyncio.get_running_loop()
    key = (settings.ANTHROPIC_API_KEY, settings.ANTHROPIC_BASE_URL or None)
    per_loop = _clients.setdefault(loop, {})
    client = per_loop.get(key)
    if client is None:
        # Imported on first use: this module is loaded at every start (chat.apps), and the
        # SDK costs ~2 s of CPU that `manage.py memory_stats` would pay for nothing.
        import anthropic

        client = anthropic.AsyncAnthropic(
            api_key=key[0],
            base_url=key[1],
            max_retries=settings.ANTHROPIC_MAX_RETRIES,
            timeout=settings.ANTHROPIC_TIMEOUT,
        )
        per_loop[key] = client
    return client


async def stream_round(
    *,
    model: str,
    system: str,
    messages: list[dict],
    max_tokens: int,
    tools: list[dict] | None = None,
    tool_choice: dict | None = None,
    temperature: float | None = None,
) -> AsyncIterator[str | RoundResult]:
    """One Messages API call, streamed: yields text pieces, then the RoundResult."""
    if is_offline():
        rounds = offline.offline_round(
            system=system, messages=messages, tools=tools, result_type=RoundResult
        )
        async for item in rounds:
            yield item
        return
    kwargs = {"model": model, "max_tokens": max_tokens, "messages": messages}
    if system:
        kwargs["system"] = system
    if tools:
        kwargs["tools"] = tools
        if tool_choice:
            kwargs["tool_choice"] = tool_choice
    if temperature is not None:
        kwargs["temperature"] = temperature
    async with get_client().messages.stream(**kwargs) as stream:
        async for event in stream:
            if event.type == "text":
                yield event.text
        final = await stream.get_final_message()
    usage = {
        "input_tokens": final.usage.input_tokens or 0,
        "output_tokens": final.usage.output_tokens or 0,
    }
    content = [block.model_dump(mode="json", exclude_none=True) for block in final.content]
    # The API refuses unknown keys on input blocks: keep only what a request may carry.
    content = [_request_block(block) for block in content]
    yield RoundResult(content=content, stop_reason=final.stop_reason or "end_turn", usage=usage)


def _request_block(block: dict) -> dict:
    if block.get("type") == "text":
        return {"type": "text", "text": block.get("text", "")}
    if block.get("type") == "tool_use":
        return {
            "type": "tool_use",
            "id": block["id"],
            "name": block["name"],
            "input": block.get("input") or {},
        }
    return block
