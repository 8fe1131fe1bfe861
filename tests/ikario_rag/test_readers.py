"""Reads run on reader connections of their own (ikario_rag/database.py's docstring).

In-process Store for the store's behaviour: a search answers while an add holds its write
transaction open and sees the last commit, a read inside that transaction sees the
transaction's own changes, searches on several threads beside adds, deletes, edits and
namespace resets always see every committed record and never fail, and close() closes
every connection. A real server over stdio for the server's: searches sent while
add_thoughts calls create namespaces answer, and find what an answered add stored.
"""

from __future__ import annotations

import os
import random
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from ikario_rag.records import new_row
from ikario_rag.store import Store

# A bound on a thread's work on a busy machine, not an expectation of speed.
WAIT = 60.0
NOW = 1_900_000_000.0
# Writes of the stress test: about a second on two busy cores.
STEPS = 1000


def _row(memory_id: str, namespace: str, words: str, speaker: str = "Ana") -> dict:
    content = f"{speaker}: marker {words}"
    return new_row(
        id=memory_id,
        namespace=namespace,
        content=content,
        search_text=content,
        category="conversation",
        kind="conversation",
        date="2024-03-01T00:00:00+00:00",
        date_ts=1_709_251_200.0,
        created_at="2024-03-01T00:00:00+00:00",
        created_ts=1_709_251_200.0,
        expires_at=None,
        expires_ts=None,
        source=None,
    )


def _searched(store: Store, namespace: str, ids) -> tuple[set[str], set[str]]:
    """The ids a search of the namespace finds by full text (the word every record holds),
    and those of `ids` found by id, as search_memories reads its candidates: two reads, each
    of the last commit before it."""
    by_text = {i for i, _ in store.text_search(namespace, ["marker"], 1000, NOW)}
    return by_text, set(store.by_ids(namespace, sorted(ids), NOW))


def _found(store: Store, namespace: str, ids) -> set[str]:
    """What both reads find, when no write runs between them."""
    by_text, by_id = _searched(store, namespace, ids)
    assert by_text == by_id, (by_text ^ by_id, namespace)
    return by_id


def _run(target, *args) -> tuple[threading.Thread, dict]:
    """Run `target` on a thread of its own; its result or exception lands in the dict."""
    out: dict = {}

    def work() -> None:
        try:
            out["result"] = target(*args)
        except BaseException as exc:  # noqa: BLE001 -- handed to the test, which re-raises
            out["error"] = exc

    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    return thread, out


def _database_files_open(path: Path) -> int:
    """This process's open file descriptors on the database (Linux's /proc)."""
    opened = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}") == str(path):
                opened += 1
        except OSError:  # closed while listed
            continue
    return opened


@pytest.fixture
def store(tmp_path) -> Iterator[Store]:
    opened = Store(tmp_path / "memories.sqlite3")
    yield opened
    opened.close()


def test_it_answers_a_search_while_an_add_holds_its_transaction_open(store):
    store.insert([_row("old", "ana", "kayak"), _row("kept", "ana", "violin")])
    in_transaction, release = threading.Event(), threading.Event()
    inside: dict = {}

    def replaced():
        # Iterated by insert inside its write transaction, on the writer's thread: "old" is
        # deleted (uncommitted), then the transaction stays open until the test lets it go.
        yield ("ana", "old")
        inside["by_ids"] = set(store.by_ids("ana", ["old", "kept"], NOW))
        inside["text"] = {i for i, _ in store.text_search("ana", ["marker"], 10, NOW)}
        in_transaction.set()
        release.wait(WAIT)

    adding, added = _run(store.insert, [_row("new", "ana", "kayak again")], replaced())
    try:
        assert in_transaction.wait(WAIT)
        searching, searched = _run(_found, store, "ana", ["old", "kept", "new"])
        searching.join(WAIT)
        # The search answered while the add's transaction was still open...
        assert not searching.is_alive()
        assert adding.is_alive() and not release.is_set()
        # ...with the last commit: the uncommitted delete and insert are not seen.
        assert searched == {"result": {"old", "kept"}}
    finally:
        release.set()
        adding.join(WAIT)
    assert added == {"result": None}
    # Reads inside the write transaction saw its own delete.
    assert inside == {"by_ids": {"kept"}, "text": {"kept"}}
    # Once the add has returned, a search from any thread sees it.
    assert _found(store, "ana", ["old", "kept", "new"]) == {"kept", "new"}
    searching, searched = _run(_found, store, "ana", ["old", "kept", "new"])
    searching.join(WAIT)
    assert searched == {"result": {"kept", "new"}}


def test_a_threads_reads_inside_a_snapshot_all_see_the_state_it_began_with(store):
    """A search's steps (its candidates, their neighbours, its results' full records) read
    inside one snapshot: a record deleted and one added meanwhile are seen by none of them,
    and a count taken there is not kept for later reads."""
    store.insert([_row("kept", "ana", "kayak"), _row("gone", "ana", "violin")])
    with store.snapshot():
        before = set(store.by_ids("ana", ["kept", "gone", "new"], NOW))
        store.insert([_row("new", "ana", "kayak again")], iter([("ana", "gone")]))
        inside = set(store.by_ids("ana", ["kept", "gone", "new"], NOW))
        counted = store.word_counts("ana", ["kayak"])
        # Another thread reads the last commit meanwhile.
        elsewhere, seen = _run(store.by_ids, "ana", ["kept", "gone", "new"], NOW)
        elsewhere.join(WAIT)
    after = set(store.by_ids("ana", ["kept", "gone", "new"], NOW))

    assert before == inside == {"kept", "gone"}
    assert counted == {"kayak": 1}
    assert set(seen["result"]) == after == {"kept", "new"}
    assert store.word_counts("ana", ["kayak"]) == {"kayak": 2}


def test_it_keeps_a_new_namespace_unseen_until_its_table_is_committed(store):
    store.insert([_row("b1", "ben", "tent")])
    # A namespace whose full-text table an open transaction has just created: a search
    # from another thread finds nothing and fails on nothing.
    created, release2 = threading.Event(), threading.Event()

    class Held(list):
        """Rows that keep insert's transaction open once they are all inserted."""

        def __iter__(self):
            yield from super().__iter__()
            created.set()
            release2.wait(WAIT)

    adding, added = _run(store.insert, Held([_row("d1", "dora", "guitar")]))
    try:
        assert created.wait(WAIT)
        searching, searched = _run(_found, store, "dora", ["d1"])
        searching.join(WAIT)
        assert searched == {"result": set()}
        assert store.word_counts("dora", ["marker"]) == {"marker": 0}
    finally:
        release2.set()
        adding.join(WAIT)
    assert added == {"result": None}
    assert _found(store, "dora", ["d1"]) == {"d1"}
    assert store.word_counts("dora", ["marker", "guitar"]) == {"marker": 1, "guitar": 1}


class Ledger:
    """What the writer committed, numbered: record -> (namespace, the write that stored
    it), and the write that deleted it. `started`: writes begun, `done`: writes returned."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.born: dict[str, tuple[str, int]] = {}
        self.died: dict[str, int] = {}
        self.started = 0
        self.done = 0

    def expected(self, namespace: str, before: int, after: int) -> tuple[set, set, set]:
        """(ids in the namespace, ids a search between `before` (writes returned when it
        started) and `after` (writes begun when it ended) must find, ids it may find)."""
        with self.lock:
            ids = {i for i, (ns, _) in self.born.items() if ns == namespace}
            must = {
                i for i in ids if self.born[i][1] <= before and self.died.get(i, after + 1) > after
            }
            may = {
                i for i in ids if self.born[i][1] <= after and self.died.get(i, before + 1) > before
            }
            return ids, must, may


def test_it_never_fails_nor_misses_a_committed_record_beside_writes(store):
    rng = random.Random(20261123)
    ledger = Ledger()
    namespaces = ["ana"]
    alive: dict[str, str] = {}  # id -> namespace, the writer's own view
    stop = threading.Event()
    failures: list[BaseException] = []
    checks = [0]

    def write(step: int) -> None:
        op = rng.random()
        with ledger.lock:
            ledger.started += 1
            number = ledger.started
        if op < 0.45 or not alive:
            if rng.random() < 0.3:  # a namespace never seen: a new full-text table
                namespaces.append(f"ns{len(namespaces)}")
            namespace = rng.choice(namespaces)
            rows = [
                _row(f"r{step}-{k}", namespace, f"w{step}x{k}", speaker=namespace.title())
                for k in range(rng.randint(1, 4))
            ]
            with ledger.lock:
                ledger.born.update((r["id"], (namespace, number)) for r in rows)
            store.insert(rows)
            alive.update((r["id"], namespace) for r in rows)
        elif op < 0.65:
            gone = rng.sample(sorted(alive), min(len(alive), rng.randint(1, 3)))
            by_ns: dict[str, list[str]] = {}
            for memory_id in gone:
                by_ns.setdefault(alive.pop(memory_id), []).append(memory_id)
            with ledger.lock:
                ledger.died.update(dict.fromkeys(gone, number))
            for namespace, ids in by_ns.items():
                store.delete(namespace, ids)
        elif op < 0.9:
            memory_id = rng.choice(sorted(alive))
            namespace = alive[memory_id]
            search_text = f"{namespace.title()}: marker edited{step}"
            store.update_record(
                namespace, memory_id, {"content": search_text, "search_text": search_text}
            )
        else:  # a namespace reset: every record of it deleted
            namespace = rng.choice(namespaces)
            gone = [i for i, ns in alive.items() if ns == namespace]
            for memory_id in gone:
                del alive[memory_id]
            with ledger.lock:
                ledger.died.update(dict.fromkeys(gone, number))
            store.delete(namespace, gone)
        with ledger.lock:
            ledger.done = number

    def writer() -> None:
        try:
            for step in range(STEPS):
                write(step)
        except BaseException as exc:  # noqa: BLE001 -- reported by the test
            failures.append(exc)
        finally:
            stop.set()

    def reader(seed: int) -> None:
        picks = random.Random(seed)
        try:
            while not stop.is_set():
                namespace = picks.choice(list(namespaces))
                with ledger.lock:
                    before = ledger.done
                ids, _, _ = ledger.expected(namespace, before, before)
                by_text, by_id = _searched(store, namespace, ids)
                counted = store.word_counts(namespace, ["marker"])["marker"]
                store.speakers(namespace)
                with ledger.lock:
                    after = ledger.started
                _, must, may = ledger.expected(namespace, before, after)
                for found in (by_text, by_id):
                    assert must <= found <= may, (namespace, must - found, found - may)
                assert len(must) <= counted <= len(may), (namespace, len(must), counted)
                checks[0] += 1
        except BaseException as exc:  # noqa: BLE001 -- reported by the test
            failures.append(exc)

    threads = [threading.Thread(target=writer)]
    threads += [threading.Thread(target=reader, args=(seed,)) for seed in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT * 5)
    assert not failures, failures
    assert checks[0] > 0
    # Once the writes are over, every search finds exactly what is stored, word counts
    # included (none cached from a snapshot older than its namespace's last write).
    for namespace in namespaces:
        stored = {i for i, ns in alive.items() if ns == namespace}
        ids, _, _ = ledger.expected(namespace, ledger.done, ledger.done)
        assert _found(store, namespace, ids) == stored
        assert store.word_counts(namespace, ["marker"]) == {"marker": len(stored)}
        assert store.speakers(namespace) <= {namespace}


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc to count files")
def test_it_closes_every_reader_connection_on_close(tmp_path):
    path = tmp_path / "memories.sqlite3"
    store = Store(path)
    store.insert([_row(f"r{i}", "ana", f"w{i}") for i in range(5)])
    # Several reads at once: a reader each, then kept for the next reads.
    held, release = threading.Barrier(7), threading.Event()

    def hold() -> set[str]:
        with store.snapshot() as db:
            held.wait(WAIT)
            release.wait(WAIT)
            return {r[0] for r in db.execute("SELECT id FROM memories")}

    readers = [_run(hold) for _ in range(6)]
    held.wait(WAIT)
    assert _database_files_open(path) >= 7  # the writer and six readers
    release.set()
    for thread, _ in readers[1:]:
        thread.join(WAIT)
    assert all(out == {"result": {f"r{i}" for i in range(5)}} for _, out in readers[1:])

    # One read still under way when the store closes: its reader closes when it ends.
    late, late_release = threading.Event(), threading.Event()
    lent: dict = {}

    def last_read() -> int:
        with store.snapshot() as db:
            lent["db"] = db
            late.set()
            late_release.wait(WAIT)
            return db.execute("SELECT COUNT(*) FROM memories").fetchone()[0]

    reading, read = _run(last_read)
    assert late.wait(WAIT)
    store.close()
    with pytest.raises(sqlite3.ProgrammingError):
        store.by_ids("ana", ["r1"], NOW)
    late_release.set()
    reading.join(WAIT)
    assert read == {"result": 5}
    with pytest.raises(sqlite3.ProgrammingError):
        lent["db"].execute("SELECT 1")
    assert _database_files_open(path) == 0
    # The last connection closed checkpointed the log and removed it.
    assert not path.with_name(path.name + "-wal").exists()


def test_it_answers_searches_sent_while_adds_create_namespaces(shared_server):
    server = shared_server
    stored: dict[str, list[str]] = {}  # namespace -> contents, of adds already answered
    for k in range(6):
        namespace, word = f"readers-{k}", f"lantern{k}"
        contents = [f"Ada: I packed the {word} for trip {k} ({i})." for i in range(8)]
        items = [
            {"content": c, "context": {"kind": "conversation", "date": "2024-05-01"}}
            for c in contents
        ]
        # The add (a new namespace: a new full-text table) and, sent with it, a search of
        # each namespace stored before and of the one being stored.
        searched = [*stored, namespace]
        outcomes = server.calls_at_once(
            [
                ("add_thoughts", {"items": items, "namespace": namespace}),
                *(
                    (
                        "search_memories",
                        {"query": f"lantern{n[-1]}", "namespace": n, "n_results": 10},
                    )
                    for n in searched
                ),
            ]
        )
        assert not any(error for error, _ in outcomes), outcomes
        for ns, (_, found) in zip(searched, outcomes[1:], strict=True):
            got = sorted(r["content"] for r in found["results"])
            if ns in stored:  # its add was answered before this search was sent
                assert got == sorted(stored[ns]), ns
            else:  # before, during or after the add: none, or all of one commit
                assert got in ([], sorted(contents)), got
        stored[namespace] = contents
    # After the last add answered, each namespace's search finds its eight memories.
    for ns, contents in stored.items():
        found = server.tool("search_memories", query=f"lantern{ns[-1]}", namespace=ns, n_results=10)
        assert sorted(r["content"] for r in found["results"]) == sorted(contents)


def test_it_never_recreates_a_deleted_database_when_it_opens_a_reader(tmp_path):
    path = tmp_path / "memories.sqlite3"
    store = Store(path)
    store.insert([_row("r1", "ana", "kayak")])
    path.unlink()  # the writer keeps the deleted file open; no reader is open yet
    try:
        with pytest.raises(sqlite3.OperationalError):
            store.by_ids("ana", ["r1"], NOW)
        assert not path.exists()  # no empty database left in its place
    finally:
        store.close()
