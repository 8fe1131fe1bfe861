"""The web app's memory page and memory_stats: one page of a namespace's records with
its filters (list_memories), and the counts of one namespace or several."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ikario_rag import text
from ikario_rag.record_reads import RecordReads


@dataclass
class Browse:
    """What list_memories filters on (all optional; tags match any, folded)."""

    kinds: Sequence[str] = ()
    category: str | None = None
    tags: Sequence[str] = ()
    date_from_ts: float | None = None
    date_to_ts: float | None = None
    source_prefix: str | None = None


class Browsing(RecordReads):
    """The memory page's queries."""

    def browse(
        self,
        namespace: str,
        filters: Browse,
        offset: int,
        limit: int,
        now_ts: float,
    ) -> tuple[list[sqlite3.Row], int]:
        """One page of the namespace's records, newest stored first, and how many match.

        Tags compare folded (case and accents aside), as search's tag filter does, so they
        are matched here rather than in SQL; every other filter is a WHERE clause."""
        where = ["namespace = ?", "(expires_ts IS NULL OR expires_ts > ?)"]
        params: list[Any] = [namespace, now_ts]
        if filters.kinds:
            where.append(f"kind IN ({','.join('?' * len(filters.kinds))})")
            params.extend(filters.kinds)
        if filters.category:
            where.append("category = ?")
            params.append(filters.category)
        if filters.date_from_ts is not None:
            where.append("date_ts >= ?")
            params.append(filters.date_from_ts)
        if filters.date_to_ts is not None:
            where.append("date_ts <= ?")
            params.append(filters.date_to_ts)
        if filters.source_prefix:
            # substr, not LIKE: a prefix holding % or _ means those characters.
            where.append("substr(source, 1, ?) = ?")
            params.extend([len(filters.source_prefix), filters.source_prefix])
        clause = " AND ".join(where)
        order = "ORDER BY created_ts DESC, rowid DESC"
        if not filters.tags:
            total = self._rows(f"SELECT COUNT(*) FROM memories WHERE {clause}", params)[0][0]  # noqa: S608
            rows = self._rows(
                f"SELECT * FROM memories WHERE {clause} {order} LIMIT ? OFFSET ?",  # noqa: S608
                [*params, limit, offset],
            )
            return rows, total
        wanted = {text.fold(t) for t in filters.tags}
        labelled = self._rows(f"SELECT id, tags FROM memories WHERE {clause} {order}", params)  # noqa: S608
        matching = [
            r["id"] for r in labelled if wanted & {text.fold(t) for t in json.loads(r["tags"])}
        ]
        page = matching[offset : offset + limit]
        found = self.by_ids(namespace, page, now_ts)
        return [found[i] for i in page if i in found], len(matching)

    def stats(
        self,
        namespace: str | None,
        now_ts: float,
        within: tuple[Sequence[str], Sequence[str]] | None = None,
    ) -> dict[str, Any]:
        """Counts of `namespace`, or of every namespace; `within` (names, prefixes) keeps
        only the namespaces named or starting with a prefix."""
        where = "WHERE (expires_ts IS NULL OR expires_ts > ?)"
        params: list[Any] = [now_ts]
        if namespace is not None:
            where += " AND namespace = ?"
            params.append(namespace)
        if within is not None:
            names, prefixes = within
            tests = ["namespace = ?"] * len(names)
            tests += ["substr(namespace, 1, ?) = ?"] * len(prefixes)
            params.extend(names)
            for prefix in prefixes:
                params.extend((len(prefix), prefix))
            where += f" AND ({' OR '.join(tests) or '0'})"
        groups = self._rows(
            "SELECT category, kind, COUNT(*), MAX(created_at)"  # noqa: S608
            f" FROM memories {where} GROUP BY category, kind",
            params,
        )
        by_category: dict[str, int] = {}
        by_kind: dict[str, int] = {}
        for category, kind, count, _ in groups:
            by_category[category] = by_category.get(category, 0) + count
            by_kind[kind] = by_kind.get(kind, 0) + count
        return {
            "total_memories": sum(g[2] for g in groups),
            "last_save": max((g[3] for g in groups), default=None),
            "by_category": by_category,
            "by_kind": by_kind,
        }
