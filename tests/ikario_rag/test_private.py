"""`<private>` spans, however written, never reach the records, the full-text index, the
embedded text, the labels, the source, the results or the logs; a private query is neither
searched nor logged."""

from __future__ import annotations

import itertools
import logging
import string

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ikario_rag.app import build_server
from ikario_rag.full_text import fts_table
from ikario_rag.runtime import MemoryHost, Settings
from tests.ikario_rag.conftest import READY_WAIT, InMemoryClient, call, sql, stable_examples

OPENERS = [
    "<private>",
    "<PRIVATE>",
    "<Private>",
    "<private >",
    "< private>",
    "<  private\n>",
    '<private class="x">',
    "<private data-a='1' b>",
    "&lt;private&gt;",
    "&LT;private&GT;",
    "&lt;private>",
    "<private&gt;",
    "&#60;private&#62;",
    "&#060;PRIVATE&#062;",
    "&#x3C;private&#x3E;",
    "&#X3c;private&#x3e;",
    "&amp;lt;private&amp;gt;",
    "&amp;amp;lt;private&amp;amp;gt;",
    "\uff1cprivate\uff1e",
    "<pri\u200bvate>",
    "<priv\u00adate>",
    "&lt;&#112;rivate&gt;",
]
CLOSERS = [
    "</private>",
    "</PRIVATE>",
    "</ private >",
    "< /private>",
    "< / Private >",
    "</private foo>",
    "&lt;/private&gt;",
    "&lt;&#47;private&gt;",
    "&#60;/private&#62;",
    "&#x3c;&#x2f;private&#x3e;",
    "&amp;lt;/private&amp;gt;",
    "\uff1c/private\uff1e",
    "</pri\u200bvate>",
]
# Text outside the spans cannot spell the secret (no capital letters, no digits).
_around = st.text(alphabet=string.ascii_lowercase + " .,;:!?'-<>/&#=\"\n", max_size=20)


@st.composite
def span(draw, depth: int = 0) -> str:
    """A private span with the secret inside, possibly nested, possibly never closed."""
    inside = [draw(_around), "SECRET7", draw(_around)]
    if depth < 3 and draw(st.booleans()):
        inside.insert(draw(st.integers(0, 3)), draw(span(depth + 1)))
    closed = draw(st.integers(0, 9)) > 0  # an unclosed span hides the rest
    return (
        draw(st.sampled_from(OPENERS))
        + "".join(inside)
        + (draw(st.sampled_from(CLOSERS)) if closed else "")
    )


@st.composite
def private_text(draw) -> str:
    parts = ["KEPTWORD "]
    for _ in range(draw(st.integers(1, 3))):
        parts.append(draw(_around))
        parts.append(draw(span()))
    parts.append(draw(_around))
    return "".join(parts)


_examples = itertools.count()


@pytest.fixture(scope="module")
def private_client(tmp_path_factory, embedder):
    host = MemoryHost(Settings(index_dir=tmp_path_factory.mktemp("private"), embedder=embedder))
    host.acquire().memory().wait_ready(READY_WAIT)
    yield InMemoryClient(build_server(host)), host.runtime.memory()
    host.release()


def _stored(memory, namespace: str) -> str:
    """Everything the index holds about a namespace, as text: every column of every record
    (content, embedded text, labels, source, history) and every term of its full-text index."""
    rows = sql(memory, "SELECT * FROM memories WHERE namespace = ?", namespace)
    table = fts_table(namespace)
    memory.store.db.execute(
        f'CREATE VIRTUAL TABLE IF NOT EXISTS "{table}_v" USING fts5vocab("{table}", row)'
    )
    vocabulary = sql(memory, f'SELECT group_concat(term, " ") FROM "{table}_v"')  # noqa: S608
    return " ".join(str(tuple(r)) for r in rows) + " " + (vocabulary[0][0] or "")


def _server_logs(caplog) -> str:
    """What the server logs: its own loggers, and whatever the libraries log at WARNING+."""
    return "\n".join(
        r.getMessage()
        for r in caplog.records
        if r.name.startswith("ikario_rag") or r.levelno >= logging.WARNING
    )


@stable_examples(60)
@given(content=private_text(), label=private_text(), query=private_text())
async def test_nothing_between_the_markers_survives(private_client, caplog, content, label, query):
    client, memory = private_client
    caplog.set_level(logging.DEBUG)
    caplog.clear()
    namespace = f"private-{next(_examples)}"  # each example on its own: a leak is its own
    error, added = await call(
        client,
        "add_thought",
        content=content,
        context={"tags": [label], "concepts": [label], "subjects": [label], "source": label[:500]},
        namespace=namespace,
    )
    assert not error, added
    _, got = await call(client, "get_memories", ids=[added["id"]], namespace=namespace)
    returned = str(got)
    assert "KEPTWORD" in got["memories"][0]["content"]
    for tool, arguments in (
        ("search_memories", {"query": query, "mode": "text"}),
        ("check_consistency", {"statement": query}),
        ("trace_concept_evolution", {"concept": query}),
        ("forget", {"topic": query, "dry_run": True}),
    ):
        _, answer = await call(client, tool, namespace=namespace, **arguments)
        returned += str(answer)
    assert "SECRET7" not in returned
    assert "secret7" not in _stored(memory, namespace).lower()
    assert "SECRET7" not in _server_logs(caplog)


async def test_a_query_that_is_all_private_is_neither_searched_nor_logged(private_client, caplog):
    client, _ = private_client
    caplog.set_level(logging.DEBUG)
    error, message = await call(
        client, "search_memories", query="&lt;private&gt;SECRET7", namespace="private"
    )
    assert (error, message) == (True, "query must not be empty")
    assert "SECRET7" not in _server_logs(caplog)


@pytest.mark.parametrize(
    ("written", "stored"),
    [
        ("a<private>b<private>c</private>d</private>e", "a e"),
        ("a<private >x</ private >b", "a b"),
        ("a< private>x</PRIVATE>b", "a b"),
        ('a<Private class="q">x</private>b', "a b"),
        ("a&lt;private&gt;x&lt;/private&gt;b", "a b"),
        ("a&#60;private&#62;x&#60;/private&#62;b", "a b"),
        ("a&#x3C;private&#x3E;x&#x3c;&#x2f;private&#x3e;b", "a b"),
        ("a&amp;lt;private&amp;gt;x&amp;lt;/private&amp;gt;b", "a b"),
        ("a\uff1cprivate\uff1ex\uff1c/private\uff1eb", "a b"),
        ("a<pri\u200bvate>x</private>b", "a b"),
        ("a<private>x never closed", "a"),
        ("a</private>b", "a b"),
        ("&lt;<private>x</private>private&gt;hidden once the first span goes", ""),
        ("AT&amp;T <privateer> stays as written", "AT&amp;T <privateer> stays as written"),
    ],
)
def test_it_strips_every_written_form_of_a_private_span(written, stored):
    from ikario_rag import text

    assert text.clean(written) == stored
