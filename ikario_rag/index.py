"""Vectors in Chroma: one collection per namespace, embeddings always supplied by us.

A metadata filter over one big collection is ~20x slower at 100k records than a collection
per namespace, hence the split. Chroma's default embedding function is never used (it would
try to download a model): collections are created with `embedding_function=None`.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ikario_rag import config

log = logging.getLogger("ikario_rag.index")

# Vectors this process wrote or read, kept for the searches that need them back (the
# results' vectors: a Chroma `get` of ten ids took ~1.1 ms of a ~12 ms search): 384 float32
# each, so 20,000 take ~31 MB. Not kept for a Chroma server, which other processes may write.
HELD_VECTORS = 20_000


def collection_name(namespace: str, owner: str = "") -> str:
    """Chroma names allow only [a-zA-Z0-9._-]; a hash keeps any namespace string valid.
    `owner`, an index's own id, keeps apart the collections of indexes that share a Chroma
    server: a user moved from one to another has a copy in each until the move ends."""
    key = f"{owner}\0{namespace}" if owner else namespace
    return "ns-" + hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]


def _client(directory: Path):
    config.quiet_libraries()
    import chromadb
    from chromadb.config import Settings

    settings = Settings(anonymized_telemetry=False)
    environment = config.settings()
    host = environment.chroma_host
    if host:
        port = environment.chroma_port
        log.info("using the Chroma server at %s:%s", host, port)
        return chromadb.HttpClient(host=host, port=port, settings=settings)
    return chromadb.PersistentClient(path=str(directory), settings=settings)


class VectorIndex:
    """Chroma collections, one per namespace, as seen from one server process.

    An operation that fails is tried once more on a fresh handle (a collection dropped
    under us comes back empty) and leaves `suspect` set: the maintenance thread then compares
    vectors with records and rebuilds what is missing (Memory.repair).
    """

    def __init__(self, directory: Path, owner: str = "") -> None:
        self.directory = directory
        self.remote = bool(config.settings().chroma_host)
        # On a shared Chroma server, this index's collections are named after it too.
        self.owner = owner if self.remote else ""
        self._client = None
        self._collections: dict[str, Any] = {}
        self._lock = threading.Lock()
        self.suspect = False
        self._held: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
        self._held_lock = threading.Lock()

    @property
    def client(self):
        """Created on first use: importing chromadb takes ~0.7 s, and `initialize` must not wait."""
        with self._lock:
            if self._client is None:
                self._client = _client(self.directory)
            return self._client

    def close(self) -> None:
        with self._lock:
            client, self._client = self._client, None
            self._collections.clear()
        with self._held_lock:
            self._held.clear()
        if client is not None and hasattr(client, "close"):
            try:
                client.close()
            except Exception:  # a client whose files are gone may fail to close: nothing to keep
                log.warning("closing the Chroma client failed", exc_info=True)

    def reset(self) -> None:
        """A new client on the directory (recreated if it was removed): every vector is gone."""
        self.close()
        self.suspect = False

    def lost(self) -> bool:
        """Whether the local vector directory was removed under the running server."""
        if self.remote or self._client is None:
            return False
        return not (self.directory / "chroma.sqlite3").exists()

    def name(self, namespace: str) -> str:
        return collection_name(namespace, self.owner)

    def collection(self, namespace: str):
        client = self.client
        with self._lock:
            found = self._collections.get(namespace)
            if found is None:
                found = client.get_or_create_collection(
                    self.name(namespace),
                    embedding_function=None,
                    configuration={"hnsw": {"space": "cosine", "ef_search": 100}},
                    metadata={"namespace": namespace[:500]},
                )
                self._collections[namespace] = found
            return found

    def _run(self, namespace: str, action: Callable[[Any], Any]) -> Any:
        try:
            return action(self.collection(namespace))
        except Exception:
            self.suspect = True
            with self._lock:
                self._collections.pop(namespace, None)
            log.warning("vector operation failed in one namespace; retrying once", exc_info=True)
            return action(self.collection(namespace))

    def upsert(
        self,
        namespace: str,
        ids: Sequence[str],
        vectors: np.ndarray,
        metadatas: Sequence[dict[str, Any]],
    ) -> None:
        if not ids:
            return

        def write(col) -> None:
            for start in range(0, len(ids), 4000):
                stop = start + 4000
                col.upsert(
                    ids=list(ids[start:stop]),
                    embeddings=vectors[start:stop],
                    metadatas=list(metadatas[start:stop]),
                )

        self._run(namespace, write)
        self._hold(namespace, ids, vectors)

    def delete(self, namespace: str, ids: Sequence[str]) -> None:
        if ids:
            self._forget_ids(namespace, ids)
            self._run(namespace, lambda col: col.delete(ids=list(ids)))
            self._forget_ids(namespace, ids)  # read back by a search meanwhile

    def query(
        self, namespace: str, vector: np.ndarray, k: int, where: dict[str, Any] | None = None
    ) -> list[tuple[str, float]]:
        """(id, cosine distance) nearest first."""
        return self.query_many(namespace, vector.reshape(1, -1), k, where)[0]

    def query_many(
        self, namespace: str, vectors: np.ndarray, k: int, where: dict[str, Any] | None = None
    ) -> list[list[tuple[str, float]]]:
        """For each row of `vectors`, (id, cosine distance) nearest first: one Chroma query for
        them all (two vectors: 1.5 ms, against 2.3 ms in two queries at 10k records)."""

        def nearest(col):
            try:
                # No count() first: it costs as much as the query; Chroma returns what it has.
                return col.query(
                    query_embeddings=vectors, n_results=k, where=where, include=["distances"]
                )
            except Exception:
                count = col.count()
                if count == 0:
                    return {"ids": [[]] * len(vectors), "distances": [[]] * len(vectors)}
                return col.query(
                    query_embeddings=vectors,
                    n_results=min(k, count),
                    where=where,
                    include=["distances"],
                )

        result = self._run(namespace, nearest)
        return [
            list(zip(ids, distances, strict=True))
            for ids, distances in zip(result["ids"], result["distances"], strict=True)
        ]

    def vectors(self, namespace: str, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """The vectors of `ids` that have one: those this process holds, the others read."""
        found: dict[str, np.ndarray] = {}
        with self._held_lock:
            for i in ids:
                vector = self._held.get((namespace, i))
                if vector is not None:
                    self._held.move_to_end((namespace, i))
                    found[i] = vector
        missing = [i for i in ids if i not in found]
        if missing:
            got = self._run(namespace, lambda col: col.get(ids=missing, include=["embeddings"]))
            read = {
                i: np.asarray(e, dtype=np.float32)
                for i, e in zip(got["ids"], got["embeddings"], strict=True)
            }
            self._hold(namespace, list(read), list(read.values()))
            found.update(read)
        return found

    def _hold(self, namespace: str, ids: Sequence[str], vectors: Sequence[np.ndarray]) -> None:
        if self.remote:
            return
        with self._held_lock:
            for memory_id, vector in zip(ids, vectors, strict=True):
                kept = np.array(vector, dtype=np.float32)  # a copy: the caller's may change
                kept.flags.writeable = False
                self._held[(namespace, memory_id)] = kept
                self._held.move_to_end((namespace, memory_id))
            while len(self._held) > HELD_VECTORS:
                self._held.popitem(last=False)

    def _forget_ids(self, namespace: str, ids: Sequence[str]) -> None:
        with self._held_lock:
            for memory_id in ids:
                self._held.pop((namespace, memory_id), None)

    def _forget(self, which: Callable[[tuple[str, str]], bool]) -> None:
        with self._held_lock:
            for key in [k for k in self._held if which(k)]:
                del self._held[key]

    def count(self, namespace: str) -> int:
        return self._run(namespace, lambda col: col.count())

    def ids(self, namespace: str) -> set[str]:
        return set(self._run(namespace, lambda col: col.get(include=[])["ids"]))

    def drop(self, namespace: str) -> None:
        client = self.client
        self._forget(lambda key: key[0] == namespace)
        with self._lock:
            self._collections.pop(namespace, None)
            try:
                client.delete_collection(self.name(namespace))
            except Exception:  # absent already: nothing to drop
                log.debug("no collection to drop for %r", namespace)

    def drop_others(self, namespaces: Sequence[str]) -> int:
        """Delete local collections of namespaces that have no record (never on a shared
        Chroma server, whose other collections may belong to another index)."""
        if self.remote:
            return 0
        keep = {self.name(ns) for ns in namespaces}
        dropped = 0
        for col in self.client.list_collections():
            name = col if isinstance(col, str) else col.name
            if name.startswith("ns-") and name not in keep:
                self.client.delete_collection(name)
                self._forget(lambda key, name=name: self.name(key[0]) == name)
                dropped += 1
        return dropped
