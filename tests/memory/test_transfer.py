"""Export all of one's memories as JSON, import such a file (a background job, followed
on the page): everything kept, twice adds nothing, a bad file refused whole with what is
wrong and where."""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from memory.client import services, transfer
from memory.worker import database


def _upload(client, data: bytes, name="memories.json"):
    """The import, run to its end: what the page shows once its job is done (202 first)."""
    response = client.post("/memory/import", {"file": SimpleUploadedFile(name, data)})
    if response.status_code != 202:
        return response
    database.run_ready_tasks()
    job_id = response["Location"].rstrip("/").rsplit("/", 1)[1]
    return client.get(f"/memory/jobs/{job_id}")


def _export(client) -> dict:
    response = client.get("/memory/export")
    assert response.status_code == 200
    assert response["Content-Disposition"].startswith('attachment; filename="ikario-memories-')
    return json.loads(
        b"".join(response.streaming_content) if response.streaming else response.content
    )


def test_it_exports_every_memory_with_its_labels_dates_and_history(
    memory_server, alice, alice_client
):
    first = services.add_thought(
        user=alice,
        content="Alice moved to Lyon",
        context={
            "kind": "fact",
            "category": "fondatrice",
            "tags": ["home"],
            "date": "2025-09-01T00:00:00Z",
            "source": "conversation:3:4",
        },
    )["id"]
    services.update_memory(user=alice, memory_id=first, content="Alice moved to Lyon in 2025")
    for n in range(105):  # more than one list_memories page
        services.add_thought(user=alice, content=f"Note {n} about the garden")

    exported = _export(alice_client)

    assert (exported["format"], exported["version"], exported["count"]) == (
        "ikario-memories",
        1,
        106,
    )
    oldest = exported["memories"][-1]
    assert oldest["content"] == "Alice moved to Lyon in 2025"
    assert (
        oldest["metadata"]["tags"] == ["home"]
        and oldest["metadata"]["source"] == "conversation:3:4"
    )
    assert oldest["metadata"]["date"] == "2025-09-01T00:00:00Z"
    assert [h["content"] for h in oldest["history"]] == ["Alice moved to Lyon"]
    assert "namespace" not in oldest


def test_it_imports_an_export_idempotently(memory_server, alice, bob, alice_client, bob_client):
    services.add_thought(
        user=alice,
        content="Alice plays the cello",
        context={"tags": ["music"], "date": "2024-02-02T10:00:00Z", "source": "conversation:1"},
    )
    services.add_thought(user=alice, content="Alice's cat is Miso", context={"kind": "fact"})
    data = json.dumps(_export(alice_client)).encode()

    first = _upload(bob_client, data)
    second = _upload(bob_client, data)

    assert "2 imported, 0 already in memory (2 in the file)." in first.content.decode()
    assert "0 imported, 2 already in memory (2 in the file)." in second.content.decode()
    mine = services.list_memories(user=bob)
    assert mine["total"] == 2
    cello = next(m for m in mine["memories"] if m["content"] == "Alice plays the cello")
    assert cello["metadata"]["tags"] == ["music"]
    assert cello["metadata"]["date"] == "2024-02-02T10:00:00Z"
    assert cello["metadata"]["source"] == "conversation:1"
    # Alice's own memories are untouched (ids are global: Bob's copies got new ones).
    assert services.list_memories(user=alice)["total"] == 2
    assert _upload(alice_client, data).status_code == 200
    assert services.list_memories(user=alice)["total"] == 2


def _file(*memories, **top) -> bytes:
    return json.dumps(
        {"format": "ikario-memories", "version": 1, "memories": list(memories), **top}
    ).encode()


@pytest.mark.parametrize(
    ("data", "said"),
    [
        (b"not json at all", "file: is not JSON (line 1, column 1)"),
        (b"\xff\xfe\x00", "file: is not UTF-8 text"),
        (b"[" * 100_000, "file: is not JSON"),
        (json.dumps({"memories": []}).encode(), "file: is not an Ikario memory export"),
        (_file(version=2), "version: must be 1"),
        (
            json.dumps({"format": "ikario-memories", "version": 1, "memories": {}}).encode(),
            "memories: must be a list",
        ),
        (
            _file({"content": "ok"}, {"content": "bad", "metadata": {"kind": "dream"}}),
            "memories[1].metadata.kind: must be one of",
        ),
        (_file({"content": ""}), "memories[0].content: must not be empty"),
        (_file({"content": 12}), "memories[0].content: must be a string"),
        (
            _file({"content": "x", "metadata": {"colour": "red"}}),
            "memories[0].metadata.colour: is not a known field",
        ),
        (
            _file({"content": "x", "metadata": {"date": "yesterday"}}),
            "memories[0].metadata.date: must be an ISO-8601 date",
        ),
        (
            _file({"content": "x", "metadata": {"tags": "music"}}),
            "memories[0].metadata.tags: must be a list of strings",
        ),
        (_file({"content": "x" * 20_001}), "memories[0].content: must be at most 20000 characters"),
        (
            b'{"format": "ikario-memories", "version": 1, "memories": [{"content": "\\ud800"}]}',
            "memories[0].content: contains characters that cannot be stored",
        ),
        (
            _file({"content": "x", "metadata": {"date": 1e400}}),
            "memories[0].metadata.date: must be an ISO-8601 date",
        ),
    ],
)
def test_it_refuses_a_bad_file_whole_saying_what_is_wrong(
    memory_server, alice, alice_client, data, said
):
    response = _upload(alice_client, data)
    assert response.status_code == 400
    assert said in response.content.decode()
    assert services.list_memories(user=alice)["total"] == 0


def test_it_refuses_a_file_over_the_size_limit(memory_server, alice, alice_client, settings):
    settings.MEMORY_IMPORT_MAX_BYTES = 1000
    response = _upload(alice_client, _file({"content": "x" * 2000}))
    assert response.status_code == 400 and "file: is larger than" in response.content.decode()


def test_it_keeps_only_known_history_fields(memory_server):
    records = transfer.read_export(
        _file(
            {
                "content": "x",
                "history": [{"content": "old", "evil": {"a": [[[[1]]]]}, "tags": ["t", 3]}],
            }
        )
    )
    assert records[0]["history"] == [{"content": "old", "tags": ["t"]}]
