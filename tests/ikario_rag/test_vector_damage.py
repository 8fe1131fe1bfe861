"""Vectors damaged while the server runs, or before it starts: the records are the truth.

A memory whose record was committed is reported saved even when its vector could not be
written ("indexed": false), and maintenance indexes it; at start, records without vectors,
vectors without records and namespaces whose counts disagree are rebuilt from the records.
"""

from __future__ import annotations

import logging
import shutil

import numpy as np

from ikario_rag.app import build_server
from ikario_rag.index import VectorIndex, collection_name
from tests.ikario_rag.conftest import READY_WAIT, InMemoryClient, call


def _semantic_ids(memory, namespace: str, query: str) -> list[str]:
    from ikario_rag import search

    found = search.search(memory, namespace, query, 10, search.Filters(), "semantic")
    return [r["id"] for r in found["results"]]


async def test_it_saves_a_memory_whose_vector_files_are_gone_and_indexes_it_later(make_host):
    host = make_host(maintenance_interval=0.05)
    client = InMemoryClient(build_server(host))
    memory = host.runtime.memory()
    _, first = await call(client, "add_thought", content="Le vélo de Nora est rouge")
    shutil.rmtree(memory.index_dir / "chroma")

    error, second = await call(client, "add_thought", content="La clé est sous le pot de fleurs")

    assert not error, second
    assert second["status"] == "created" and second["indexed"] is False
    _, found = await call(client, "search_memories", query="clé pot de fleurs", mode="text")
    assert found["results"][0]["id"] == second["id"]
    # Maintenance recreates the vector directory and rebuilds every vector from the records.
    assert host.runtime.wait_for_cycle(host.runtime.cycles + 2, timeout=READY_WAIT)
    assert (memory.index_dir / "chroma" / "chroma.sqlite3").exists()
    assert _semantic_ids(memory, "default", "où est la clé")[0] == second["id"]
    assert _semantic_ids(memory, "default", "bicyclette rouge")[0] == first["id"]


async def test_it_writes_again_into_a_collection_dropped_under_it(make_host):
    host = make_host(maintenance_interval=0.05)
    client = InMemoryClient(build_server(host))
    memory = host.runtime.memory()
    _, first = await call(client, "add_thought", content="Le vélo de Nora est rouge")
    memory.flush()  # its vector (written behind the add) is in the collection dropped next
    memory.vectors.client.delete_collection(collection_name("default"))

    error, second = await call(client, "add_thought", content="La clé est sous le pot de fleurs")

    assert not error and second["status"] == "created"
    assert host.runtime.wait_for_cycle(host.runtime.cycles + 2, timeout=READY_WAIT)
    assert memory.vectors.ids("default") == {first["id"], second["id"]}
    assert _semantic_ids(memory, "default", "bicyclette rouge")[0] == first["id"]


async def test_it_rebuilds_missing_and_stray_vectors_at_start(make_host, tmp_path, caplog):
    index_dir = tmp_path / "index"
    host = make_host(index_dir)
    client = InMemoryClient(build_server(host))
    ids = {}
    for namespace, content in (
        ("lost-one", "Le vélo de Nora est rouge"),
        ("lost-one", "Mickael apprend le piano"),
        ("dropped", "La clé est sous le pot de fleurs"),
        ("stray", "David habite à Ordizan"),
    ):
        _, added = await call(client, "add_thought", content=content, namespace=namespace)
        ids[content] = added["id"]
    host.runtime.memory().flush()  # every vector written (behind the adds) before the damage
    while host.runtime is not None:
        host.release()
    # Damage done while no server runs: one vector gone, one collection gone, one stray vector.
    vectors = VectorIndex(index_dir / "chroma")
    vectors.delete("lost-one", [ids["Le vélo de Nora est rouge"]])
    vectors.drop("dropped")
    vectors.upsert("stray", ["no-such-record"], np.ones((1, 384), np.float32), [{"kind": "x"}])
    vectors.close()

    caplog.set_level(logging.INFO, logger="ikario_rag")
    again = make_host(index_dir)
    assert again.runtime.wait_for_cycle(1, timeout=READY_WAIT)

    memory = again.runtime.memory()
    assert (
        _semantic_ids(memory, "lost-one", "bicyclette rouge")[0] == ids["Le vélo de Nora est rouge"]
    )
    assert _semantic_ids(memory, "dropped", "où est la clé") == [
        ids["La clé est sous le pot de fleurs"]
    ]
    assert memory.vectors.ids("stray") == {ids["David habite à Ordizan"]}
    assert "rebuilding vectors: 2/2" in caplog.text


async def test_it_rebuilds_every_vector_when_the_vector_directory_is_gone_at_start(
    make_host, tmp_path
):
    index_dir = tmp_path / "index"
    host = make_host(index_dir)
    client = InMemoryClient(build_server(host))
    _, added = await call(client, "add_thought", content="Le vélo de Nora est rouge")
    while host.runtime is not None:
        host.release()
    shutil.rmtree(index_dir / "chroma")

    again = make_host(index_dir)
    assert again.runtime.wait_for_cycle(1, timeout=READY_WAIT)

    assert _semantic_ids(again.runtime.memory(), "default", "bicyclette rouge") == [added["id"]]
