"""What a turn sends of its conversation: the last turns in full, the earlier ones as summaries.

Everything a request carries is counted in estimated tokens against one budget
(CHAT_CONTEXT_BUDGET): the system prompt with the extensions' blocks (retrieved memories
among them) and the tool definitions first (the turn passes what is left), then the
conversation. A conversation that fits is sent whole. Otherwise the newest messages are
sent whole within RECENT_SHARE of what is left, starting at a user message, and the rest
of the room goes to the summaries of everything before them (chat/summaries.py), the
newest first. A `<conversation_summary>` block says how many exchanges it sums up, how many
messages follow in full, and how many exchanges were left out if even the summaries did
not fit. Under each summary, a line per tool call of the exchanges it covers (the tool,
what it was asked, what it found: the tools used and their key findings), so that what
Claude looked up or saved earlier is not lost with the transcript. The user's latest
message is always sent whole, however long.

Summaries the background job has not made yet are made here, extractively (no LLM; a few
milliseconds for a 300-message conversation); if that fails the turn uses what exists.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from asgiref.sync import sync_to_async
from django.utils import formats

from chat import summaries
from chat.models import ConversationSummary, Message
from chat.prompt_text import without_tags
from chat.tool_lines import tool_line

logger = logging.getLogger(__name__)

RECENT_SHARE = 0.75
MESSAGE_OVERHEAD = 10  # tokens for one message's framing ({"role": ..., "content": ...}), about
# Under one summary: its exchanges' tool calls, at most this many lines (the latest kept).
TOOL_LINES_PER_SUMMARY = 8


def estimate_tokens(text: str) -> int:
    """About 4 bytes of UTF-8 per token: right for English prose, generous for accents."""
    return (len(text.encode("utf-8", "replace")) + 3) // 4


@dataclass
class History:
    messages: list[dict]
    summary_block: str = ""
    in_full: int = 0  # messages sent whole
    summarised: int = 0  # exchanges the summaries sent stand for
    left_out: int = 0  # earlier exchanges with no room even as summaries
    summaries: list[ConversationSummary] = field(default_factory=list)


def api_messages(rows: list[dict]) -> list[dict]:
    """Alternating roles, starting with the user: consecutive same-role messages joined."""
    messages: list[dict] = []
    for row in rows:
        if messages and messages[-1]["role"] == row["role"]:
            messages[-1]["content"] += "\n\n" + row["content"]
        else:
            messages.append({"role": row["role"], "content": row["content"]})
    while messages and messages[0]["role"] != Message.Role.USER:
        messages.pop(0)
    return messages


def assemble(*, conversation_id: int, before_id: int, budget: int) -> History:
    """The conversation before message `before_id`, within `budget` estimated tokens."""
    rows = summaries.conversation_rows(conversation_id, before_id=before_id)
    costs = [estimate_tokens(row["content"]) + MESSAGE_OVERHEAD for row in rows]
    if sum(costs) <= budget:
        return History(messages=api_messages(rows), in_full=len(rows))

    start, used = _recent_start(rows, costs, budget * RECENT_SHARE)
    if start == 0:  # only the user's latest message(s), too long for the budget: no past
        return History(messages=api_messages(rows), in_full=len(rows))
    reserve = estimate_tokens(_header(*[10**6] * 4) + "\n</conversation_summary>")
    tops = _summaries_for(conversation_id, rows[:start])
    tools = ToolLines(rows)
    while True:
        needed = [t for t in tops if t.first_message_id < rows[start]["id"]]
        if used + reserve + sum(tools.cost(t) for t in needed) <= budget:
            break
        # Summaries first: one exchange sent whole costs several of its summary.
        later = _next_exchange(rows, start)
        if later is None:
            break
        used -= sum(costs[start:later])
        start = later
        if _uncovered(rows[:start], tops):
            tops = _summaries_for(conversation_id, rows[:start])

    room = budget - used - reserve
    chosen: list[ConversationSummary] = []
    for summary in reversed(needed):
        room -= tools.cost(summary)
        if room < 0:
            break
        chosen.insert(0, summary)
    return _with_summaries(rows, start, chosen, tools)


class ToolLines:
    """The tool calls of a conversation's answers, a line each, by the summary covering them.
    Each call is read once, each summary's lines and cost worked out once: `assemble` asks
    again as it moves its window."""

    def __init__(self, rows: list[dict]):
        self.lines = [
            (row["id"], tool_line(call))
            for row in rows
            if row["role"] == Message.Role.ASSISTANT
            for call in row.get("tool_calls") or []
            if isinstance(call, dict)
        ]
        self._of: dict[int, list[str]] = {}
        self._cost: dict[int, int] = {}

    def of(self, summary: ConversationSummary) -> list[str]:
        if summary.pk not in self._of:
            lines = [
                line
                for message_id, line in self.lines
                if summary.first_message_id <= message_id <= summary.last_message_id
            ]
            if len(lines) > TOOL_LINES_PER_SUMMARY:
                dropped = len(lines) - TOOL_LINES_PER_SUMMARY
                lines = [f"- ({dropped} earlier tool calls)", *lines[-TOOL_LINES_PER_SUMMARY:]]
            self._of[summary.pk] = lines
        return self._of[summary.pk]

    def cost(self, summary: ConversationSummary) -> int:
        """A summary's estimated tokens with its label line and its tool lines."""
        if summary.pk not in self._cost:
            text = "\n".join([summary.text, *self.of(summary)])
            self._cost[summary.pk] = estimate_tokens(text) + 2 * MESSAGE_OVERHEAD
        return self._cost[summary.pk]


def _with_summaries(rows, start, chosen, tools: ToolLines) -> History:
    numbered = summaries.exchanges(rows, later_message=True)
    number_of = {e.first_id: n for n, e in enumerate(numbered, 1)}
    number_of.update({e.last_id: n for n, e in enumerate(numbered, 1)})
    before_window = [e for e in numbered if e.last_id < rows[start]["id"]]
    first_kept = chosen[0].first_message_id if chosen else rows[start]["id"]
    left_out = sum(1 for e in before_window if e.last_id < first_kept)
    recent = rows[start:]
    dates = {row["id"]: row["created_at"] for row in rows}
    header = _header(len(before_window) - left_out, len(recent), left_out, len(before_window))
    # A summary may quote what was said: it must not close the block or open another.
    lines = [
        without_tags("\n".join([_label(s, number_of, dates), s.text, *tools.of(s)])) for s in chosen
    ]
    return History(
        messages=api_messages(recent),
        summary_block="\n\n".join([header, *lines]) + "\n</conversation_summary>",
        in_full=len(recent),
        summarised=len(before_window) - left_out,
        left_out=left_out,
        summaries=chosen,
    )


async def aassemble(*, conversation_id: int, before_id: int, budget: int) -> History:
    return await sync_to_async(assemble)(
        conversation_id=conversation_id, before_id=before_id, budget=budget
    )


def _recent_start(rows, costs, room) -> tuple[int, int]:
    """Where the messages sent whole begin, and what they cost: whole exchanges, newest
    first, within `room`, and always the user's latest message(s)."""
    last_run = len(rows) - 1
    while last_run > 0 and rows[last_run - 1]["role"] == Message.Role.USER:
        last_run -= 1
    start, used = last_run, sum(costs[last_run:])
    while start > 0 and used + costs[start - 1] <= room:
        start -= 1
        used += costs[start]
    # Begin at a user message: the API wants one first, and an exchange stays whole.
    while start < last_run and not _begins_exchange(rows, start):
        start += 1
    return start, sum(costs[start:])


def _begins_exchange(rows, n) -> bool:
    return rows[n]["role"] == Message.Role.USER and (
        n == 0 or rows[n - 1]["role"] != Message.Role.USER
    )


def _next_exchange(rows, start) -> int | None:
    """Where the exchange after the one at `start` begins, unless that is the user's
    latest message (always sent whole)."""
    n = start + 1
    while n < len(rows) and not _begins_exchange(rows, n):
        n += 1
    answered = any(row["role"] != Message.Role.USER for row in rows[n:])
    return n if answered else None


def _uncovered(older, tops) -> bool:
    covered = max((s.last_message_id for s in tops), default=0)
    ready = summaries.exchanges(older, later_message=True)
    return bool(ready) and ready[-1].last_id > covered


def _summaries_for(conversation_id, older) -> list[ConversationSummary]:
    """The top summaries, made on the spot (extractively) where `older` lacks some."""
    tops = summaries.tops(conversation_id)
    if older and _uncovered(older, tops):
        try:
            summaries.update_summaries(
                conversation_id=conversation_id,
                summarizer=summaries.ExtractiveSummarizer(),
                upto_id=older[-1]["id"],
            )
            tops = summaries.tops(conversation_id)
        except Exception:
            logger.exception("summaries of conversation %s: going on without", conversation_id)
    return tops


def _header(summarised, in_full, left_out, older) -> str:
    text = (
        "<conversation_summary>\nThis conversation is longer than what is sent here. "
        f"Its first {older} exchanges are summarised below, oldest first, and the last "
        f"{in_full} messages follow in full."
    )
    if left_out:
        text += (
            f" The earliest {left_out} of those exchanges did not fit even as summaries "
            f"and are left out; {summarised} are summarised."
        )
    return text


def _label(summary: ConversationSummary, number_of: dict, dates: dict) -> str:
    first = number_of.get(summary.first_message_id)
    last = number_of.get(summary.last_message_id)
    span = f"Exchange {first}" if first == last else f"Exchanges {first}–{last}"
    if first is None or last is None:
        span = f"{summary.exchanges} exchange" + ("s" if summary.exchanges != 1 else "")
    days = [dates.get(summary.first_message_id), dates.get(summary.last_message_id)]
    shown = [formats.date_format(d, "j M Y") for d in days if d is not None]
    when = " – ".join(dict.fromkeys(shown))
    return f"[{span}{' · ' + when if when else ''}]"
