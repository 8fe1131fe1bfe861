"""Full-text search over a user's own chats: the sidebar's "Search chats", the API, Claude's tool.

The index is the database's own (migration 0005): SQLite FTS5 kept in sync with the messages
by triggers, a GIN index on to_tsvector('simple', content) on Postgres. The query is chosen
by the database's vendor when it runs, so one `search_messages` serves both.

Any text is a query. It is cut into words (letters and digits, as the index tokenises them);
each word is quoted, so FTS5 or tsquery syntax (`"`, `*`, `NEAR(`, `-`, `:`, `&`) is only ever
text; lone surrogates and NUL are dropped; at most MAX_TERMS words of MAX_TERM_CHARS count.
Every word must match; a word of PREFIX_FROM or more letters also matches longer words
("ski" finds "skiing"), as one types. A query with no word finds nothing.
"""

from __future__ import annotations

import re
import secrets
import unicodedata
from dataclasses import dataclass
from datetime import datetime

from django.db import connection
from django.urls import reverse
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from chat.models import Message

MAX_QUERY_CHARS = 1000  # the API refuses longer; the service reads no further
MAX_TERMS = 12
MAX_TERM_CHARS = 64
PREFIX_FROM = 3  # shorter words match whole words only: "a*" would match most of the index
SNIPPET_WORDS = 16
DEFAULT_LIMIT = 20

_WORD = re.compile(r"[^\W_]+")  # what FTS5's unicode61 and Postgres' parser call a word
_UNSENDABLE = re.compile("[\x00\ud800-\udfff]")


@dataclass
class Hit:
    """One message that matched, with where it lives."""

    message_id: int
    conversation_id: int
    conversation_title: str
    role: str
    created_at: datetime
    # The matched passage, "…" where cut; parts[i] is a match when i is odd.
    parts: list[str]

    @property
    def snippet(self) -> str:
        return "".join(self.parts)

    @property
    def snippet_html(self) -> SafeString:
        """The passage escaped, the matched words in <mark>: the only markup in it."""
        html = "".join(
            f"<mark>{escape(part)}</mark>" if n % 2 else escape(part)
            for n, part in enumerate(self.parts)
        )
        return mark_safe(html)  # noqa: S308 - every part escaped just above

    @property
    def url(self) -> str:
        """The conversation page, opened at this message."""
        base = reverse("chat:conversation", args=[self.conversation_id])
        return f"{base}?m={self.message_id}#message-{self.message_id}"

    def as_dict(self) -> dict:
        return {
            "message_id": self.message_id,
            "conversation_id": self.conversation_id,
            "conversation_title": self.conversation_title,
            "role": self.role,
            "created_at": self.created_at.isoformat(),
            "snippet": self.snippet,
            "snippet_html": self.snippet_html,
            "url": self.url,
        }


def search_terms(query) -> list[str]:
    """The words of a query, as the index will look for them (lower case, deduplicated)."""
    if not isinstance(query, str):
        return []
    text = unicodedata.normalize("NFKC", _UNSENDABLE.sub("", query[:MAX_QUERY_CHARS]))
    terms: list[str] = []
    for word in _WORD.findall(text.lower()):
        word = word[:MAX_TERM_CHARS]
        if word not in terms:
            terms.append(word)
        if len(terms) == MAX_TERMS:
            break
    return terms


def search_messages(
    *, user, query, limit: int = DEFAULT_LIMIT, exclude_conversation_id: int | None = None
) -> list[Hit]:
    """The user's messages matching `query`, best first (only the user's own chats, never
    an incognito one)."""
    terms = search_terms(query)
    if not terms or limit < 1:
        return []
    marks = _marks()
    # The two databases Ikario runs on (settings: SQLite, or Postgres via DATABASE_URL).
    by_vendor = _postgres if connection.vendor == "postgresql" else _sqlite
    return _hits(by_vendor(user.pk, terms, limit, exclude_conversation_id, marks), marks)


def _marks() -> tuple[str, str]:
    # Fresh per query: a message cannot contain them, so no stored text can fake a match.
    nonce = secrets.token_hex(6)
    return f"[{nonce}[", f"]{nonce}]"


def _sqlite(user_id, terms, limit, exclude_id, marks) -> list[tuple[int, str]]:
    match = " ".join(f'"{t}"*' if len(t) >= PREFIX_FROM else f'"{t}"' for t in terms)
    sql = (
        "SELECT m.id, snippet(messages_fts, 0, %s, %s, '…', %s) "
        "FROM messages_fts "
        "JOIN messages m ON m.id = messages_fts.rowid "
        "JOIN conversations c ON c.id = m.conversation_id "
        "WHERE messages_fts MATCH %s AND c.user_id = %s AND NOT c.incognito"
    )
    params = [*marks, SNIPPET_WORDS, match, user_id]
    if exclude_id is not None:
        sql += " AND c.id != %s"
        params.append(exclude_id)
    sql += " ORDER BY bm25(messages_fts), m.id DESC LIMIT %s"
    params.append(limit)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def _vector():
    # Postgres only: django.contrib.postgres needs psycopg, which SQLite installs lack.
    from django.contrib.postgres.search import SearchVector

    # The expression migration 0005 indexes (GIN), so the index serves the query.
    return SearchVector("content", config="simple")


def _tsquery(terms: list[str]):
    from django.contrib.postgres.search import SearchQuery

    raw = " & ".join(f"'{t}':*" if len(t) >= PREFIX_FROM else f"'{t}'" for t in terms)
    return SearchQuery(raw, search_type="raw", config="simple")


def _postgres(user_id, terms, limit, exclude_id, marks) -> list[tuple[int, str]]:
    from django.contrib.postgres.search import SearchHeadline, SearchRank

    query = _tsquery(terms)
    rows = Message.objects.annotate(document=_vector()).filter(
        document=query, conversation__user_id=user_id, conversation__incognito=False
    )
    if exclude_id is not None:
        rows = rows.exclude(conversation_id=exclude_id)
    rows = rows.annotate(
        rank=SearchRank(_vector(), query),
        passage=SearchHeadline(
            "content",
            query,
            config="simple",
            start_sel=marks[0],
            stop_sel=marks[1],
            max_words=SNIPPET_WORDS,
            min_words=SNIPPET_WORDS // 2,
            short_word=1,
            max_fragments=1,
            fragment_delimiter="…",
        ),
    )
    return list(rows.order_by("-rank", "-id").values_list("id", "passage")[:limit])


def _hits(found: list[tuple[int, str]], marks) -> list[Hit]:
    messages = Message.objects.select_related("conversation").in_bulk([pk for pk, _ in found])
    hits = []
    for pk, passage in found:
        message = messages.get(pk)
        if message is None:  # deleted between the two reads
            continue
        hits.append(
            Hit(
                message_id=pk,
                conversation_id=message.conversation_id,
                conversation_title=message.conversation.title,
                role=message.role,
                created_at=message.created_at,
                parts=_split(passage or "", marks),
            )
        )
    return hits


def _split(passage: str, marks) -> list[str]:
    """Plain and matched pieces, alternating (plain first), whitespace folded."""
    parts: list[str] = []
    rest = " ".join(passage.split())
    while True:
        before, found, after = rest.partition(marks[0])
        parts.append(before)
        if not found:
            break
        matched, _, rest = after.partition(marks[1])
        parts.append(matched)
    return parts
