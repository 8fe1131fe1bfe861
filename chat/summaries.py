"""Long conversations, shorter: a summary per exchange, and summaries of summaries.

* Level 1 sums up one exchange: the user's message(s) and the answer. An exchange is ready
  once its answer is complete, or once the user has written again (a stopped answer).
* Level n+1 folds the level-n summaries that no higher summary covers yet, once they stand
  for more than CHAT_SUMMARY_FOLD_CHARS (5,000) characters: of conversation text for
  level 1 (the text no summary covers yet), of summary text above it. So what a request
  needs to cover a conversation's past grows with the log of its length.

`session_summary` is the conversation so far in four parts (what was asked, what was
learnt about the user, what was done, what comes next), which Claude reads through its
`conversation_summary` tool (chat/session.py).

`update_summaries` makes whatever is missing, with a small model through the Messages API
when ANTHROPIC_API_KEY is set (`LLMSummarizer`, run in the background after each reply:
chat/tasks.py) or extractively (`ExtractiveSummarizer`, chat/extractive.py: no LLM, used
offline and by a turn that finds summaries missing). It is safe to run twice at once: a
summary is unique per (conversation, level, last message), a fold is written only if none
of its parts was folded meanwhile, and no model is called inside a transaction.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import Protocol

from django.conf import settings
from django.db import IntegrityError, transaction

from chat import extractive, llm
from chat.models import ConversationSummary, Message
from chat.private import strip_private
from chat.tool_lines import tool_line

logger = logging.getLogger(__name__)

EXCHANGE_SUMMARY_CHARS = 400  # an extractive level-1 summary; a model is asked for ~60 words
FOLD_SUMMARY_CHARS = 800


@dataclass
class Exchange:
    """The user's message(s) and the answer to them."""

    first_id: int
    last_id: int
    user_text: str
    answer_text: str

    @property
    def chars(self) -> int:
        return len(self.user_text) + len(self.answer_text)


class Summarizer(Protocol):
    method: str

    def exchange(self, exchange: Exchange) -> str: ...

    def fold(self, texts: list[str]) -> str: ...


class ExtractiveSummarizer:
    method = ConversationSummary.Method.EXTRACTIVE

    def exchange(self, exchange: Exchange) -> str:
        return extractive.summarize_exchange(
            exchange.user_text, exchange.answer_text, limit=EXCHANGE_SUMMARY_CHARS
        )

    def fold(self, texts: list[str]) -> str:
        return extractive.fold(texts, limit=FOLD_SUMMARY_CHARS)


EXCHANGE_PROMPT = (
    "You summarise one exchange of a conversation between a user and an AI assistant, for "
    "the assistant to remember it later. In at most 60 words, third person, say what the "
    "user asked or said and what the assistant answered or decided. Keep every name, "
    "number, date and decision. Write only the summary."
)
FOLD_PROMPT = (
    "You merge consecutive summaries of one conversation between a user and an AI "
    "assistant into one summary, oldest first, in at most 150 words. Keep names, numbers, "
    "dates, decisions and open questions; drop small talk. Write only the summary."
)


class LLMSummarizer:
    """A small model through the real SDK; any failure falls back to the extractive one."""

    method = ConversationSummary.Method.LLM

    def __init__(self):
        import anthropic  # here: ~2 s of imports every process start would pay (manage.py)

        self.fallback = ExtractiveSummarizer()
        self.client = anthropic.Anthropic(
            api_key=settings.ANTHROPIC_API_KEY,
            base_url=settings.ANTHROPIC_BASE_URL or None,
            max_retries=settings.ANTHROPIC_MAX_RETRIES,
            timeout=settings.CHAT_SUMMARY_TIMEOUT,
        )

    def _ask(self, system: str, text: str, max_tokens: int) -> str:
        reply = self.client.messages.create(
            model=settings.CHAT_SUMMARY_MODEL,
            max_tokens=max_tokens,
            system=system,
            messages=[{"role": "user", "content": text}],
        )
        return "".join(b.text for b in reply.content if b.type == "text").strip()

    def exchange(self, exchange: Exchange) -> str:
        text = f"User:\n{exchange.user_text}\n\nAssistant:\n{exchange.answer_text}"
        return self._ask(EXCHANGE_PROMPT, text, 200)

    def fold(self, texts: list[str]) -> str:
        return self._ask(FOLD_PROMPT, "\n\n".join(f"- {t}" for t in texts), 400)


def default_summarizer() -> Summarizer:
    if llm.is_offline() or not settings.CHAT_SUMMARY_LLM:
        return ExtractiveSummarizer()
    return LLMSummarizer()


# --- exchanges ---------------------------------------------------------------------------


def conversation_rows(conversation_id: int, *, before_id: int | None = None) -> list[dict]:
    """The messages a request or a summary may use, oldest first (no errors, no blanks)."""
    rows = Message.objects.filter(conversation_id=conversation_id)
    if before_id is not None:
        rows = rows.filter(pk__lt=before_id)
    return list(
        rows.exclude(status=Message.Status.ERROR)
        .exclude(content="")
        .order_by("id")
        .values("id", "role", "content", "status", "created_at", "tool_calls")
    )


def exchanges(rows: list[dict], *, later_message: bool = False) -> list[Exchange]:
    """Ready exchanges in `rows` (oldest first). `later_message`: something follows the
    last row, so its exchange is over whatever its status."""
    found: list[Exchange] = []
    user_parts: list[str] = []
    answer_parts: list[str] = []
    first_id = last_id = None
    last_status = None

    def close():
        if user_parts and answer_parts:
            found.append(
                Exchange(first_id, last_id, "\n\n".join(user_parts), "\n\n".join(answer_parts))
            )

    for row in rows:
        content = strip_private(row["content"])  # what is private is never summarised
        if row["role"] == Message.Role.USER:
            if answer_parts:
                close()
                user_parts, answer_parts = [], []
            if not user_parts:
                first_id = row["id"]
            user_parts.append(content)
        elif user_parts:  # an answer (one before any question is left out)
            answer_parts.append(content)
            last_id, last_status = row["id"], row["status"]
    if answer_parts and (later_message or last_status == Message.Status.COMPLETE):
        close()
    return found


# --- making them -------------------------------------------------------------------------


def update_summaries(
    *, conversation_id: int, summarizer: Summarizer | None = None, upto_id: int | None = None
) -> int:
    """Make the missing level-1 summaries (exchanges up to message `upto_id`, all ready
    ones when None), then the folds they call for. Returns how many summaries it stored."""
    summarizer = summarizer or default_summarizer()
    rows = conversation_rows(conversation_id, before_id=upto_id + 1 if upto_id else None)
    later = (
        upto_id is not None
        and Message.objects.filter(conversation_id=conversation_id, pk__gt=upto_id).exists()
    )
    done = set(
        ConversationSummary.objects.filter(conversation_id=conversation_id, level=1).values_list(
            "last_message_id", flat=True
        )
    )
    made = []
    for exchange in exchanges(rows, later_message=later):
        if exchange.last_id in done:
            continue
        text, method = _summarize(summarizer, "exchange", exchange)
        made.append(
            ConversationSummary(
                conversation_id=conversation_id,
                level=1,
                first_message_id=exchange.first_id,
                last_message_id=exchange.last_id,
                source_chars=exchange.chars,
                exchanges=1,
                text=text,
                method=method,
            )
        )
    # One write for all (a turn may make a hundred at once); one made meanwhile by another
    # job or turn is kept, and this one dropped.
    before = ConversationSummary.objects.filter(conversation_id=conversation_id).count()
    ConversationSummary.objects.bulk_create(made, ignore_conflicts=True)
    stored = ConversationSummary.objects.filter(conversation_id=conversation_id).count() - before
    return stored + _fold_all(conversation_id, summarizer)


def _summarize(summarizer: Summarizer, kind: str, item) -> tuple[str, str]:
    import anthropic  # not at module level: see LLMSummarizer

    try:
        text = getattr(summarizer, kind)(item)
        if text:
            return text, summarizer.method
    except anthropic.APIError as exc:
        logger.warning("summary by the model failed (%s); made extractively", exc)
    fallback = ExtractiveSummarizer()
    return getattr(fallback, kind)(item), fallback.method


def fold_measure(summary: ConversationSummary) -> int:
    """What a level's unfolded summaries are measured by before they are folded."""
    return summary.source_chars if summary.level == 1 else len(summary.text)


def _fold_all(conversation_id: int, summarizer: Summarizer) -> int:
    stored = 0
    level = 1
    while True:
        unfolded = list(
            ConversationSummary.objects.filter(
                conversation_id=conversation_id, level=level, parent=None
            ).order_by("first_message_id")
        )
        if not unfolded:
            return stored
        group: list[ConversationSummary] = []
        total = 0
        for summary in unfolded:
            group.append(summary)
            total += fold_measure(summary)
            if total > settings.CHAT_SUMMARY_FOLD_CHARS and len(group) > 1:
                stored += _fold(conversation_id, level, group, summarizer)
                group, total = [], 0
        level += 1


def _fold(conversation_id, level, group, summarizer) -> int:
    text, method = _summarize(summarizer, "fold", [s.text for s in group])
    parent = ConversationSummary(
        conversation_id=conversation_id,
        level=level + 1,
        first_message_id=group[0].first_message_id,
        last_message_id=group[-1].last_message_id,
        source_chars=sum(s.source_chars for s in group),
        exchanges=sum(s.exchanges for s in group),
        text=text,
        method=method,
    )
    ids = [s.pk for s in group]
    try:
        with transaction.atomic():
            # Written only if no part was folded meanwhile (the model ran outside this).
            unfolded = ConversationSummary.objects.select_for_update().filter(
                pk__in=ids, parent=None
            )
            if len(unfolded.values_list("pk", flat=True)) != len(ids):
                return 0
            parent.save()
            ConversationSummary.objects.filter(pk__in=ids).update(parent=parent)
    except IntegrityError:
        return 0
    return 1


def tops(conversation_id: int) -> list[ConversationSummary]:
    """The summaries no higher one covers, oldest first: together they cover what is
    summarised of the conversation, each part once."""
    return list(
        ConversationSummary.objects.filter(conversation_id=conversation_id, parent=None).order_by(
            "first_message_id"
        )
    )


# --- the conversation's own summary: asked, learnt, done, next ------------------------------

SESSION_ITEMS = 8  # at most, in each part: the latest
SESSION_ITEM_CHARS = 200
SESSION_STORY_CHARS = 1500
SESSION_NEXT_FROM = 3  # what comes next is read in the last exchanges only
# A sentence where the user says something of themselves (EN/FR): what was learnt.
_OF_THEMSELVES = re.compile(
    r"(?:^|\W)(?:i|i'm|i've|i'd|my|me|we|our|je|j['’]|mon|ma|mes|moi|nous|notre|nos)(?:\W|$)",
    re.IGNORECASE,
)
# A sentence about what is to come (EN/FR): next steps.
_TO_COME = re.compile(
    r"\b(?:next|tomorrow|later|will|going\s+to|plan(?:s|ning)?|to\s*do|remind|"
    r"ensuite|demain|plus\s+tard|prochaine?s?|je\s+vais|on\s+va|il\s+faudra|à\s+faire|"
    r"rappelle)\b",
    re.IGNORECASE,
)


def session_summary(conversation_id: int, *, before_id: int | None = None) -> dict:
    """The conversation before message `before_id` in four parts: what the
    user asked (a line per exchange), what was learnt (what the user said of themselves),
    what was done (a line per tool call), what comes next (plans and next steps of the last
    exchanges), and `summary`, the story so far from its summaries (`tops`). Rule-based and
    read from what is stored, so a turn never waits for a model; what is private never shows."""
    rows = conversation_rows(conversation_id, before_id=before_id)
    found = exchanges(rows, later_message=True)
    asked, learnt, to_come = [], [], []
    for n, exchange in enumerate(found):
        said = extractive.sentences(exchange.user_text)
        questions = [s for s in said if s.rstrip().endswith("?")]
        if said:
            asked.append((questions or said)[0])
        learnt += [s for s in said if s not in questions and _OF_THEMSELVES.search(s)]
        if n >= len(found) - SESSION_NEXT_FROM:
            answer = extractive.sentences(exchange.answer_text)
            to_come += [s for s in said + answer if _TO_COME.search(s) and s not in questions]
    done = [
        tool_line(call)
        for row in rows
        if row["role"] == Message.Role.ASSISTANT
        for call in row.get("tool_calls") or []
        if isinstance(call, dict)
    ]
    story = " ".join(
        s.text for s in tops(conversation_id) if s.last_message_id < (before_id or 2**62)
    )
    return {
        "exchanges": len(found),
        "asked": _latest(asked),
        "learnt": _latest(list(dict.fromkeys(learnt))),
        "done": _latest(done),
        "next": _latest(list(dict.fromkeys(to_come))),
        "summary": _cut(" ".join(story.split()), SESSION_STORY_CHARS),
    }


def _latest(items: list[str]) -> list[str]:
    return [_cut(" ".join(i.split()), SESSION_ITEM_CHARS) for i in items[-SESSION_ITEMS:]]


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
