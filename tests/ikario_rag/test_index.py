"""The vectors a server wrote or read are held for the searches that need them back, and
never outlive what Chroma holds: a delete, a dropped namespace and a reset forget them."""

from __future__ import annotations

import numpy as np
import pytest

from ikario_rag import index
from ikario_rag.index import VectorIndex


def unit(seed: int) -> np.ndarray:
    vector = np.random.default_rng(seed).standard_normal(384).astype(np.float32)
    return vector / np.linalg.norm(vector)


@pytest.fixture
def vectors(tmp_path, monkeypatch):
    found = VectorIndex(tmp_path / "chroma")
    reads: list[list[str]] = []
    collection = found.collection

    def counted(namespace):
        col = collection(namespace)
        get = col.get

        class Counted:
            def __getattr__(self, name):
                return getattr(col, name)

            def get(self, ids=None, **options):
                reads.append(list(ids or []))
                return get(ids=ids, **options)

        return Counted()

    monkeypatch.setattr(found, "collection", counted)
    yield found, reads
    found.close()


def test_it_gives_back_the_vectors_it_wrote_without_reading_chroma(vectors):
    found, reads = vectors
    written = np.stack([unit(1), unit(2)])
    found.upsert("user-1", ["a", "b"], written, [{"kind": "note"}, {"kind": "note"}])
    held = found.vectors("user-1", ["a", "b"])
    assert reads == []
    assert np.array_equal(held["a"], written[0]) and np.array_equal(held["b"], written[1])
    written[0] = 0.0  # the writer's array changing later changes nothing held
    assert np.array_equal(found.vectors("user-1", ["a"])["a"], unit(1))
    assert found.vectors("user-2", ["a"]) == {}  # another namespace: read, and not there
    assert reads == [["a"]]


def test_it_forgets_deleted_dropped_and_reset_vectors(vectors):
    found, reads = vectors
    found.upsert("user-1", ["a", "b"], np.stack([unit(1), unit(2)]), [{"k": 1}, {"k": 2}])
    found.upsert("user-2", ["c"], unit(3).reshape(1, -1), [{"k": 3}])
    found.delete("user-1", ["a"])
    assert set(found.vectors("user-1", ["a", "b"])) == {"b"}
    assert reads == [["a"]]
    found.drop("user-1")
    assert found.vectors("user-1", ["b"]) == {}
    assert np.allclose(found.vectors("user-2", ["c"])["c"], unit(3))
    assert reads == [["a"], ["b"]]
    found.reset()
    assert np.allclose(found.vectors("user-2", ["c"])["c"], unit(3), atol=1e-6)  # read again
    assert reads[-1] == ["c"]


def test_it_holds_at_most_held_vectors_and_reads_the_oldest_again(vectors, monkeypatch):
    found, reads = vectors
    monkeypatch.setattr(index, "HELD_VECTORS", 2)
    ids = ["a", "b", "c"]
    found.upsert("user-1", ids, np.stack([unit(n) for n in range(3)]), [{"k": n} for n in range(3)])
    held = found.vectors("user-1", ids)
    assert set(held) == set(ids)
    assert reads == [["a"]]  # "a" was the oldest, no longer held
