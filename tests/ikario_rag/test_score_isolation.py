"""One user's scores depend on that user's memories only: another namespace's writes can
change neither what a search returns nor its scores (no way to tell whether a word occurs
in someone else's memories)."""

from __future__ import annotations

import sqlite3

from ikario_rag.app import build_server
from tests.ikario_rag.conftest import InMemoryClient, call, sql

BOB = [
    "Bob a réparé le vélo rouge de sa fille",
    "Le vélo de course de Bob a un pneu crevé",
    "Bob cherche une sacoche pour son vélo",
    "Bob a couru un semi-marathon à Lyon",
    "La fille de Bob apprend le piano",
]
QUERIES = ["vélo rouge", "pneu crevé sacoche", "piano fille", "marathon Lyon vélo"]


async def _searches(client, namespace: str) -> list:
    answers = []
    for query in QUERIES:
        for mode in ("hybrid", "text", "semantic"):
            _, found = await call(
                client, "search_memories", query=query, mode=mode, n_results=10, namespace=namespace
            )
            answers.append(
                [(r["content"], r["relevance_score"], r["distance"]) for r in found["results"]]
            )
    _, forgotten = await call(client, "forget", topic="vélo", dry_run=True, namespace=namespace)
    _, timeline = await call(client, "trace_concept_evolution", concept="vélo", namespace=namespace)
    _, checked = await call(
        client, "check_consistency", statement="Le vélo de Bob est bleu", namespace=namespace
    )
    answers.append([r["content"] for r in forgotten["removed"]])
    answers.append([(e["content"], e["evolution"]) for e in timeline["timeline"]])
    answers.append(checked["consistency_score"])
    return answers


async def test_it_gives_a_user_the_same_results_and_scores_whatever_another_user_adds(client):
    for content in BOB:
        await call(client, "add_thought", content=content, namespace="bob")
    before = await _searches(client, "bob")

    # Alice writes 40 memories full of Bob's query words.
    await call(
        client,
        "add_thoughts",
        namespace="alice",
        items=[
            {"content": f"Alice: vélo rouge, pneu crevé, sacoche, piano, fille, Lyon, marathon {i}"}
            for i in range(40)
        ],
    )

    assert await _searches(client, "bob") == before


async def test_it_scores_a_session_the_same_when_other_users_write_between_its_turns(
    client, memory
):
    session = {"kind": "conversation", "date": "2023-05-08T13:56:00"}
    turns = [
        "Melanie: Where did you spend your holiday in Greece?",
        "Caroline: On a small island, it was wonderful.",
        "Melanie: Did you take the ferry to Naxos?",
        "Caroline: Yes, and we hiked up to the old temple.",
    ]
    for turn in turns:  # alone
        await call(client, "add_thought", content=turn, context=session, namespace="quiet")
    for pos, turn in enumerate(turns):  # with another user writing between every two turns
        await call(client, "add_thought", content=turn, context=session, namespace="busy")
        await call(client, "add_thought", content=f"Noise {pos} island ferry", namespace="other")
    memory.flush()  # turns' vectors are written behind the add: compare once all are

    for query in ("holiday in Greece", "ferry to the island", "temple hike"):
        _, quiet = await call(client, "search_memories", query=query, namespace="quiet")
        _, busy = await call(client, "search_memories", query=query, namespace="busy")
        assert [(r["content"], r["relevance_score"]) for r in busy["results"]] == [
            (r["content"], r["relevance_score"]) for r in quiet["results"]
        ], query


OLD_SCHEMA = """
CREATE VIRTUAL TABLE memories_fts USING fts5(
    search_text, content='memories', content_rowid='rowid',
    tokenize='porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER memories_ai AFTER INSERT ON memories BEGIN
    INSERT INTO memories_fts(rowid, search_text) VALUES (new.rowid, new.search_text);
END;
"""


async def test_it_splits_an_index_written_with_one_shared_full_text_table(make_host, tmp_path):
    index_dir = tmp_path / "index"
    host = make_host(index_dir)
    client = InMemoryClient(build_server(host))
    for namespace, content in (("bob", BOB[0]), ("bob", BOB[4]), ("alice", "Alice fait du vélo")):
        await call(client, "add_thought", content=content, namespace=namespace)
    while host.runtime is not None:
        host.release()
    # Turn it into the layout of earlier versions: one full-text table for every namespace.
    old = sqlite3.connect(index_dir / "memories.sqlite3")
    for (name,) in old.execute("SELECT name FROM sqlite_master WHERE name LIKE 'fts_%'").fetchall():
        if name.count("_") == 1:
            old.execute(f'DROP TABLE "{name}"')
    old.execute("DROP TABLE namespaces")
    old.executescript(OLD_SCHEMA)
    old.execute("INSERT INTO memories_fts(memories_fts) VALUES ('rebuild')")
    old.commit()
    old.close()

    again = make_host(index_dir)
    client = InMemoryClient(build_server(again))

    _, found = await call(client, "search_memories", query="vélo", mode="text", namespace="bob")
    assert [r["content"] for r in found["results"]] == [BOB[0]]
    memory = again.runtime.memory()
    assert sql(memory, "SELECT name FROM sqlite_master WHERE name = 'memories_fts'") == []
    assert dict(sql(memory, "SELECT name, records FROM namespaces")) == {"bob": 2, "alice": 1}
