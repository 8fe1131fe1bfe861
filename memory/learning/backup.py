"""A conversation in memory, one exchange at a time: the save button, the admin action,
`manage.py memory_backfill` and auto-save (memory/learning/conversations.py) all save through here.

An exchange is the user's message(s) and the answer that follows (complete or stopped;
answers that failed, or are still streaming, are not saved). Saving stores only the
exchanges not saved yet, each as one memory (several for an exchange longer than one
memory's limit, contract.MAX_CONTENT, each part searchable), kind `conversation`, dated
with the exchange, tagged by auto-save's rules (memory/learning/tags.py), source
`conversation:<id>:<answer id>`, and records it (SavedExchange). So a continued
conversation's new messages are saved next time, and saving again stores nothing twice:
the record is keyed by the answer, and a memory written before a crash could record it is
found again by ikario_rag's exact-text dedup (same content, same id, status duplicate).
<private> spans are removed before anything (text, tags) is computed.

An exchange the memory refuses (a MemoryInputError: its content can never be stored, so
trying again would fail the same way) is recorded once as a FailedExchange with the reason
and left out; the others are saved. Auto-save skips it from then on, so a conversation's
later exchanges still save; the save button, the admin action and the backfill (explicit
acts) try it again.
An exchange said while memory was paused or off (memory/learning/kept_out.py) is never saved.
What Ikario echoed is not saved either (memory/learning/echo.py): an answer of the offline
responder, a line of an answer restating a memory recalled in the conversation.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace

from django.db import IntegrityError, transaction
from django.db.models import Count, Exists, OuterRef

from chat.models import Conversation, Message
from ikario_rag import contract
from ikario_rag.private import strip as strip_private
from memory.client import controls, services
from memory.client import validation as check
from memory.client.errors import MemoryDisabled, MemoryInputError, MemoryOff, MemoryPaused
from memory.learning import echo
from memory.learning.tags import extract_tags
from memory.models import FailedExchange, KeptFromMemory, SavedExchange

logger = logging.getLogger("memory.learning.backup")

ROLE_LABELS = {Message.Role.USER: "User", Message.Role.ASSISTANT: "Assistant"}
SAVED_STATUSES = (Message.Status.COMPLETE, Message.Status.STOPPED)
# One add_thoughts call: at most this many memories and characters (the server writes
# their vectors behind the add, so a call is quick whatever it carries).
BATCH_ITEMS = 16
BATCH_CHARS = 100_000
PART_LABEL = "[part {n}/{total}] "
# Room left in each part for its label.
PART_CHARS = contract.MAX_CONTENT - 40


@dataclass
class Exchange:
    """The user's message(s) and the answer(s) after them, <private> spans removed."""

    conversation_id: int
    answer_id: int
    said: list[tuple[str, str]]  # (role, text): an answer's lines kept, echo.answer_lines
    date: object  # the first message's created_at
    kept_out: bool = False  # a message of it was said while memory was paused or off

    @property
    def source(self) -> str:
        return f"conversation:{self.conversation_id}:{self.answer_id}"

    def text(self) -> str:
        """What the memory holds, white space folded as ikario_rag stores it."""
        lines = [f"{ROLE_LABELS.get(role, role)}: {text}" for role, text in self.said if text]
        return " ".join(" ".join(lines).split())

    def parts(self) -> list[str]:
        """The text in memory-sized parts (one part for all but very long exchanges)."""
        return parts_of(self.text())


def parts_of(text: str) -> list[str]:
    """A text in memory-sized parts, each labelled "[part n/total]" when there are several
    (an exchange, a summary longer than one memory's limit)."""
    if len(text) <= contract.MAX_CONTENT:
        return [text] if text else []
    chunks: list[str] = []
    while text:
        if len(text) <= PART_CHARS:
            chunks.append(text)
            break
        cut = text.rfind(" ", PART_CHARS // 2, PART_CHARS)
        cut = cut if cut > 0 else PART_CHARS
        chunks.append(text[:cut])
        text = text[cut:].lstrip()
    total = len(chunks)
    return [PART_LABEL.format(n=n, total=total) + c for n, c in enumerate(chunks, 1)]


@dataclass
class BackupResult:
    total: int  # exchanges the conversation has
    saved_before: int  # of which already saved
    saved: int = 0  # exchanges saved now
    memories: int = 0  # memories they became (one per part)
    failed: int = 0  # exchanges the memory refused (FailedExchange)
    exchanges: list[SavedExchange] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        """Every exchange of the conversation is in memory."""
        return self.saved_before + self.saved >= self.total


def exchanges_of(conversation: Conversation, *, kept_out: bool = False) -> list[Exchange]:
    """The conversation's answered exchanges memory may keep, oldest first (`kept_out`:
    those said while memory was paused or off instead, which are never saved)."""
    rows = (
        Message.objects.filter(conversation=conversation)
        .exclude(content="")
        .exclude(status__in=[Message.Status.ERROR, Message.Status.STREAMING])
        .annotate(kept_out=Exists(KeptFromMemory.objects.filter(message=OuterRef("pk"))))
        .order_by("created_at", "id")
        .values_list("id", "role", "content", "created_at", "kept_out", "model")
    )
    exchanges: list[Exchange] = []
    current: Exchange | None = None
    for pk, role, content, created_at, said_while_off, model in rows:
        if role == Message.Role.USER and current is not None and current.answer_id:
            current = None  # the previous exchange was answered: this message opens one
        if current is None:
            current = Exchange(conversation.pk, 0, [], created_at)
        text = strip_private(content)
        if role == Message.Role.ASSISTANT:
            text = echo.answer_lines(text, model=model)
        else:
            text = " ".join(text.split())
        current.said.append((role, text))
        current.kept_out = current.kept_out or said_while_off
        if role == Message.Role.ASSISTANT:
            if not current.answer_id:
                exchanges.append(current)
            current.answer_id = pk  # answers in a row close the same exchange
    return [e for e in exchanges if e.kept_out == kept_out]


def backup_state(conversation: Conversation) -> tuple[int, int]:
    """(exchanges saved, exchanges the conversation has that memory may keep)."""
    saved, _failed, total = backup_counts(conversation)
    return saved, total


def backup_counts(conversation: Conversation) -> tuple[int, int, int]:
    """(exchanges saved, exchanges the memory refused, exchanges the conversation has)."""
    answers = [e.answer_id for e in exchanges_of(conversation)]
    counts = Message.objects.filter(pk__in=answers).aggregate(
        saved=Count("saved_exchange"), failed=Count("failed_exchange")
    )
    return counts["saved"], counts["failed"], len(answers)


def failure_of(conversation: Conversation) -> str:
    """Why the memory refused the conversation's latest refused exchange ("" if none)."""
    latest = FailedExchange.objects.filter(conversation=conversation).first()
    return latest.error if latest else ""


class KeptOutOfMemory(MemoryInputError):
    """Everything the conversation has was said while memory was paused or off."""

    def __init__(self):
        super().__init__("conversation", "was said while memory was paused or off")


class ChatMemoryOff(MemoryInputError):
    """The conversation's own memory switch is off: nothing of it is saved."""

    def __init__(self):
        super().__init__("conversation", "has its memory off")


def _items(exchange: Exchange, conversation: Conversation, category: str, tags, recalled):
    said = [(role, echo.without_echoes(role, text, recalled)) for role, text in exchange.said]
    exchange = replace(exchange, said=said)
    texts = [text for _, text in exchange.said]
    context = {
        "category": category,
        "kind": "conversation",
        "tags": list(tags) if tags else extract_tags(*texts),
        "subjects": [" ".join(strip_private(conversation.title).split())[: contract.MAX_LABEL]],
        "date": exchange.date.isoformat(),
        "source": exchange.source,
    }
    context["subjects"] = [s for s in context["subjects"] if s]
    return [{"content": part, "context": context} for part in exchange.parts()]


def backup_conversation(
    conversation: Conversation,
    *,
    category: str = contract.DEFAULT_CATEGORY,
    tags=None,
    timeout=None,
    since=None,
    background: bool = False,
) -> BackupResult:
    """Save the exchanges of `conversation` not saved yet, into its owner's memory
    (with `since`, only the exchanges that began after it: auto-save after a reset).

    Raises MemoryOff when its owner turned memory off, MemoryInputError when the
    conversation has nothing to save, is incognito (ChatMemoryOff: its memory is off) or
    was all said while memory was paused or off (KeptOutOfMemory), MemoryPaused when its
    owner paused memory, and the MemoryServiceError of a failed call (what was saved before it stays
    recorded).
    With `background` (auto-save), exchanges refused for good before are not tried again.
    """
    why_off = controls.memory_off_for(conversation=conversation)
    if why_off == controls.DISABLED:
        raise MemoryDisabled()
    if why_off == controls.INCOGNITO:
        raise MemoryInputError("conversation", "is incognito: nothing of it is saved to memory")
    if why_off == controls.OFF:
        raise MemoryOff()
    if why_off == controls.CHAT_OFF:
        raise ChatMemoryOff()
    if why_off == controls.PAUSED:
        raise MemoryPaused()
    category = check.choice("category", category, contract.CATEGORIES) or contract.DEFAULT_CATEGORY
    tags = check.labels("tags", tags)
    exchanges = exchanges_of(conversation)
    if not exchanges and exchanges_of(conversation, kept_out=True):
        raise KeptOutOfMemory()
    if not exchanges:
        raise MemoryInputError("conversation", "has no messages to save")
    done = set(
        SavedExchange.objects.filter(answer_id__in=[e.answer_id for e in exchanges]).values_list(
            "answer_id", flat=True
        )
    )
    skip = set(done)
    if background:
        # Refused for good already: auto-save does not stall on it again.
        skip.update(
            FailedExchange.objects.filter(conversation=conversation).values_list(
                "answer_id", flat=True
            )
        )
    todo = [e for e in exchanges if e.answer_id not in skip and (since is None or e.date > since)]
    result = BackupResult(total=len(exchanges), saved_before=len(done))
    recalled = echo.recalled_in(conversation) if todo else []
    batch: list[tuple[Exchange, list[dict]]] = []
    size = 0
    for exchange in todo:
        items = _items(exchange, conversation, category, tags, recalled)
        chars = sum(len(i["content"]) for i in items)
        count = sum(len(i) for _, i in batch) + len(items)
        if batch and (count > BATCH_ITEMS or size + chars > BATCH_CHARS):
            _store(conversation, batch, result, timeout)
            batch, size = [], 0
        batch.append((exchange, items))
        size += chars
    if batch:
        _store(conversation, batch, result, timeout)
    if result.saved:
        # update(): a backup must not bump updated_at and reorder the sidebar.
        Conversation.objects.filter(pk=conversation.pk).update(has_memory_backup=True)
        conversation.has_memory_backup = True
        logger.info(
            "conversation %s: %d exchange(s) saved to memory as %d memories (%d/%d covered)",
            conversation.pk,
            result.saved,
            result.memories,
            result.saved_before + result.saved,
            result.total,
        )
    return result


def _store(conversation, batch, result: BackupResult, timeout) -> None:
    items = [item for _, exchange_items in batch for item in exchange_items]
    ids: list[str] = []
    if items:
        try:
            stored = services.add_thoughts(user=conversation.user, items=items, timeout=timeout)
        except MemoryInputError as exc:
            if len(batch) > 1:  # which exchange was refused: each on its own
                for one in batch:
                    _store(conversation, [one], result, timeout)
                return
            _failed(conversation, batch[0][0], exc, result)
            return
        ids = list(stored.get("ids") or [])
    # A job killed before its records are written saves the batch again on its next run,
    # and the memory server's exact-text dedup gives back the same memories.
    position = 0
    recorded: list[SavedExchange] = []
    with transaction.atomic():  # one write transaction for the batch's records
        for exchange, exchange_items in batch:
            memory_ids = ids[position : position + len(exchange_items)]
            position += len(exchange_items)
            try:
                with transaction.atomic():  # a savepoint: a duplicate leaves the others
                    recorded.append(
                        SavedExchange.objects.create(
                            conversation=conversation,
                            answer_id=exchange.answer_id,
                            memory_ids=memory_ids,
                        )
                    )
            except IntegrityError:
                continue  # saved meanwhile by another job (same memories: exact-text dedup)
    FailedExchange.objects.filter(answer_id__in=[e.answer_id for e, _ in batch]).delete()
    for saved in recorded:
        result.saved += 1
        result.memories += len(saved.memory_ids)
        result.exchanges.append(saved)


def _failed(conversation, exchange: Exchange, exc: MemoryInputError, result) -> None:
    """The memory refused this exchange for good: recorded once, the others go on."""
    FailedExchange.objects.update_or_create(
        answer_id=exchange.answer_id,
        defaults={"conversation": conversation, "error": str(exc)[:500]},
    )
    result.failed += 1
    logger.error(
        "conversation %s: exchange %s refused by the memory, left out: %s",
        conversation.pk,
        exchange.answer_id,
        exc,
    )
