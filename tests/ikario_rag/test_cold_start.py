"""A server started cold: its first search is answered, and what it prepared on its own
threads at start (ikario_rag/preload.py) changes no result."""

from __future__ import annotations

from ikario_rag import model
from ikario_rag.validate import new_memory

MEMORIES = [
    "Caroline painted a sunrise over the lake last summer",
    "Melanie runs a pottery class on Thursday evenings",
    "Jon opened a dance studio after he lost his job at the bank",
]


def test_it_answers_the_first_search_of_a_cold_start_with_the_same_results_every_start(
    spawn, make_host, tmp_path
):
    # A model cache of its own (the exported model linked in): the bank file lands there.
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / model.model_file().name).symlink_to(model.model_file())
    index_dir = tmp_path / "index"
    host = make_host(index_dir)
    memory = host.runtime.memory()
    ids = [r["id"] for r in memory.add("cold", [new_memory(m, None) for m in MEMORIES])]
    host.release()
    answers = []
    for _ in range(2):  # the first start embeds the bank and stores it, the second reads it
        server = spawn(index_dir=index_dir, env={"IKARIO_MODEL_CACHE": str(cache)})
        server.initialize()
        found = server.tool("search_memories", query="Who painted the lake?", namespace="cold")
        answers.append(found["results"])
        server.wait_for_log("embedding model warmed up")
        assert server.close() == 0
        assert "failed" not in server.stderr()
    assert answers[0][0]["id"] == ids[0]
    # Same ids, order, relevance scores and distances: the stored bank is the embedded one.
    assert answers[1] == answers[0]
    assert len(list(cache.glob("*.fixed-*.npy"))) == 1


def test_it_exits_cleanly_when_closed_right_after_initialize(spawn):
    # The model may still be loading, or warming up: the exit waits for it, not abort.
    server = spawn()
    server.initialize()
    assert server.close() == 0
    assert server.not_json_rpc == []
