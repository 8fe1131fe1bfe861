"""memory_stats' counts (Store.stats): right per namespace and overall, expired records left
out, read from an index alone (not the records: a client polls them, docs/BENCHMARKS.md),
and an index made before that index existed gets it when opened."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from ikario_rag.records import new_row
from ikario_rag.store import Store

NOW = 1_900_000_000.0
CATEGORIES = ("contextuelle", "technique", "personnelle")
KINDS = ("conversation", "fact", "note")


def _row(n: int, namespace: str, category: str, kind: str, expired: bool) -> dict:
    created = f"2024-03-{1 + n % 28:02d}T00:00:{n % 60:02d}+00:00"
    return new_row(
        id=f"m{n}",
        namespace=namespace,
        content=f"memory number {n}",
        search_text=f"memory number {n}",
        category=category,
        kind=kind,
        date=created,
        date_ts=1_709_251_200.0,
        created_at=created,
        created_ts=1_709_251_200.0 + n,
        expires_at="2024-01-01T00:00:00+00:00" if expired else None,
        expires_ts=NOW - 1 if expired else None,
        source=None,
    )


def _counted(rows: list[dict], namespace: str | None) -> dict:
    live = [r for r in rows if r["expires_ts"] is None and namespace in (None, r["namespace"])]
    by_category: dict[str, int] = {}
    by_kind: dict[str, int] = {}
    for r in live:
        by_category[r["category"]] = by_category.get(r["category"], 0) + 1
        by_kind[r["kind"]] = by_kind.get(r["kind"], 0) + 1
    return {
        "total_memories": len(live),
        "last_save": max((r["created_at"] for r in live), default=None),
        "by_category": by_category,
        "by_kind": by_kind,
    }


RECORDS = st.lists(
    st.tuples(
        st.sampled_from(("ana", "ben")),
        st.sampled_from(CATEGORIES),
        st.sampled_from(KINDS),
        st.booleans(),
    ),
    max_size=40,
)


@settings(max_examples=40, deadline=None)
@given(RECORDS)
def test_the_counts_are_those_of_the_live_records(tmp_path_factory, records):
    store = Store(tmp_path_factory.mktemp("stats") / "memories.sqlite3")
    try:
        rows = [_row(n, *record) for n, record in enumerate(records)]
        if rows:
            store.insert(rows)
        for namespace in ("ana", "ben", None):
            assert store.stats(namespace, NOW) == _counted(rows, namespace)
    finally:
        store.close()


def _plan(path: Path, namespace: str | None) -> str:
    db = sqlite3.connect(path)
    try:
        where = "WHERE (expires_ts IS NULL OR expires_ts > ?)"
        params: list = [NOW]
        if namespace is not None:
            where += " AND namespace = ?"
            params.append(namespace)
        sql = f"SELECT category, kind, COUNT(*), MAX(created_at) FROM memories {where}"  # noqa: S608
        rows = db.execute(f"EXPLAIN QUERY PLAN {sql} GROUP BY category, kind", params)
        return " ".join(str(r[-1]) for r in rows)
    finally:
        db.close()


def test_the_counts_read_an_index_not_the_records(tmp_path):
    path = tmp_path / "memories.sqlite3"
    store = Store(path)
    store.insert([_row(n, "ana", "contextuelle", "fact", False) for n in range(50)])
    store.close()
    for namespace in ("ana", None):
        assert "COVERING INDEX memories_ns_counts" in _plan(path, namespace)


def test_an_index_made_before_the_counting_index_gets_it_and_keeps_its_records(tmp_path):
    path = tmp_path / "memories.sqlite3"
    store = Store(path)
    rows = [_row(n, "ana", CATEGORIES[n % 3], KINDS[n % 2], False) for n in range(30)]
    store.insert(rows)
    store.close()
    db = sqlite3.connect(path)
    db.execute("DROP INDEX memories_ns_counts")
    db.commit()
    db.close()

    store = Store(path)
    try:
        assert store.stats("ana", NOW) == _counted(rows, "ana")
    finally:
        store.close()
    assert "COVERING INDEX memories_ns_counts" in _plan(path, "ana")
